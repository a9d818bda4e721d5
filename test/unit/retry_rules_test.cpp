#include "core/retry_rules.h"

#include <gtest/gtest.h>

using picoroute::retry::closed_at_startup;
using picoroute::retry::read_retryable;
using picoroute::retry::refused_before_running;

TEST(RetryRulesTest, RefusalsBeforeRunningAreRecognisedWhereverTheyStand) {
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
}

TEST(RetryRulesTest, AForwardRefusalNoInstanceCanSatisfyIsNotSentAgain) {
    // Picodata's other reasons (enforce_forward_option, 26.3.0): every instance refuses these.
    EXPECT_FALSE(refused_before_running(
        "sbroad: invalid option: cannot satisfy \"forward = off\": buckets span multiple nodes and "
        "are not present on the current node, try using \"forward = on\" instead"));
    EXPECT_FALSE(refused_before_running(
        "sbroad: invalid option: cannot satisfy \"forward = ro_to_rw\": buckets span multiple "
        "nodes, try using \"forward = on\" instead"));
}

TEST(RetryRulesTest, FailuresDuringOrAfterRunningAreNot) {
    // The outcome of these is unknown or the statement ran: never sent again.
    EXPECT_FALSE(refused_before_running("dql timeout exceeded"));
    EXPECT_FALSE(refused_before_running("Error on replicaset 9f1c: Peer closed"));
    EXPECT_FALSE(refused_before_running("Failed to execute '.proc_sql_execute': duplicate key"));
    EXPECT_FALSE(refused_before_running("Exceeded maximum number of rows (5000) in virtual table"));
    EXPECT_FALSE(refused_before_running(""));
    // Near misses of the texts above.
    EXPECT_FALSE(refused_before_running("cannot satisfy forward"));
    EXPECT_FALSE(refused_before_running("the instance is read-only"));
}

TEST(RetryRulesTest, AReadIsSentAgainAfterAConnectionFailureOnTheWay) {
    EXPECT_TRUE(read_retryable("08001", "could not connect to server \"x\""));
    EXPECT_TRUE(read_retryable("08006", "server closed the connection unexpectedly"));
    EXPECT_TRUE(read_retryable("XX000", "Failed to get replicaset from bucket 3: no route"));
    EXPECT_FALSE(read_retryable("42601", "syntax error at or near \"x\""));
    EXPECT_FALSE(
        read_retryable("XX000", "Exceeded maximum number of rows (5000) in virtual table"));
    EXPECT_FALSE(read_retryable("", ""));
}

TEST(RetryRulesTest, AConnectionClosedAtStartupIsToldApart) {
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
