// The text of routed statements: bucket filters, the order of a statement's parts (filter, tail,
// LIMIT, OPTION), key lists padded to powers of two, picoroute_exec_masters' placeholders.
#include "core/routing/text.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace picoroute {
using routing::Target;

TEST(TextTest, BucketFilters) {
    Target t;
    EXPECT_EQ(routing::with_bucket_filter("SELECT 1 FROM \"x\"", false, t), "SELECT 1 FROM \"x\"");
    t.buckets = {5};
    EXPECT_EQ(routing::with_bucket_filter("SELECT 1 FROM \"x\"", false, t),
              "SELECT 1 FROM \"x\" WHERE bucket_id = 5");
    t.buckets = {5, 9};
    EXPECT_EQ(routing::with_bucket_filter("S WHERE (a)", true, t),
              "S WHERE (a) AND bucket_id IN (5, 9)");
    // A master's ranges become the list of all its buckets: only = and IN restrict a statement.
    Target m;
    m.ranges = {{1, 3}, {7, 8}};
    EXPECT_EQ(routing::with_bucket_filter("S", false, m), "S WHERE bucket_id IN (1, 2, 3, 7, 8)");
    m.ranges = {{4, 4}};
    EXPECT_EQ(routing::with_bucket_filter("S", false, m), "S WHERE bucket_id = 4");
    // A join names the bucket column of the table that routes it.
    EXPECT_EQ(routing::with_bucket_filter("S WHERE (a)", true, t, "\"r1\".\"bucket_id\""),
              "S WHERE (a) AND \"r1\".\"bucket_id\" IN (5, 9)");
    EXPECT_EQ(routing::with_bucket_filter("S", false, m, "\"r2\".\"bucket_id\""),
              "S WHERE \"r2\".\"bucket_id\" = 4");
}

// A keyed statement carries no bucket filter (Picodata routes it by its key); a master of a
// 'masters' scatter gets its buckets, then the tail of a pushed upper relation, the scan's LIMIT
// and the OPTION clause, always last.
TEST(TextTest, TheFilterComesBeforeTheTailTheLimitAndTheOption) {
    routing::StatementText text;
    text.sql = "SELECT \"a\" FROM \"t\" WHERE (\"b\" = 1)";
    text.has_where = true;
    text.option = " OPTION (sql_motion_row_max = 5000)";
    Target owner;
    owner.buckets = {7};  // routed by its key: no filter
    EXPECT_EQ(routing::text_for(text, owner),
              "SELECT \"a\" FROM \"t\" WHERE (\"b\" = 1) OPTION (sql_motion_row_max = 5000)");
    Target master;
    master.ranges = {{1, 2}};
    text.tail = " GROUP BY \"a\"";
    text.row_limit = 10;
    EXPECT_EQ(routing::text_for(text, master),
              "SELECT \"a\" FROM \"t\" WHERE (\"b\" = 1) AND bucket_id IN (1, 2) GROUP BY \"a\" "
              "LIMIT 10 OPTION (sql_motion_row_max = 5000)");
    text.column = "\"r1\".\"bucket_id\"";
    text.has_where = false;
    text.sql = "SELECT 1 FROM \"t\" AS \"r1\"";
    text.tail.clear();
    text.row_limit = 0;
    text.option.clear();
    EXPECT_EQ(routing::text_for(text, master),
              "SELECT 1 FROM \"t\" AS \"r1\" WHERE \"r1\".\"bucket_id\" IN (1, 2)");
}

// A group's keys go in statements of at most max_keys, each padded to a power of two (capped at
// max_keys), so that a few texts serve every batch.
TEST(TextTest, KeyListsArePaddedToPowersOfTwoWithinTheirLimit) {
    auto slices = routing::key_slices(5, 513);
    ASSERT_EQ(slices.size(), 1u);
    EXPECT_EQ(slices[0].from, 0u);
    EXPECT_EQ(slices[0].n, 5u);
    EXPECT_EQ(slices[0].padded, 8u);
    slices = routing::key_slices(1100, 513);
    ASSERT_EQ(slices.size(), 3u);
    EXPECT_EQ(slices[0].n, 513u);
    EXPECT_EQ(slices[0].padded, 513u);  // 1024 capped
    EXPECT_EQ(slices[1].from, 513u);
    EXPECT_EQ(slices[2].from, 1026u);
    EXPECT_EQ(slices[2].n, 74u);
    EXPECT_EQ(slices[2].padded, 128u);
    EXPECT_EQ(routing::key_slices(1, 1)[0].padded, 1u);
    EXPECT_EQ(routing::key_slices(3, 0).size(), 3u);  // at least one key per statement
    EXPECT_TRUE(routing::key_slices(0, 513).empty());
    EXPECT_EQ(routing::key_list_text("SELECT 1 FROM \"t\"", false, "\"id\"", 1, 2),
              "SELECT 1 FROM \"t\" WHERE \"id\" IN ($1, $2)");
    EXPECT_EQ(routing::key_list_text("S WHERE (a = $1)", true, "\"id\"", 2, 1),
              "S WHERE (a = $1) AND \"id\" IN ($2)");
}

// picoroute_exec_masters: each {buckets} becomes the master's ranges, merged where contiguous.
TEST(TextTest, PlaceholdersGetEachMastersRanges) {
    EXPECT_EQ(routing::bucket_condition({{5, 9}, {1, 4}, {12, 12}}, ""),
              "(\"bucket_id\" BETWEEN 1 AND 9 OR \"bucket_id\" = 12)");
    EXPECT_EQ(routing::bucket_condition({{3, 3}}, "u"), "(u.\"bucket_id\" = 3)");
    std::string q = "SELECT * FROM t WHERE {buckets} AND x IN (SELECT y FROM s WHERE {buckets:s})";
    std::vector<routing::Placeholder> ps(2);
    ps[0].begin = q.find('{');
    ps[0].end = q.find('}') + 1;
    ps[1].begin = q.find('{', ps[0].end);
    ps[1].end = q.find('}', ps[1].begin) + 1;
    ps[1].qualifier = "s";
    EXPECT_EQ(routing::fill_placeholders(q, ps, {{1, 2}}),
              "SELECT * FROM t WHERE (\"bucket_id\" BETWEEN 1 AND 2) AND x IN (SELECT y FROM s "
              "WHERE (s.\"bucket_id\" BETWEEN 1 AND 2))");
    EXPECT_EQ(routing::fill_placeholders("SELECT 1", {}, {{1, 2}}), "SELECT 1");
}

}  // namespace picoroute
