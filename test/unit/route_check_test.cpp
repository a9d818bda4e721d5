// The route check's pure parts: Picodata's buckets line in each EXPLAIN format it ships (the texts
// are Picodata's own test expectations), the judgement against picoroute's bucket, the samples,
// the verdict's life and the choice of an entry in the bounded table.
#include "core/route_check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace picoroute {
using route_check::ExplainBuckets;
using route_check::judge;
using route_check::Outcome;
using route_check::parse_explain_buckets;
using route_check::Progress;
using route_check::SlotSummary;
using route_check::State;
using route_check::Step;

namespace {

using Kind = ExplainBuckets::Kind;
using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

// test/int/sql/explain.sql at 25.5.10 and 26.1.6 (test_valid_explain): one row per line.
const std::vector<std::string> kOldFormat = {
    R"(projection ("t1"."id"::int -> "id", "t1"."name"::string -> "name"))",
    R"(    selection "t1"."id"::int = 1::int)",
    R"(        scan "t1")",
    R"(            union all)",
    R"(                projection ("space_simple_shard_key"."id"::int -> "id"))",
    R"(                    selection "space_simple_shard_key"."sysOp"::int < 0::int)",
    R"(                        scan "space_simple_shard_key")",
    "execution options:",
    "    sql_vdbe_opcode_max = 45000",
    "    sql_motion_row_max = 5000",
    "buckets = [1934]",
};

// The same statement at 26.2.1-rc2 and 26.3.0: sections with 70-wide headers (trailing blanks
// kept), empty rows between them.
std::vector<std::string> new_format(const std::string &buckets_line) {
    std::string rule;
    for (int i = 0; i < 70; i++)
        rule += "\u2500";
    return {rule,
            " # Logical plan                                                       ",
            rule,
            "",
            "projection (t1.id::int -> id, t1.name::string -> name)",
            "  selection (t1.id::int = 1::int)",
            "    scan t1",
            "",
            rule,
            " # Buckets                                                            ",
            rule,
            "",
            buckets_line};
}

TEST(ExplainBuckets, OldFormat) {
    ExplainBuckets b = parse_explain_buckets(kOldFormat);
    EXPECT_EQ(b.kind, Kind::Exact);
    EXPECT_EQ(b.ranges, (Ranges{{1934, 1934}}));
    EXPECT_EQ(b.line, "buckets = [1934]");
    EXPECT_TRUE(b.contains(1934));
    EXPECT_FALSE(b.contains(1933));
    EXPECT_EQ(b.count(), 1u);
}

TEST(ExplainBuckets, SectionFormat) {
    ExplainBuckets b = parse_explain_buckets(new_format("buckets = [1934]"));
    EXPECT_EQ(b.kind, Kind::Exact);
    EXPECT_EQ(b.ranges, (Ranges{{1934, 1934}}));
}

TEST(ExplainBuckets, OneRowWithNewlines) {
    // A client that joins the rows, or a server that sends the whole text in one row.
    std::string joined;
    for (const std::string &line : new_format("buckets = [2997]"))
        joined += line + "\n";
    ExplainBuckets b = parse_explain_buckets({joined});
    EXPECT_EQ(b.kind, Kind::Exact);
    EXPECT_EQ(b.ranges, (Ranges{{2997, 2997}}));
}

TEST(ExplainBuckets, RangesListsAndBounds) {
    // buckets_repr: sorted, consecutive buckets as a-b (explain_buckets.sql at 26.3.0,
    // query_explain.rs at 25.5.10).
    ExplainBuckets all = parse_explain_buckets({"buckets = [1-3000]"});
    EXPECT_EQ(all.kind, Kind::Exact);
    EXPECT_EQ(all.count(), 3000u);
    ExplainBuckets list = parse_explain_buckets({"buckets = [2520,2997]"});
    EXPECT_EQ(list.ranges, (Ranges{{2520, 2520}, {2997, 2997}}));
    ExplainBuckets mixed = parse_explain_buckets({"buckets = [1,5-7,3000]"});
    EXPECT_EQ(mixed.ranges, (Ranges{{1, 1}, {5, 7}, {3000, 3000}}));
    EXPECT_EQ(mixed.count(), 5u);
    ExplainBuckets bound = parse_explain_buckets({"buckets <= [62,2132]"});
    EXPECT_EQ(bound.kind, Kind::AtMost);
    EXPECT_EQ(bound.ranges, (Ranges{{62, 62}, {2132, 2132}}));
    ExplainBuckets empty = parse_explain_buckets({"buckets = []"});
    EXPECT_EQ(empty.kind, Kind::Exact);
    EXPECT_EQ(empty.count(), 0u);
}

TEST(ExplainBuckets, AnyUnknownAndMissing) {
    EXPECT_EQ(parse_explain_buckets({"buckets = any"}).kind, Kind::Any);
    EXPECT_EQ(parse_explain_buckets({"buckets = unknown"}).kind, Kind::Unknown);
    // 26.2.1-rc1+: a set known only by its size (sql-ir/src/ir/explain.rs, buckets_repr).
    EXPECT_EQ(parse_explain_buckets({"buckets = unknown(1..=2)"}).kind, Kind::Unknown);
    EXPECT_EQ(parse_explain_buckets({"buckets = [12-]"}).kind, Kind::Unknown);
    EXPECT_EQ(parse_explain_buckets({"buckets = [7-3]"}).kind, Kind::Unknown);
    // PostgreSQL's own EXPLAIN (a plain server behind the address): no such line.
    ExplainBuckets pg =
        parse_explain_buckets({"Index Scan using t_pkey on t  (cost=0.15..8.17 rows=1 width=36)",
                               "  Index Cond: (id = 1)"});
    EXPECT_EQ(pg.kind, Kind::Missing);
    EXPECT_EQ(pg.line, "");
    // Lines that only begin alike are not the buckets line.
    EXPECT_EQ(parse_explain_buckets({"buckets_of_mine = [1]", "bucketsx = [1]"}).kind,
              Kind::Missing);
    EXPECT_EQ(parse_explain_buckets({}).kind, Kind::Missing);
}

TEST(ExplainBuckets, TheLastLineCounts) {
    ExplainBuckets b = parse_explain_buckets({"buckets = [1]", "x", "buckets = [2]"});
    EXPECT_EQ(b.ranges, (Ranges{{2, 2}}));
}

TEST(Judge, AgreedDisagreedInconclusive) {
    auto j = judge(parse_explain_buckets({"buckets = [1934]"}), 1934);
    EXPECT_EQ(j.outcome, Outcome::Agreed);
    EXPECT_EQ(j.picodata_bucket, 1934u);

    j = judge(parse_explain_buckets({"buckets = [2099]"}), 1934);
    EXPECT_EQ(j.outcome, Outcome::Disagreed);
    EXPECT_EQ(j.picodata_bucket, 2099u);
    EXPECT_EQ(j.reason, "buckets = [2099]");

    // An upper bound that leaves ours out: Picodata will not go there.
    j = judge(parse_explain_buckets({"buckets <= [62,2132]"}), 100);
    EXPECT_EQ(j.outcome, Outcome::Disagreed);
    EXPECT_FALSE(j.picodata_bucket);
    j = judge(parse_explain_buckets({"buckets <= [62]"}), 62);
    EXPECT_EQ(j.outcome, Outcome::Agreed);

    // Several buckets including ours: Picodata did not route by the key.
    j = judge(parse_explain_buckets({"buckets = [1-3000]"}), 1934);
    EXPECT_EQ(j.outcome, Outcome::Inconclusive);
    EXPECT_NE(j.reason.find("did not route"), std::string::npos);
    j = judge(parse_explain_buckets({"buckets <= [62,2132]"}), 62);
    EXPECT_EQ(j.outcome, Outcome::Inconclusive);

    for (const char *line : {"buckets = any", "buckets = unknown", "buckets = []", "nothing"}) {
        j = judge(parse_explain_buckets({line}), 1);
        EXPECT_EQ(j.outcome, Outcome::Inconclusive) << line;
        EXPECT_FALSE(j.reason.empty()) << line;
    }
}

TEST(Samples, PerTypeAndPerKey) {
    EXPECT_EQ(route_check::sample_texts("integer"), (std::vector<std::string>{"1", "-300"}));
    EXPECT_EQ(route_check::sample_texts("double"), (std::vector<std::string>{"1", "1.5"}));
    EXPECT_TRUE(route_check::sample_texts("map").empty());
    for (const char *type :
         {"integer", "string", "boolean", "double", "decimal", "uuid", "datetime"})
        EXPECT_FALSE(route_check::sample_texts(type).empty()) << type;

    // Key i takes value i of each column, cycling through the shorter lists.
    auto keys = route_check::key_samples({"string", "uuid"});
    ASSERT_EQ(keys.size(), 2u);
    EXPECT_EQ(keys[0],
              (std::vector<std::string>{"picoroute", route_check::sample_texts("uuid")[0]}));
    EXPECT_EQ(keys[1], (std::vector<std::string>{"ключ", route_check::sample_texts("uuid")[0]}));
    EXPECT_TRUE(route_check::key_samples({"integer", "map"}).empty());
    EXPECT_TRUE(route_check::key_samples({}).empty());

    EXPECT_EQ(route_check::format_sample({"integer", "string"}, {"1", "it's"}), "(1, 'it''s')");
    EXPECT_EQ(route_check::signature_text({"integer", "string"}), "integer, string");
}

TEST(Verdict, NextStep) {
    Progress p;
    EXPECT_EQ(route_check::next_step(State::Empty, p, 0), Step::Check);
    EXPECT_EQ(route_check::next_step(State::Empty, p, 0, false), Step::ByBucket);
    EXPECT_EQ(route_check::next_step(State::Agreed, p, 0), Step::ByBucket);
    EXPECT_EQ(route_check::next_step(State::Disagreed, p, 0), Step::ThroughCoordinator);
    EXPECT_EQ(route_check::next_step(State::Disagreed, p, 0, false), Step::ThroughCoordinator);

    // Another backend is checking: route by bucket meanwhile; an abandoned check is taken over.
    p.claimed_at_ms = 1000;
    EXPECT_EQ(route_check::next_step(State::Pending, p, 1000), Step::ByBucket);
    EXPECT_EQ(route_check::next_step(State::Pending, p, 1000 + route_check::kPendingStaleMs - 1),
              Step::ByBucket);
    EXPECT_EQ(route_check::next_step(State::Pending, p, 1000 + route_check::kPendingStaleMs),
              Step::Check);

    // An inconclusive check is tried again after a growing delay.
    Progress u;
    route_check::note_inconclusive(&u, 5000);
    EXPECT_EQ(u.attempts, 1u);
    EXPECT_EQ(u.retry_at_ms, 5000 + route_check::kRetryFirstMs);
    EXPECT_EQ(route_check::next_step(State::Unknown, u, u.retry_at_ms - 1), Step::ByBucket);
    EXPECT_EQ(route_check::next_step(State::Unknown, u, u.retry_at_ms), Step::Check);
    EXPECT_EQ(route_check::next_step(State::Unknown, u, u.retry_at_ms, false), Step::ByBucket);
    route_check::note_inconclusive(&u, 20000);
    EXPECT_EQ(u.retry_at_ms, 20000 + 2 * route_check::kRetryFirstMs);
}

TEST(Verdict, RetryDelayDoublesUpToTheCap) {
    EXPECT_EQ(route_check::retry_delay_ms(1), 10000);
    EXPECT_EQ(route_check::retry_delay_ms(2), 20000);
    EXPECT_EQ(route_check::retry_delay_ms(3), 40000);
    EXPECT_EQ(route_check::retry_delay_ms(7), 600000);
    EXPECT_EQ(route_check::retry_delay_ms(1000000), 600000);
}

TEST(Slots, EmptyFirstThenOtherVersionsThenLeastRecentlyUsed) {
    const int64_t now = 1000000;
    std::vector<SlotSummary> slots(4);
    slots[0] = {State::Agreed, true, 10, 0};
    slots[1] = {State::Agreed, false, 500, 0};
    slots[2] = {State::Empty, false, 0, 0};
    slots[3] = {State::Unknown, true, 5, 0};
    EXPECT_EQ(route_check::pick_slot(slots, now), 2);
    slots[2] = {State::Disagreed, false, 900, 0};
    // Entries of another version go first, the least recently used of them.
    EXPECT_EQ(route_check::pick_slot(slots, now), 1);
    slots[1] = {State::Disagreed, true, 1, 0};
    slots[2] = {State::Agreed, true, 1, 0};
    // Then agreed or unknown entries of this version, least recently used first.
    EXPECT_EQ(route_check::pick_slot(slots, now), 2);
}

TEST(Slots, FullWhenOnlyDisagreementsAndFreshChecksRemain) {
    const int64_t now = 1000000;
    std::vector<SlotSummary> slots = {
        {State::Disagreed, true, 1, 0},
        {State::Pending, true, 1, now - 10},
        {State::Pending, false, 1, now - 10},
    };
    EXPECT_EQ(route_check::pick_slot(slots, now), -1);
    // An abandoned check may be taken.
    slots[1].claimed_at_ms = now - route_check::kPendingStaleMs;
    EXPECT_EQ(route_check::pick_slot(slots, now), 1);
    EXPECT_EQ(route_check::pick_slot({}, now), -1);
}

TEST(Verdict, StateNames) {
    EXPECT_STREQ(route_check::state_name(State::Pending), "pending");
    EXPECT_STREQ(route_check::state_name(State::Agreed), "agreed");
    EXPECT_STREQ(route_check::state_name(State::Disagreed), "disagreed");
    EXPECT_STREQ(route_check::state_name(State::Unknown), "unknown");
    EXPECT_STREQ(route_check::state_name(State::Empty), "");
}

}  // namespace
}  // namespace picoroute
