// The failover step (core/routing/failover.h), case by case, continued from
// routing_failover_test.cpp: the README's other bullets of "Failures: what is and is not
// guaranteed" (a dead master stalls its tier, writes and their truth, cancels, remote texts) and
// the rounds. The map: routing_failover_cases.h.
#include "routing_failover_cases.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace picoroute {
using namespace picoroute::testing;

// ---- "A dead master stalls its tier, in Picodata" ----------------------------------------------

TEST(Failures, ADeadMasterStallsItsTierButNotAStatementAtItsOwnersMaster) {
    Fixture f = c1_stopped();
    // 26.1.1+: the owner's master runs a statement on its own buckets without Lua.
    EXPECT_FALSE(routing::hold(scope(f), owner(f, {7, 8}), true).held);
    // Anything Lua dispatches waits for c1 in Picodata: held here, with the cause.
    for (const Target &t :
         {coordinator(kB1), owner(f, {7, 2000}), owner(f, {7}, ReadPref::Replica)}) {
        routing::Hold hold = routing::hold(scope(f), t, true);
        EXPECT_TRUE(hold.held) << t.address;
        EXPECT_EQ(hold.stalled, "rs3");
    }
    // 25.5: every statement waits.
    EXPECT_EQ(routing::hold(scope(f, ReadPref::Leader, "25.5.10"), owner(f, {7}), true).stalled,
              "rs3");
    // A global table is not dispatched.
    EXPECT_FALSE(routing::hold(scope(f), coordinator(kB1), false).held);
    // The version the map detects decides when the server gives none.
    EXPECT_EQ(routing::hold(scope(f, ReadPref::Leader, ""), owner(f, {7}), true).stalled, "rs3")
        << "no version detected: no local path";
}

TEST(Failures, AStatementADeadMasterWouldStallWaitsThenFailsUnsent) {
    Fixture f = c1_stopped();
    Failure stalled;
    stalled.kind = Failure::Kind::Stalled;
    stalled.stalled = "rs3";
    Target first = coordinator(kB1);
    Failover failover(true, true, true, first, stalled, kSince, kWaitMs);
    EXPECT_EQ(failover.next(scope(f), kSince + 1, nullptr).kind, Step::Kind::Wait);
    WriteLog log;
    Step step = failover.next(scope(f), kDeadline, &log);
    ASSERT_EQ(step.kind, Step::Kind::GiveUp);
    EXPECT_EQ(step.report.sqlstate, "08006");
    EXPECT_EQ(step.report.message,
              "picoroute: did not send the statement: replicaset rs3 of tier "
              "t has no online master");
    EXPECT_NE(step.report.detail.find("picoroute waited 10000 ms for the topology map to show a "
                                      "master (picoroute.failover_wait). The statement was not "
                                      "sent anywhere, so it was not applied. No row of this "
                                      "statement was committed on Picodata."),
              std::string::npos)
        << step.report.detail;
    // Once the map shows a master again, it is sent.
    Fixture back;
    Failover recovered(true, true, true, first, stalled, kSince, kWaitMs);
    EXPECT_EQ(recovered.next(scope(back), kSince + 1, nullptr).kind, Step::Kind::Send);
}

TEST(Failures, ADqlTimeoutOfAWriteLeavesItsOutcomeUnknown) {
    WriteLog log;
    routing::write_error_detail(
        log, kB1, false, error("sbroad: Error on replicaset 9f1c: dql timeout exceeded"), {});
    EXPECT_EQ(log.account(), "");  // told by that DETAIL already
    EXPECT_EQ(log.unknown().count(kB1), 1u);
}

// ---- the other bullets
// ---------------------------------------------------------------------------

TEST(Failures, EachRemoteStatementCommitsOnItsOwn) {
    WriteLog log;
    log.record(kA1, command(2));
    log.record(kB1, Answer{Answer::Status::Command, "", "", false, 0});  // TRUNCATE TABLE
    EXPECT_EQ(log.summary(),
              "2 rows of this statement were already committed on Picodata (10.0.0.1:4327: 2); "
              "they are not undone. A statement of it that reports no row count (TRUNCATE TABLE) "
              "was already applied on instance 10.0.0.3:4327; that is not undone.");
    log.record(kC1, error("x"));  // an error records nothing
    EXPECT_EQ(log.committed().count(kC1), 0u);
}

TEST(Failures, WhateverEndsAWriteItsErrorSaysWhatItWrote) {
    WriteLog log;
    log.record(kA1, command(2));
    log.record_unknown(kB1);
    EXPECT_EQ(log.account(),
              "2 rows of this statement were already committed on Picodata (10.0.0.1:4327: 2); "
              "they are not undone. Its outcome is unknown on instance 10.0.0.3:4327: it was sent "
              "there and may have been applied.");
    EXPECT_EQ(log.account(), "") << "said once";
}

TEST(Failures, ACancelLeavesRemoteStatementsRunningAndSaysSo) {
    std::vector<routing::Abandoned> abandoned(2);
    abandoned[0].address = kA1;
    abandoned[0].outcome = routing::Abandoned::Running;
    abandoned[1].address = kB1;
    abandoned[1].outcome = routing::Abandoned::Applied;
    abandoned[1].rows = 2;
    EXPECT_EQ(routing::interrupted_detail(nullptr, abandoned),
              "The remote statement may still run to its end on 10.0.0.1:4327: Picodata cannot "
              "cancel a statement.");
    WriteLog log;
    EXPECT_EQ(routing::interrupted_detail(&log, abandoned),
              "The statement may still run to its end on instance 10.0.0.1:4327 and be applied "
              "there: Picodata cannot cancel a statement. The statement was applied on instance "
              "10.0.0.3:4327 (2 rows) before the cancel request arrived. 2 rows of this statement "
              "were already committed on Picodata (10.0.0.3:4327: 2); they are not undone.");
    EXPECT_EQ(log.unknown().count(kA1), 1u);
    abandoned[0].outcome = routing::Abandoned::NotApplied;
    abandoned.pop_back();
    WriteLog none;
    EXPECT_EQ(routing::interrupted_detail(&none, abandoned),
              "The statement was cancelled on instance 10.0.0.1:4327 and not applied there. No row "
              "of this statement was committed on Picodata.");
    EXPECT_EQ(routing::interrupted_detail(nullptr, abandoned), "");
}

TEST(Failures, AnAnswerPicodataNeverSendsIsALostConnectionAndAReadIsTriedElsewhere) {
    Fixture f;
    Failover failover(false, false, true, coordinator(kB1),
                      failure(Failure::Kind::Lost, kB1,
                              "the server answered with a COPY state, which Picodata never does; "
                              "the connection was closed"),
                      kSince, kWaitMs);
    Step step = failover.next(scope(f), kSince + 1, nullptr);
    ASSERT_EQ(step.kind, Step::Kind::Send);
    EXPECT_NE(step.target.address, kB1) << "a keyless statement: another coordinator";
}

TEST(Failures, RemoteErrorsKeepPicodatasTextWithPostgresCodesBoundedToOneLine) {
    EXPECT_EQ(routing::sqlstate_for_remote_error(
                  "XX000", "sbroad: Duplicate key exists in unique index \"pk\" in space \"t\""),
              "23505");
    EXPECT_EQ(routing::sqlstate_for_remote_error("XX000", "something new"), "XX000");
    std::string huge(20000, 'x');
    EXPECT_LE(message_line(huge).size(), kRemoteTextMax);
    EXPECT_EQ(message_line("a\nb\tc \n"), "a b c");
}

// ---- the rounds --------------------------------------------------------------------------------

TEST(Failures, ASecondStatementToAnInstanceWaitsForTheFirstOnesAnswer) {
    size_t rounds = 0;
    EXPECT_EQ(routing::send_rounds({"a", "b", "a", "c", "a", "b"}, &rounds),
              (std::vector<size_t>{0, 0, 1, 0, 2, 1}));
    EXPECT_EQ(rounds, 3u);
    EXPECT_TRUE(routing::send_rounds({}, &rounds).empty());
    EXPECT_EQ(rounds, 0u);
}

TEST(Failures, HowAFailureReadsInTheErrorThatEndsIt) {
    Failure held;
    held.kind = Failure::Kind::Held;
    EXPECT_EQ(routing::first_failure(held),
              "picoroute: the topology map shows no online master for the statement's buckets");
    EXPECT_EQ(routing::first_failure(failure(Failure::Kind::Refused, kA1, "read-only\ninstance")),
              "picoroute: Picodata instance 10.0.0.1:4327 refused the statement before running it "
              "(read-only instance)");
    EXPECT_EQ(routing::could_not_run({}), "");
}

}  // namespace picoroute
