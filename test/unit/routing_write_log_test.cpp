#include "core/routing/write_log.h"

#include <gtest/gtest.h>

using picoroute::routing::WriteLog;

TEST(WriteLogTest, NothingSentSaysNothingCommittedAndHasNoAccount) {
    WriteLog log;
    EXPECT_FALSE(log.wrote());
    EXPECT_EQ(log.account(), "");
    EXPECT_EQ(log.summary(), "No row of this statement was committed on Picodata.");
}

TEST(WriteLogTest, RowsArePerInstanceAndAddUp) {
    WriteLog log;
    log.record_answer("b:2", true, 3);
    log.record_answer("a:1", true, 2);
    log.record_answer("a:1", true, 5);
    log.record_answer("c:3", true, 0);  // UPDATE 0: applied, nothing to say
    EXPECT_TRUE(log.wrote());
    EXPECT_EQ(log.summary(),
              "10 rows of this statement were already committed on Picodata (a:1: 7, b:2: 3); "
              "they are not undone.");
}

TEST(WriteLogTest, AnUnknownOutcomeIsNeverReportedAsNothingCommitted) {
    WriteLog log;
    log.record_unknown("a:1");
    EXPECT_TRUE(log.wrote());
    EXPECT_EQ(log.summary(), "");
    WriteLog again;
    again.record_unknown("b:2");
    again.record_unknown("a:1");
    EXPECT_EQ(again.account(),
              "Its outcome is unknown on instance a:1, b:2: it was sent there and may have been "
              "applied.");
}

TEST(WriteLogTest, TheAccountGivesRowsAndUnknownsOnce) {
    WriteLog log;
    log.record_answer("a:1", true, 4);
    log.record_unknown("b:2");
    EXPECT_FALSE(log.told());
    EXPECT_EQ(log.account(),
              "4 rows of this statement were already committed on Picodata (a:1: 4); they are not "
              "undone. Its outcome is unknown on instance b:2: it was sent there and may have been "
              "applied.");
    EXPECT_TRUE(log.told());
    EXPECT_EQ(log.account(), "");  // an error says it once
    log.record_answer("c:3", true, 1);
    EXPECT_FALSE(log.told());  // a new answer is news again
    EXPECT_NE(log.account().find("5 rows"), std::string::npos);
}

TEST(WriteLogTest, ASummaryTheRaisingSiteGaveCountsAsTold) {
    WriteLog log;
    log.record_answer("a:1", true, 2);
    (void)log.summary();
    EXPECT_TRUE(log.told());
    EXPECT_EQ(log.account(), "");
}

TEST(WriteLogTest, AStatementWithoutRowCountIsStillApplied) {
    WriteLog log;
    log.record_answer("a:1", false, 0);  // TRUNCATE TABLE
    EXPECT_TRUE(log.wrote());
    EXPECT_EQ(log.summary(),
              "A statement of it that reports no row count (TRUNCATE TABLE) was already applied "
              "on instance a:1; that is not undone.");
}
