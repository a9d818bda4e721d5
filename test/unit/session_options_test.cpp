#include "core/session_options.h"

#include <gtest/gtest.h>

using picoroute::startup_options;
using picoroute::with_read_preference;

TEST(SessionOptionsTest, TheLeaderIsNamedWhereTheVersionHasTheOption) {
    // 26.1+: the cluster's read_preference may be replica or any, so leader is said too.
    EXPECT_EQ(startup_options("leader", true),
              "read_preference=leader,pico_stmt_invalidation=true");
    EXPECT_EQ(startup_options("replica", true),
              "read_preference=replica,pico_stmt_invalidation=true");
    EXPECT_EQ(startup_options("any", false), "read_preference=any");
    // 25.5: no read_preference, no invalidation reports.
    EXPECT_EQ(startup_options("", false), "");
    EXPECT_EQ(startup_options("", true), "pico_stmt_invalidation=true");
}

TEST(SessionOptionsTest, AReadPreferenceReplacesEveryOtherAndComesLast) {
    EXPECT_EQ(with_read_preference("", "leader"), "read_preference=leader");
    EXPECT_EQ(with_read_preference("read_preference=replica,pico_stmt_invalidation=true", "leader"),
              "pico_stmt_invalidation=true,read_preference=leader");
    EXPECT_EQ(with_read_preference("sql_motion_row_max=10,read_preference=any,read_preference=x",
                                   "leader"),
              "sql_motion_row_max=10,read_preference=leader");
    // Picodata does not trim: " read_preference=any" is another (unknown) name, kept as it is.
    EXPECT_EQ(with_read_preference(" read_preference=any", "any"),
              " read_preference=any,read_preference=any");
    EXPECT_EQ(with_read_preference(",,", "any"), "read_preference=any");
}
