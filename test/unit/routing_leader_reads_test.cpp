#include "core/routing/leader_reads.h"

#include <gtest/gtest.h>

using picoroute::routing::leader_switch;
using picoroute::routing::LeaderSwitch;
using picoroute::routing::names_other_than_leader;

namespace {

// Picodata's two refusals of a read that must be a leader read (answer.h, needs_leader_read).
constexpr const char *kPreemption =
    "sbroad: invalid option: read_preference must be set to 'leader' when sql_preemption is "
    "enabled";
constexpr const char *kUnlogged =
    "sbroad: invalid option: read_preference must be set to 'leader' when querying unlogged "
    "tables";

}  // namespace

TEST(LeaderReadsTest, OnlyAReplicaOrAnyPreferenceNamesOtherThanTheLeader) {
    EXPECT_TRUE(names_other_than_leader("replica"));
    EXPECT_TRUE(names_other_than_leader("any"));
    EXPECT_FALSE(names_other_than_leader("leader"));
    EXPECT_FALSE(names_other_than_leader(""));  // a version without the option
}

TEST(LeaderReadsTest, SqlPreemptionIsLearnedAndTheReadSwitchesToTheLeader) {
    LeaderSwitch s = leader_switch(kPreemption, "replica");
    EXPECT_TRUE(s.learn);
    EXPECT_TRUE(s.switch_);
    s = leader_switch(kPreemption, "any");
    EXPECT_TRUE(s.learn);
    EXPECT_TRUE(s.switch_);
}

TEST(LeaderReadsTest, AnUnloggedTableSwitchesTheReadWithoutLearningAnything) {
    LeaderSwitch s = leader_switch(kUnlogged, "replica");
    EXPECT_FALSE(s.learn);
    EXPECT_TRUE(s.switch_);
}

TEST(LeaderReadsTest, AConnectionThatNamedTheLeaderOrNothingCannotSayMore) {
    // Learned all the same: the cluster's setting holds for the session's later reads.
    LeaderSwitch s = leader_switch(kPreemption, "leader");
    EXPECT_TRUE(s.learn);
    EXPECT_FALSE(s.switch_);
    s = leader_switch(kPreemption, "");
    EXPECT_TRUE(s.learn);
    EXPECT_FALSE(s.switch_);
    s = leader_switch(kUnlogged, "leader");
    EXPECT_FALSE(s.learn);
    EXPECT_FALSE(s.switch_);
}

TEST(LeaderReadsTest, AMissingMessageLearnsNothing) {
    LeaderSwitch s = leader_switch("", "replica");
    EXPECT_FALSE(s.learn);
    EXPECT_TRUE(s.switch_);
}
