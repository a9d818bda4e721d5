#include "core/routing/answer.h"

#include <gtest/gtest.h>

using picoroute::routing::closed_at_startup;
using picoroute::routing::needs_leader_read;
using picoroute::routing::Outcome;
using picoroute::routing::outcome_of;
using picoroute::routing::read_retryable;
using picoroute::routing::refused_before_running;

TEST(AnswerTest, RefusalsBeforeRunningAreRecognisedWhereverTheyStand) {
    EXPECT_TRUE(refused_before_running(
        "sbroad: ProcLua: {\"message\":\"Error on replicaset 9f1c: retry is required: DML was "
        "sent to the replica during master switchover\"}"));
    EXPECT_TRUE(refused_before_running(
        "Can't modify data on a read-only instance - box.cfg.read_only is true"));
    EXPECT_TRUE(refused_before_running("instance is read-only: timed out"));
    EXPECT_TRUE(refused_before_running(
        "Failed to get replicaset from bucket 17: Bucket 17 cannot be found. Is rebalancing in "
        "progress?"));
    EXPECT_TRUE(refused_before_running("Failed to add a storage reference: timeout"));
    EXPECT_TRUE(refused_before_running("Failed to use a storage reference: expired"));
    EXPECT_TRUE(refused_before_running(
        "vshard storage is not configured (timed out waiting for proc_sharding): x"));
    EXPECT_TRUE(refused_before_running(
        "sbroad: invalid option: cannot satisfy \"forward = off\": buckets are not present on the "
        "current node, try using \"forward = ro_to_rw\" instead"));
    // The 26.1.1+ local fast path (with_admin_su / with_local_bucket_ref, src/sql/dispatch.rs),
    // behind the coordinator's "sbroad: "; "use" is wrapped twice there.
    EXPECT_TRUE(
        refused_before_running("sbroad: failed to add local bucket reference: Timeout exceeded"));
    EXPECT_TRUE(refused_before_running(
        "sbroad: failed to use local bucket reference: failed to use local bucket reference: "
        "expired"));
    EXPECT_TRUE(refused_before_running(
        "sbroad: failed to switch user for add local bucket reference: no such user"));
    // A storage's refusal reaches the client behind the coordinator's dispatch prefix.
    EXPECT_TRUE(refused_before_running(
        "sbroad: Error on replicaset 1e02f2a4-9c11-4a1e-8a0b-58cfa1b1f0d2: Failed to add a storage "
        "reference: box error: ProcLua: vshard error: Timeout exceeded (type: ClientError, code: "
        "78, name: TIMEOUT)"));
}

TEST(AnswerTest, AForwardRefusalNoInstanceCanSatisfyIsNotSentAgain) {
    // Picodata's other reasons (enforce_forward_option, 26.3.0): every instance refuses these.
    EXPECT_FALSE(refused_before_running(
        "sbroad: invalid option: cannot satisfy \"forward = off\": buckets span multiple nodes and "
        "are not present on the current node, try using \"forward = on\" instead"));
    EXPECT_FALSE(refused_before_running(
        "sbroad: invalid option: cannot satisfy \"forward = ro_to_rw\": buckets span multiple "
        "nodes, try using \"forward = on\" instead"));
}

TEST(AnswerTest, FailuresDuringOrAfterRunningAreNot) {
    // The outcome of these is unknown or the statement ran: never sent again.
    EXPECT_FALSE(refused_before_running("dql timeout exceeded"));
    EXPECT_FALSE(refused_before_running("Error on replicaset 9f1c: Peer closed"));
    EXPECT_FALSE(refused_before_running("Failed to execute '.proc_sql_execute': duplicate key"));
    EXPECT_FALSE(refused_before_running("Exceeded maximum number of rows (5000) in virtual table"));
    EXPECT_FALSE(refused_before_running(""));
    // Near misses of the texts above.
    EXPECT_FALSE(refused_before_running("cannot satisfy forward"));
    EXPECT_FALSE(refused_before_running("the instance is read-only"));
    // After running: the reference is removed once the statement ran.
    EXPECT_FALSE(refused_before_running("failed to delete local bucket reference: x"));
    EXPECT_FALSE(refused_before_running("sbroad: failed to remove local bucket reference: x"));
}

TEST(AnswerTest, AReadIsSentAgainOnlyWhenThatIsSafeAndUseful) {
    EXPECT_TRUE(read_retryable("sbroad: Failed to get replicaset from bucket 3: no route"));
    EXPECT_TRUE(read_retryable("sbroad: failed to add local bucket reference: timeout"));
    // The coordinator lost its connection to a replicaset (a switchover): a read changes nothing.
    EXPECT_TRUE(read_retryable("sbroad: Error on replicaset 9f1c: Peer closed"));
    EXPECT_TRUE(read_retryable("Error on replicaset 9f1c: Connection is not established"));
    // The storage's own error behind the same prefix fails again: not retried.
    EXPECT_FALSE(read_retryable(
        "sbroad: Error on replicaset 9f1c: Reached a limit on max executed vdbe opcodes"));
    EXPECT_FALSE(read_retryable("sbroad: Error on replicaset 9f1c: duplicate key Peer closed"));
    // The deadline is spent: another try would wait as long again.
    EXPECT_FALSE(read_retryable("sbroad: dql timeout exceeded"));
    EXPECT_FALSE(read_retryable("Exceeded maximum number of rows (5000) in virtual table"));
    EXPECT_FALSE(read_retryable("could not connect to server \"x\""));
    EXPECT_FALSE(read_retryable(""));
}

TEST(AnswerTest, ALeaderOnlyRefusalIsRecognisedWithItsPrefix) {
    EXPECT_TRUE(needs_leader_read(
        "sbroad: invalid option: read_preference must be set to 'leader' when querying unlogged "
        "tables"));
    EXPECT_TRUE(needs_leader_read(
        "sbroad: invalid option: read_preference must be set to 'leader' when sql_preemption is "
        "enabled"));
    EXPECT_FALSE(needs_leader_read(
        "sbroad: invalid OptionSpec: read_preference option is supported only for DQL queries"));
    EXPECT_FALSE(needs_leader_read("read_preference must be set"));
    // Not a generic refusal: sent again as it was, it would be refused again.
    EXPECT_FALSE(refused_before_running(
        "sbroad: invalid option: read_preference must be set to 'leader' when querying unlogged "
        "tables"));
}

TEST(AnswerTest, TheOutcomeOfAWriteIsToldOnlyWhereItIsKnown) {
    EXPECT_EQ(outcome_of("XX000", "sbroad: failed to add local bucket reference: timeout"),
              Outcome::NotRun);
    EXPECT_EQ(outcome_of("XX000",
                         "Error on replicaset 9f1c: retry is required: DML was sent to "
                         "the replica during master switchover"),
              Outcome::NotRun);
    EXPECT_EQ(outcome_of("XX000", "rule parsing error: expected Expr"), Outcome::NotRun);
    EXPECT_EQ(outcome_of("22P02", "failed to decode parameter"), Outcome::NotRun);
    EXPECT_EQ(outcome_of("42999", "prepared statement s1 has been invalidated"), Outcome::NotRun);
    // Sent on and not answered, or answered after it ran: it may have been applied.
    EXPECT_EQ(outcome_of("XX000", "sbroad: dql timeout exceeded"), Outcome::Unknown);
    EXPECT_EQ(outcome_of("XX000", "sbroad: Error on replicaset 9f1c: Peer closed"),
              Outcome::Unknown);
    EXPECT_EQ(outcome_of("XX000", "Error on replicaset 9f1c: Duplicate key exists"),
              Outcome::Unknown);
    // The statement's own error: nothing is claimed.
    EXPECT_EQ(outcome_of("XX000", "duplicate key value violates unique constraint"),
              Outcome::Failed);
    EXPECT_EQ(outcome_of("XX000", "could not connect to server \"picoemu_default_2\""),
              Outcome::Failed);
    EXPECT_EQ(outcome_of("", ""), Outcome::Failed);
}

TEST(AnswerTest, AConnectionClosedAtStartupIsToldApart) {
    // libpq's message when Picodata closes the connection unanswered (bad startup options).
    EXPECT_TRUE(closed_at_startup(
        "connection to server at \"127.0.0.1\", port 4327 failed: server closed the connection "
        "unexpectedly\n\tThis probably means the server terminated abnormally\n\tbefore or while "
        "processing the request."));
    // An instance that does not listen, a timeout, a refused login are other failures.
    EXPECT_FALSE(closed_at_startup(
        "connection to server at \"127.0.0.1\", port 4327 failed: Connection refused\n\tIs the "
        "server running on that host and accepting TCP/IP connections?"));
    EXPECT_FALSE(
        closed_at_startup("timeout after 5 s (picoroute.connect_timeout) while connecting"));
    EXPECT_FALSE(closed_at_startup(
        "connection to server at \"127.0.0.1\", port 4327 failed: FATAL:  28P01: password "
        "authentication failed for user \"u\""));
}

// The texts as the emulator writes them (Picodata's, with the coordinator's "sbroad: " in front
// and tarantool's "box error: ProcLua: " inside a storage's answer): the rules read them as they
// read the bare texts.
TEST(AnswerTest, PrefixedTextsAreJudgedAsTheBareOnes) {
    const char *storage_ref =
        "sbroad: Failed to add a storage reference: box error: ProcLua: vshard error: Timeout "
        "exceeded (type: ClientError, code: 78, name: TIMEOUT)";
    EXPECT_TRUE(refused_before_running(storage_ref));
    EXPECT_TRUE(read_retryable(storage_ref));
    EXPECT_EQ(outcome_of("XX000", storage_ref), Outcome::NotRun);
    for (const char *text :
         {"sbroad: retry is required: DML was sent to the replica during master switchover",
          "sbroad: Can't modify data on a read-only instance - box.cfg.read_only is true"}) {
        EXPECT_TRUE(refused_before_running(text)) << text;
        EXPECT_EQ(outcome_of("XX000", text), Outcome::NotRun) << text;
    }
    const char *unlogged =
        "sbroad: invalid option: read_preference must be set to 'leader' when querying unlogged "
        "tables";
    EXPECT_TRUE(needs_leader_read(unlogged));
    EXPECT_EQ(outcome_of("XX000", unlogged), Outcome::NotRun);
    EXPECT_EQ(outcome_of("XX000", "sbroad: rule parsing error: expected Expr"), Outcome::NotRun);
    // The statement's own errors, prefixed: not sent again, nothing claimed.
    const char *rows = "sbroad: Exceeded maximum number of rows (5000) in virtual table: 5001";
    EXPECT_FALSE(read_retryable(rows));
    EXPECT_EQ(outcome_of("XX000", rows), Outcome::Failed);
    const char *vdbe = "sbroad: Reached a limit on max executed vdbe opcodes. Limit: 45000";
    EXPECT_FALSE(read_retryable(vdbe));
    EXPECT_EQ(outcome_of("XX000", vdbe), Outcome::Failed);
}

TEST(AnswerTest, DqlTimeoutExceededLeavesTheOutcomeUnknown) {
    // Picodata's text through pgproto (dispatch.lua's error, wrapped by Rust), as the emulator
    // gives it: its Lua dispatch waited for every master of the tier until the statement's
    // deadline, then sent the statement to the connected ones (future_wait in src/sql/dispatch.lua,
    // 25.5.1 to 26.3.0).
    EXPECT_EQ(outcome_of("XX000",
                         "sbroad: box error: ProcLua: {\"type\":\"ClientError\",\"code\":32,"
                         "\"message\":\"Error on replicaset 9f1c: dql timeout exceeded\"}"),
              Outcome::Unknown);
    EXPECT_EQ(outcome_of("XX000", "Failed to add a storage reference: timeout"), Outcome::NotRun);
    EXPECT_EQ(outcome_of("XX000", "duplicate key value violates unique constraint"),
              Outcome::Failed);
}

// The same questions asked of an answer as the remote layer hands it over.
TEST(AnswerTest, AnAnswerIsJudgedByItsErrorOnly) {
    using picoroute::routing::Answer;
    Answer rows;
    rows.status = Answer::Status::Rows;
    rows.message = "Failed to get replicaset from bucket 7";  // not an error: ignored
    EXPECT_FALSE(picoroute::routing::resendable(rows, true));
    EXPECT_EQ(picoroute::routing::outcome(rows), Outcome::Failed);
    Answer refusal;
    refusal.status = Answer::Status::Error;
    refusal.sqlstate = "XX000";
    refusal.message = "Failed to get replicaset from bucket 7";
    EXPECT_TRUE(picoroute::routing::resendable(refusal, false));
    EXPECT_TRUE(picoroute::routing::proven_not_run(refusal, false));
    EXPECT_FALSE(picoroute::routing::proven_not_run(refusal, true)) << "spans several replicasets";
    Answer lost = refusal;
    lost.message = "Error on replicaset r: Peer closed";
    EXPECT_TRUE(picoroute::routing::resendable(lost, true));
    EXPECT_FALSE(picoroute::routing::resendable(lost, false));
    Answer leader = refusal;
    leader.message =
        "sbroad: invalid option: read_preference must be set to 'leader' when "
        "sql_preemption is enabled";
    EXPECT_TRUE(picoroute::routing::leader_read_refusal(leader));
    Answer bare;
    bare.status = Answer::Status::Error;
    bare.sqlstate = "22P02";  // no primary message: nothing is proven
    EXPECT_EQ(picoroute::routing::outcome(bare), Outcome::Failed);
}
