#include "core/routing/sqlstate_map.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using picoroute::routing::sqlstate_for_remote_error;

TEST(SqlstateMapTest, PicodatasTextsGetPostgresCodes) {
    // The texts as Picodata sends them, wrappers included.
    EXPECT_EQ(sqlstate_for_remote_error(
                  "XX000",
                  "Duplicate key exists in unique index \"ty_pkey\" in space \"ty\" "
                  "with old tuple - [5] and new tuple - [5]"),
              "23505");
    EXPECT_EQ(sqlstate_for_remote_error(
                  "XX000",
                  "sbroad: ProcLua: {\"message\":\"Error on replicaset 9f1c: Duplicate "
                  "key exists in unique index \\\"ty_pkey\\\"\"}"),
              "23505");
    EXPECT_EQ(sqlstate_for_remote_error("XX000", "duplicate key exists in table \"t\""), "23505");
    EXPECT_EQ(sqlstate_for_remote_error("XX000",
                                        "Tuple field 3 (name) type does not match one required by "
                                        "operation: expected string, got nil"),
              "23502");
    EXPECT_EQ(sqlstate_for_remote_error("XX000",
                                        "sbroad: invalid column: NonNull column \"v\" must be "
                                        "specified"),
              "23502");
    EXPECT_EQ(
        sqlstate_for_remote_error("XX000", "Failed to execute SQL statement: division by zero"),
        "22012");
    EXPECT_EQ(sqlstate_for_remote_error("XX000",
                                        "Failed to execute SQL statement: integer is overflowed"),
              "22003");
    EXPECT_EQ(sqlstate_for_remote_error(
                  "XX000", "Integer overflow when performing '+' operation on field 2"),
              "22003");
    EXPECT_EQ(sqlstate_for_remote_error("XX000",
                                        "sbroad: invalid query: value doesn't fit into integer "
                                        "range: 99999999999999999999"),
              "22003");
    EXPECT_EQ(sqlstate_for_remote_error("XX000",
                                        "failed decoding i64: out of range integral type "
                                        "conversion attempted"),
              "22003");
    EXPECT_EQ(sqlstate_for_remote_error("XX000",
                                        "sbroad: failed to parse 'abc' as a value of type int, "
                                        "consider using explicit type casts"),
              "22P02");
    EXPECT_EQ(sqlstate_for_remote_error("XX000", "sbroad: table with name \"nosuch\" not found"),
              "42P01");
}

TEST(SqlstateMapTest, UnknownTextsStayInternal) {
    EXPECT_EQ(sqlstate_for_remote_error("XX000", "rule parsing error"), "XX000");
    EXPECT_EQ(sqlstate_for_remote_error("XX000",
                                        "Exceeded maximum number of rows (5000) in virtual "
                                        "table: 5100"),
              "XX000");
    EXPECT_EQ(sqlstate_for_remote_error("XX000", ""), "XX000");
    // Case matters: PostgreSQL's own text is not Picodata's.
    EXPECT_EQ(sqlstate_for_remote_error("XX000", "DIVISION BY ZERO"), "XX000");
}

TEST(SqlstateMapTest, PicodatasOwnCodesAreKept) {
    EXPECT_EQ(sqlstate_for_remote_error("22P02", "decoding error: 'x' is not a valid int8"),
              "22P02");
    EXPECT_EQ(sqlstate_for_remote_error("42999", "prepared statement p has been invalidated"),
              "42999");
    // A code of its own wins even over a text of the table.
    EXPECT_EQ(sqlstate_for_remote_error("0A000", "division by zero"), "0A000");
}

TEST(SqlstateMapTest, EveryRuleIsWellFormedAndCited) {
    size_t n = 0;
    const picoroute::routing::SqlstateRule *rules = picoroute::routing::sqlstate_rules(&n);
    ASSERT_GT(n, 0u);
    std::set<std::string> texts;
    for (size_t i = 0; i < n; i++) {
        EXPECT_EQ(rules[i].sqlstate.size(), 5u) << rules[i].text;
        EXPECT_NE(rules[i].sqlstate, "XX000") << rules[i].text;
        EXPECT_FALSE(rules[i].text.empty());
        EXPECT_NE(rules[i].source.find('@'), std::string::npos) << rules[i].text;
        EXPECT_TRUE(texts.insert(std::string(rules[i].text)).second) << rules[i].text;
        // Each rule's own text maps to its code (no earlier rule shadows it).
        EXPECT_EQ(sqlstate_for_remote_error("XX000", rules[i].text), rules[i].sqlstate)
            << rules[i].text;
    }
}

TEST(SqlstateMapTest, StartupRefusalsARetryCannotCureAreFinal) {
    using picoroute::routing::startup_refusal_is_final;
    EXPECT_TRUE(startup_refusal_is_final("3D000"));  // database "x" does not exist
    EXPECT_TRUE(startup_refusal_is_final("28P01"));
    EXPECT_TRUE(startup_refusal_is_final("28000"));
    EXPECT_TRUE(startup_refusal_is_final("22023"));   // invalid value for a startup option
    EXPECT_TRUE(startup_refusal_is_final("42704"));   // unrecognized configuration parameter
    EXPECT_FALSE(startup_refusal_is_final("57P03"));  // the database system is starting up
    EXPECT_FALSE(startup_refusal_is_final("57P01"));
    EXPECT_FALSE(startup_refusal_is_final("53300"));  // too many connections
    EXPECT_FALSE(startup_refusal_is_final("08006"));
    EXPECT_FALSE(startup_refusal_is_final(""));  // no code: a network failure
}
