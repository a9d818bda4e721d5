#include "core/routing/stream.h"

#include <gtest/gtest.h>

#include <string>

using picoroute::routing::after_error_answer;
using picoroute::routing::after_lost_connection;
using picoroute::routing::Answer;
using picoroute::routing::Retry;
using picoroute::routing::StreamFallback;
using picoroute::routing::StreamRetry;

namespace {

Answer error(std::string message, std::string sqlstate = "XX000") {
    Answer a;
    a.status = Answer::Status::Error;
    a.message = std::move(message);
    a.sqlstate = std::move(sqlstate);
    return a;
}

Answer rows(uint64_t n) {
    Answer a;
    a.status = Answer::Status::Rows;
    a.rows = n;
    return a;
}

const Answer kLeaderRefusal = error(
    "sbroad: invalid option: read_preference must be set to 'leader' when sql_preemption is "
    "enabled");
const Answer kRefusal =
    error("Failed to get replicaset from bucket 17: Bucket 17 cannot be found.");
const Answer kPeerClosed =
    error("sbroad: Error on replicaset 9f1c: Peer closed");  // a read is sent again after it
const Answer kOwnError = error("sbroad: division by zero");

}  // namespace

TEST(StreamTest, ALostConnectionBeforeAnyRowRunsTheStatementAgainBuffered) {
    EXPECT_EQ(after_lost_connection(0), StreamFallback::Buffered);
}

TEST(StreamTest, ALostConnectionAfterARowFailsTheScan) {
    EXPECT_EQ(after_lost_connection(1), StreamFallback::LostMidScan);
    EXPECT_EQ(after_lost_connection(100000), StreamFallback::LostMidScan);
}

TEST(StreamTest, ALeaderReadRefusalGoesAgainAsALeaderRead) {
    StreamRetry r = after_error_answer(kLeaderRefusal, 0, Retry::Read);
    EXPECT_TRUE(r.as_leader);
    EXPECT_FALSE(r.again);  // not a refusal a plain retry cures
    EXPECT_TRUE(r.any());
    // A scatter over masters retries nothing else, but a leader read is not a retry of the same.
    r = after_error_answer(kLeaderRefusal, 0, Retry::Never);
    EXPECT_TRUE(r.as_leader);
    EXPECT_FALSE(r.again);
}

TEST(StreamTest, AnErrorAReadIsSentAgainAfterRunsItAgainBuffered) {
    for (const Answer &a : {kRefusal, kPeerClosed}) {
        StreamRetry r = after_error_answer(a, 0, Retry::Read);
        EXPECT_FALSE(r.as_leader) << a.message;
        EXPECT_TRUE(r.again) << a.message;
    }
}

TEST(StreamTest, AScatterOverMastersDoesNotRunAnErrorAgain) {
    for (const Answer &a : {kRefusal, kPeerClosed}) {
        StreamRetry r = after_error_answer(a, 0, Retry::Never);
        EXPECT_FALSE(r.any()) << a.message;
    }
}

TEST(StreamTest, AnErrorAfterARowIsTheScansAnswer) {
    for (const Answer &a : {kLeaderRefusal, kRefusal, kPeerClosed}) {
        EXPECT_FALSE(after_error_answer(a, 1, Retry::Read).any()) << a.message;
    }
}

TEST(StreamTest, TheStatementsOwnErrorIsTheScansAnswer) {
    EXPECT_FALSE(after_error_answer(kOwnError, 0, Retry::Read).any());
    EXPECT_FALSE(after_error_answer(error(""), 0, Retry::Read).any());
}

TEST(StreamTest, AnswersThatAreNotErrorsAreNeverRunAgain) {
    EXPECT_FALSE(after_error_answer(rows(0), 0, Retry::Read).any());
    EXPECT_FALSE(after_error_answer(rows(3), 0, Retry::Read).any());
}
