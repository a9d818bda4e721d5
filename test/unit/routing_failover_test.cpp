// The failover step (core/routing/failover.h), case by case: one test per guarantee of the README's
// "Failures: what is and is not guaranteed" (its bullets and the list of what is sent again), each
// named after it; this file: "A failover is a pause, not an error, for what can be sent again
// safely" and its list (routing_failover_guarantees_test.cpp: the other bullets).
// The map: routing_failover_cases.h.
#include "routing_failover_cases.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace picoroute {
using namespace picoroute::testing;

// ---- "A failover is a pause, not an error, for what can be sent again safely" -------------------

TEST(Failures, AnUnreachableInstanceIsAPauseTheStatementFollowsTheRefreshedMap) {
    Fixture before;
    Target first = owner(before, {7});
    Failover failover(false, false, true, first, failure(Failure::Kind::Unsent, kA1), kSince,
                      kWaitMs);
    Fixture after = r1_switched();
    Step step = failover.next(scope(after), kSince + 500000, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::Send);
    EXPECT_EQ(step.target.address, kA2) << "the new master of the bucket's replicaset";
    EXPECT_EQ(step.target.role, Role::Master);
    EXPECT_EQ(step.target.sent, Sent::RoutedByKey) << "it keeps the kind it was routed as";
    EXPECT_TRUE(step.refusals);
    EXPECT_EQ(failover.attempted(answered(), kSince + 600000, nullptr).kind, Step::Kind::Done);
}

TEST(Failures, AMasterBackAfterARestartIsAskedAgain) {
    Fixture f;
    Failover failover(false, false, true, owner(f, {7}), failure(Failure::Kind::Unsent, kA1),
                      kSince, kWaitMs);
    Step step = failover.next(scope(f), kSince + 1, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::Send);
    EXPECT_EQ(step.target.address, kA1);
}

TEST(Failures, WhileTheOwnerHasNoOnlineMasterTheStatementWaitsForTheNewOne) {
    // A coordinator would ask the stopped master too: the statement waits for the switchover.
    Fixture f = a1_stopped();
    Failover failover(false, false, true, owner(Fixture(), {7}),
                      failure(Failure::Kind::Unsent, kA1), kSince, kWaitMs);
    Step step = failover.next(scope(f), kSince + 1, nullptr);
    EXPECT_EQ(step.kind, Step::Kind::Wait);
    EXPECT_EQ(step.until, kDeadline);
    // ... and a statement the map sends to a coordinator for those buckets is held, not sent.
    routing::Hold hold = routing::hold(scope(f), coordinator(kB1, {7}), true);
    EXPECT_TRUE(hold.held);
    EXPECT_EQ(hold.stalled, "");
}

TEST(Failures, AfterFailoverWaitItIsSentOnceMoreThroughACoordinator) {
    // The map still puts the buckets on the instance that failed: a coordinator, once.
    Fixture f;
    Target first = owner(f, {7});
    Failover failover(false, false, true, first, failure(Failure::Kind::Unsent, kA1), kSince,
                      kWaitMs);
    Step step = failover.next(scope(f), kDeadline, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::Send);
    EXPECT_EQ(step.target.role, Role::Coordinator);
    EXPECT_EQ(step.target.address, kB1) << "not the instance that failed";
    EXPECT_EQ(step.target.buckets, first.buckets);
    EXPECT_FALSE(step.refusals) << "the last attempt's answer is the answer";
}

TEST(Failures, AfterFailoverWaitAStatementADeadMasterWouldStallIsNotSentAtAll) {
    // The map still shows r1's master offline: a coordinator would wait for it in Picodata.
    Fixture f = a1_stopped();
    Failover failover(false, false, true, owner(Fixture(), {7}),
                      failure(Failure::Kind::Unsent, kA1), kSince, kWaitMs);
    Step step = failover.next(scope(f), kDeadline, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::GiveUp);
    EXPECT_EQ(step.report.message,
              "picoroute: did not send the statement: replicaset rs1 of tier t "
              "has no online master");
}

TEST(Failures, TheErrorThatEndsTheRetriesSaysHowLongPicorouteTried) {
    Fixture f;
    Failover failover(false, false, true, owner(f, {7}), failure(Failure::Kind::Unsent, kA1),
                      kSince, kWaitMs);
    Step step = failover.next(scope(f), kDeadline, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::Send);
    step = failover.attempted(failed(Attempt::Kind::Unsent, kB1, "timeout\nexpired"),
                              kDeadline + 250000, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::GiveUp);
    EXPECT_EQ(step.report.sqlstate, "08006");
    EXPECT_EQ(step.report.message,
              "picoroute: could not reach Picodata instance 10.0.0.1:4327 (connection refused); on "
              "retry, Picodata instance 10.0.0.3:4327 could not be reached either (timeout "
              "expired)");
    EXPECT_EQ(step.report.detail,
              "First target: 10.0.0.1:4327 (master a1 of replicaset rs1). picoroute sent it again "
              "for 10250 ms, following the topology map (picoroute.failover_wait).");
    EXPECT_EQ(step.report.hint, "Check picoroute_instances and picoroute_status.");
}

TEST(Failures, ARemoteErrorAfterRetriesSaysHowLongAndWhatTheWriteLeft) {
    Fixture f;
    Failover failover(true, false, true, owner(f, {7}), failure(Failure::Kind::Unsent, kA1), kSince,
                      kWaitMs);
    ASSERT_EQ(failover.next(scope(f), kSince + 1, nullptr).kind, Step::Kind::Send);
    Answer duplicate = error("Duplicate key exists in unique index \"pk\"");
    ASSERT_EQ(failover.attempted(answered(duplicate), kSince + 2000, nullptr).kind,
              Step::Kind::Done);
    WriteLog log;
    log.record(kB1, command(2));
    EXPECT_EQ(failover.error_detail(kSince + 2000, &log, duplicate),
              "picoroute sent it again for 2 ms, following the topology map "
              "(picoroute.failover_wait). The statement failed on instance 10.0.0.1:4327. 2 rows "
              "of this statement were already committed on Picodata (10.0.0.3:4327: 2); they are "
              "not undone.");
    EXPECT_EQ(log.unknown().count(kA1), 1u) << "a duplicate key does not prove what it applied";
    EXPECT_EQ(failover.error_detail(kSince + 2000, nullptr, duplicate),
              "picoroute sent it again for 2 ms, following the topology map "
              "(picoroute.failover_wait).");
}

TEST(Failures, AReadIsAlwaysSentAgain) {
    Fixture f;
    Target read = owner(f, {7, 2000});  // buckets of two replicasets: a read still is
    read.role = Role::Coordinator;
    auto refused = routing::refusal(scope(f), read, error("Failed to get replicaset from bucket 7"),
                                    Retry::Read, false);
    ASSERT_TRUE(refused.has_value());
    EXPECT_EQ(refused->kind, Failure::Kind::Refused);
    EXPECT_EQ(routing::final_failure(failure(Failure::Kind::Lost, kA1), Retry::Read, read, nullptr),
              std::nullopt);
}

TEST(Failures, AReadWhoseAnswerWasLostIsAskedOnceMoreThenACoordinator) {
    Fixture f;
    Failover failover(false, false, true, owner(f, {7}), failure(Failure::Kind::Lost, kA1), kSince,
                      kWaitMs);
    Step step = failover.next(scope(f), kSince + 1, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::Send);
    EXPECT_EQ(step.target.address, kA1) << "once more where the map puts it";
    step = failover.attempted(failed(Attempt::Kind::Lost, kA1, "server closed the connection"),
                              kSince + 2, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::Next) << "no pause after a lost answer";
    step = failover.next(scope(f), kSince + 3, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::Send);
    EXPECT_EQ(step.target.role, Role::Coordinator);
    EXPECT_NE(step.target.address, kA1);
    EXPECT_EQ(failover.attempted(answered(), kSince + 4, nullptr).kind, Step::Kind::Done);
}

TEST(Failures, AWriteThatWasNeverSentIsSentAgain) {
    Fixture f = r1_switched();
    Target first = owner(Fixture(), {7});
    Failure unsent = failure(Failure::Kind::Unsent, kA1);
    EXPECT_EQ(routing::final_failure(unsent, Retry::Write, first, nullptr), std::nullopt);
    Failover failover(true, false, true, first, unsent, kSince, kWaitMs);
    Step step = failover.next(scope(f), kSince + 1, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::Send);
    EXPECT_EQ(step.target.address, kA2);
    EXPECT_TRUE(step.refusals) << "one replicaset: a refusal is sent again";
}

TEST(Failures, AWriteRefusedBeforeRunningOnItsOneReplicasetIsSentAgain) {
    Fixture f;
    for (const char *text : {"retry is required: DML was sent to the replica during master "
                             "switchover",
                             "Can't modify data on a read-only instance",
                             "sbroad: failed to add local bucket reference: x"}) {
        auto refused =
            routing::refusal(scope(f), owner(f, {7, 8}), error(text), Retry::Write, true);
        ASSERT_TRUE(refused.has_value()) << text;
        EXPECT_EQ(refused->address, kA1);
        EXPECT_EQ(refused->message, text);
    }
    // In the failover, a refusal of the new target is sent again too (until the last attempt).
    Failover failover(true, false, true, owner(f, {7}), failure(Failure::Kind::Unsent, kA1), kSince,
                      kWaitMs);
    ASSERT_EQ(failover.next(scope(f), kSince + 1, nullptr).kind, Step::Kind::Send);
    Step step = failover.attempted(answered(error("Can't modify data on a read-only instance")),
                                   kSince + 2, nullptr);
    EXPECT_EQ(step.kind, Step::Kind::Wait);
}

TEST(Failures, AWriteThatSpansSeveralReplicasetsIsNotSentAgainAfterARefusal) {
    // The others may have applied it before one refused it.
    Fixture f;
    Target spanning = owner(f, {7, 2000});
    spanning.role = Role::Coordinator;
    EXPECT_EQ(
        routing::refusal(scope(f), spanning, error("Can't modify data on a read-only instance"),
                         Retry::Write, true),
        std::nullopt);
    Failover failover(true, true, true, spanning, failure(Failure::Kind::Unsent, kB1), kSince,
                      kWaitMs);
    Step step = failover.next(scope(f), kSince + 1, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::Send);
    EXPECT_FALSE(step.refusals);
    EXPECT_EQ(failover
                  .attempted(answered(error("Can't modify data on a read-only instance")),
                             kSince + 2, nullptr)
                  .kind,
              Step::Kind::Done)
        << "the refusal is the answer";
}

TEST(Failures, AStatementRefusedUnderForwardOffIsSentAgain) {
    Fixture f;
    const std::string stale =
        "sbroad: cannot satisfy \"forward = off\": buckets are not present "
        "on the current node, try using \"forward = on\" instead";
    EXPECT_TRUE(routing::refusal(scope(f), owner(f, {7}), error(stale), Retry::Write, true));
    // Buckets of several replicasets: no instance accepts it under that option.
    const std::string spread =
        "sbroad: cannot satisfy \"forward = off\": buckets are on several "
        "nodes, try using \"forward = on\" instead";
    EXPECT_FALSE(routing::refusal(scope(f), owner(f, {7}), error(spread), Retry::Read, false));
}

TEST(Failures, AWriteLostAfterItWasSentIsNeverSentAgain) {
    Fixture f;
    Target first = owner(f, {7});
    WriteLog log;
    log.record(kB1, command(3));
    auto report =
        routing::final_failure(failure(Failure::Kind::Lost, kA1, "server closed the connection"),
                               Retry::Write, first, &log);
    ASSERT_TRUE(report.has_value());
    EXPECT_EQ(report->sqlstate, "40003");
    EXPECT_EQ(report->message,
              "picoroute: lost the connection to Picodata instance 10.0.0.1:4327 "
              "while it ran a write: server closed the connection");
    EXPECT_EQ(report->detail,
              "Target: 10.0.0.1:4327 (master a1 of replicaset rs1). The statement may have been "
              "applied on instance 10.0.0.1:4327; it was not sent again. 3 rows of this statement "
              "were already committed on Picodata (10.0.0.3:4327: 3); they are not undone.");
    EXPECT_EQ(log.unknown().count(kA1), 1u);
    // The same when it is lost in the failover.
    WriteLog log2;
    Failover failover(true, false, true, first, failure(Failure::Kind::Unsent, kA1), kSince,
                      kWaitMs);
    ASSERT_EQ(failover.next(scope(f), kSince + 1, &log2).kind, Step::Kind::Send);
    Step step = failover.attempted(failed(Attempt::Kind::Lost, kA1, "EOF"), kSince + 2, &log2);
    ASSERT_EQ(step.kind, Step::Kind::GiveUp);
    EXPECT_EQ(step.report.sqlstate, "40003");
    EXPECT_EQ(log2.unknown().count(kA1), 1u);
}

TEST(Failures, TheDetailOfAWriteErrorSaysOnlyWhatTheErrorProves) {
    WriteLog log;
    EXPECT_EQ(routing::write_error_detail(log, kA1, false,
                                          error("Failed to get replicaset from bucket 7"), {}),
              "The statement failed on instance 10.0.0.1:4327 before running and was not applied "
              "there. No row of this statement was committed on Picodata.");
    WriteLog unknown;
    EXPECT_EQ(routing::write_error_detail(
                  unknown, kA1, false,
                  error("sbroad: Error on replicaset 9f1c: dql timeout exceeded"), {}),
              "The statement failed on instance 10.0.0.1:4327 after it was sent on to a storage: "
              "it may have been applied there. ");
    EXPECT_EQ(unknown.unknown().count(kA1), 1u);
    WriteLog own;
    EXPECT_EQ(routing::write_error_detail(own, kA1, false,
                                          error("Duplicate key exists in unique index"), {}),
              "The statement failed on instance 10.0.0.1:4327. ")
        << "nothing either way for the statement's own error";
    EXPECT_EQ(own.unknown().count(kA1), 1u);
}

TEST(Failures, MultiRowWritesAreNotAtomicAcrossOwners) {
    WriteLog log;
    log.record(kB1, command(3));
    std::vector<Failure> parts = {failure(Failure::Kind::Lost, kC1),
                                  failure(Failure::Kind::Refused, kA2, "read-only")};
    Failure held;
    held.kind = Failure::Kind::Held;
    Failure stalled;
    stalled.kind = Failure::Kind::Stalled;
    stalled.stalled = "rs3";
    parts.push_back(held);
    parts.push_back(stalled);
    EXPECT_EQ(routing::write_error_detail(log, kA1, false, error("Duplicate key exists"), parts),
              "The statement failed on instance 10.0.0.1:4327. 3 rows of this statement were "
              "already committed on Picodata (10.0.0.3:4327: 3); they are not undone. Instances "
              "that could not run it: 10.0.0.4:4327 (may have applied it) 10.0.0.2:4327 (refused "
              "it before running it) (a part not sent: its buckets have no online master) (a "
              "part not sent: replicaset rs3 of its tier has no online master)");
    // A statement one instance runs over several replicasets never claims nothing was applied.
    WriteLog spans;
    EXPECT_EQ(routing::write_error_detail(spans, kA1, true,
                                          error("Failed to get replicaset from bucket 7"), {}),
              "The statement failed on instance 10.0.0.1:4327. It spans several replicasets, and "
              "Picodata does not apply such a statement atomically: it may have been applied on "
              "some of them. ");
}

TEST(Failures, AReadIsSentAgainAfterACoordinatorLostItsReplicasetNotAfterAStorageError) {
    Fixture f;
    Target t = coordinator(kB1);
    EXPECT_TRUE(routing::refusal(
        scope(f), t, error("sbroad: Error on replicaset 9f1c: Peer closed"), Retry::Read, false));
    EXPECT_TRUE(routing::refusal(scope(f), t,
                                 error("Error on replicaset 9f1c: Connection is not established"),
                                 Retry::Read, false));
    EXPECT_FALSE(routing::refusal(scope(f), t, error("Error on replicaset 9f1c: Duplicate key"),
                                  Retry::Read, false));
    EXPECT_FALSE(routing::refusal(
        scope(f), t, error("Error on replicaset 9f1c: dql timeout exceeded"), Retry::Read, false))
        << "its deadline is spent";
    EXPECT_FALSE(routing::refusal(scope(f), owner(f, {7}),
                                  error("sbroad: Error on replicaset 9f1c: Peer closed"),
                                  Retry::Write, true))
        << "not a write";
}

TEST(Failures, ABucketTheMapDoesNotKnowGoesToACoordinator) {
    Fixture f({bucket_delete("t", 1501)});
    Target first = coordinator(kB1, {2000});
    Failover failover(false, false, true, first, failure(Failure::Kind::Unsent, kB1), kSince,
                      kWaitMs);
    Step step = failover.next(scope(f), kSince + 1, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::Send);
    EXPECT_EQ(step.target.role, Role::Coordinator);
    EXPECT_NE(step.target.address, kB1);
    EXPECT_EQ(step.target.buckets, std::vector<uint32_t>{2000});
    EXPECT_FALSE(routing::hold(scope(f), first, true).held) << "nothing to wait for";
}

TEST(Failures, AScatterOverMastersNeverReturnsAPartialResultAndIsNotSentAgain) {
    Fixture f;
    routing::MastersPlan plan = routing::master_targets(f.view, f.t);
    ASSERT_EQ(plan.status, routing::MastersPlan::Status::Ok);
    auto report = routing::final_failure(failure(Failure::Kind::Unsent, kB1), Retry::Never,
                                         plan.targets[1], nullptr);
    ASSERT_TRUE(report.has_value());
    EXPECT_EQ(report->sqlstate, "08006");
    EXPECT_EQ(report->message,
              "picoroute: could not reach Picodata instance 10.0.0.3:4327: connection refused");
    EXPECT_EQ(report->hint, routing::kMastersScatterHint);
    EXPECT_FALSE(routing::refusal(scope(f), plan.targets[0],
                                  error("Failed to get replicaset from bucket 7"), Retry::Never,
                                  false));
}

TEST(Failures, AFailedLoginIsNotATopologyProblem) {
    EXPECT_TRUE(routing::startup_refusal_is_final("28P01"));
    EXPECT_TRUE(routing::startup_refusal_is_final("28000"));
    EXPECT_FALSE(routing::startup_refusal_is_final("57P03"));
}

TEST(Failures, NoOtherInstanceCanTakeTheStatement) {
    Fixture f({instance("a1", std::string("r1"), std::string("Offline")),
               instance("a2", std::string("r1"), std::string("Offline")),
               instance("b1", std::string("r2"), std::string("Offline")),
               instance("c1", std::string("r3"), std::string("Offline")),
               instance("d1", std::string("r4"), std::string("Offline")),
               instance("d2", std::string("r4"), std::string("Offline"))});
    Failover failover(false, false, true, owner(Fixture(), {2000}),
                      failure(Failure::Kind::Unsent, kB1), kSince, kWaitMs);
    Step step = failover.next(scope(f), kDeadline, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::GiveUp);
    EXPECT_EQ(step.report.sqlstate, "08006");
    EXPECT_EQ(step.report.message,
              "picoroute: could not reach Picodata instance 10.0.0.3:4327 (connection refused), "
              "and no other instance can take the statement");
    EXPECT_EQ(step.report.detail, "Unreachable: 10.0.0.3:4327");
}

}  // namespace picoroute
