#include "core/routing/leader_reads.h"

#include <gtest/gtest.h>

#include <vector>

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

// One refusal on a connection with `read_preference`: what the session does.
struct Case {
    const char *message;
    const char *read_preference;
    bool learn, switch_;
};

void expect_cases(const std::vector<Case> &cases) {
    for (const Case &c : cases) {
        LeaderSwitch s = leader_switch(c.message, c.read_preference);
        EXPECT_EQ(s.learn, c.learn) << c.message << " / " << c.read_preference;
        EXPECT_EQ(s.switch_, c.switch_) << c.message << " / " << c.read_preference;
    }
}

}  // namespace

TEST(LeaderReadsTest, SqlPreemptionIsLearnedAndTheReadSwitchesToTheLeader) {
    expect_cases({{kPreemption, "replica", true, true}, {kPreemption, "any", true, true}});
}

TEST(LeaderReadsTest, AnUnloggedTableSwitchesTheReadWithoutLearningAnything) {
    expect_cases({{kUnlogged, "replica", false, true}, {kUnlogged, "any", false, true}});
}

TEST(LeaderReadsTest, AConnectionThatNamedTheLeaderOrNothingCannotSayMore) {
    // sql_preemption is learned all the same: the cluster's setting holds for the later reads.
    expect_cases({{kPreemption, "leader", true, false},
                  {kPreemption, "", true, false},
                  {kUnlogged, "leader", false, false},
                  {kUnlogged, "", false, false}});
}

TEST(LeaderReadsTest, AMissingMessageLearnsNothing) {
    expect_cases({{"", "replica", false, true}});
}

TEST(LeaderReadsTest, OnlyAReplicaOrAnyPreferenceNamesOtherThanTheLeader) {
    EXPECT_TRUE(names_other_than_leader("replica"));
    EXPECT_TRUE(names_other_than_leader("any"));
    EXPECT_FALSE(names_other_than_leader("leader"));
    EXPECT_FALSE(names_other_than_leader(""));  // a version without the option
}
