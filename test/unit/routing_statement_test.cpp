// The routing decision of one statement (what decide_targets in the FDW's routed delegates to).
// Branches of route_statement covered here:
//   1. global table, read: one coordinator from spread() with the table's read preference;
//   2. global table, write: spread() with leader and write, retry rule Write;
//   3. keys with a column of no value: nothing sent, "no row can match ...";
//   4. a column of no value after the product passed the cap: not seen, goes keyless;
//   5. one key value: its bucket grouped, "bucket N -> target", not keyless;
//   6. the product of several columns: every combination hashed, each value encoded once;
//   7. exactly kMaxKeyCombinations combinations: still routed by key;
//   8. more combinations than the cap: keyless, through a coordinator;
//   9. a tier of 0 buckets: keyless, through a coordinator;
//  10. several owners: descriptions joined with "; ", sent once to the first (no bucket filter);
//  11. a write with keys: grouped with the leader preference whatever the table's;
//  12. scatter 'masters' where bucket_id does not prune: the note, then one coordinator;
//  13. scatter 'masters' where it prunes: every master with its ranges, retry rule Never, while
//      each master's bucket list keeps the WHERE clause within the 513 chains Picodata expands
//      (MAX_DNF_CHAINS = 512 checked after a pop: 513 expand, 514 do not); else (or
//      with a key list) one coordinator, and the description says why (dnf_chains counted);
//  14. no keys, scatter 'coordinator': "scatter through coordinator <address>";
//  15. a conversion error of a key value propagates;
//  16. describe = false: the same targets, no description (keyed statements, global tables).
//  17. hashing_disagrees: a keyed statement (read or write) goes to one coordinator, still keyed,
//      nothing hashed; a key with no value still sends nothing; a keyless one is unchanged.
#include "core/routing/statement.h"

#include "core/bucket_hash.h"
#include "core/capabilities.h"

#include "routing_targets.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace picoroute::routing {
namespace {

using testing::coordinator_target;
using testing::master_target;

// Fake lookups that record what the decision asked. Buckets up to 1500 belong to "a:1" (replicaset
// r1), the others to "b:1" (r2).
struct Recorder {
    std::vector<std::pair<ReadPref, bool>> spread_calls;
    std::vector<std::set<uint32_t>> group_calls;
    std::vector<ReadPref> group_prefs;
    int masters_calls = 0;
    // The ranges of the two masters (2000 and 1000 buckets by default, over the chain limit).
    std::vector<std::pair<uint32_t, uint32_t>> ranges_a = {{1, 1000}, {2001, 3000}};
    std::vector<std::pair<uint32_t, uint32_t>> ranges_b = {{1001, 2000}};

    StatementLookups lookups() {
        StatementLookups l;
        l.spread = [this](ReadPref pref, bool write) {
            spread_calls.emplace_back(pref, write);
            return coordinator_target("c:1");
        };
        l.masters = [this] {
            masters_calls++;
            Target a = master_target("a:1", "r1"), b = master_target("b:1", "r2");
            a.ranges = ranges_a;
            b.ranges = ranges_b;
            return std::vector<Target>{a, b};
        };
        l.group = [this](const std::set<uint32_t> &buckets, ReadPref pref) {
            group_calls.push_back(buckets);
            group_prefs.push_back(pref);
            Target a = master_target("a:1", "r1"), b = master_target("b:1", "r2");
            for (uint32_t bucket : buckets)
                (bucket <= 1500 ? a : b).buckets.push_back(bucket);
            std::vector<Target> out;
            for (Target *t : {&a, &b})
                if (!t->buckets.empty())
                    out.push_back(*t);
            return out;
        };
        return l;
    }
};

std::string int_bytes(int64_t value) {
    KeyEncoder e(kNewestHashRule);  // integers hash alike under every rule
    e.add_int(value);
    return e.bytes();
}

uint32_t bucket_of_ints(std::vector<int64_t> values, uint32_t count = 3000) {
    KeyEncoder e(kNewestHashRule);  // integers hash alike under every rule
    for (int64_t v : values)
        e.add_int(v);
    return bucket_id_for_bytes(e.bytes(), count);
}

StatementInfo sharded(std::optional<KeyValues> keys = std::nullopt) {
    StatementInfo st;
    st.tier = "t";
    st.bucket_count = 3000;
    st.keys = std::move(keys);
    return st;
}

TEST(StatementTest, GlobalTableReadGoesToOneCoordinatorWithTheTablePreference) {  // 1
    Recorder rec;
    StatementInfo st = sharded(encoded_key_values({{int_bytes(1)}}));
    st.global = true;
    st.read_pref = ReadPref::Replica;
    StatementRoute r = route_statement(st, rec.lookups());
    ASSERT_EQ(r.targets.size(), 1u);
    EXPECT_EQ(r.targets[0].address, "c:1");
    EXPECT_TRUE(r.keyless);
    EXPECT_EQ(r.retry, Retry::Read);
    EXPECT_EQ(r.description, "global table: c:1 (coordinator)");
    ASSERT_EQ(rec.spread_calls.size(), 1u);
    EXPECT_EQ(rec.spread_calls[0], std::make_pair(ReadPref::Replica, false));
    EXPECT_TRUE(rec.group_calls.empty());
}

TEST(StatementTest, GlobalTableWriteAsksForALeaderAndRetriesAsAWrite) {  // 2
    Recorder rec;
    StatementInfo st = sharded();
    st.global = true;
    st.write = true;
    st.read_pref = ReadPref::Any;
    StatementRoute r = route_statement(st, rec.lookups());
    EXPECT_EQ(r.retry, Retry::Write);
    ASSERT_EQ(rec.spread_calls.size(), 1u);
    EXPECT_EQ(rec.spread_calls[0], std::make_pair(ReadPref::Leader, true));
}

TEST(StatementTest, AKeyColumnWithoutValuesSendsNothing) {  // 3
    Recorder rec;
    StatementRoute r =
        route_statement(sharded(encoded_key_values({{int_bytes(1)}, {}})), rec.lookups());
    EXPECT_TRUE(r.targets.empty());
    EXPECT_TRUE(r.keyless);
    EXPECT_EQ(r.description, "no row can match the sharding key condition: nothing sent");
    EXPECT_TRUE(rec.spread_calls.empty());
}

TEST(StatementTest, AnEmptyColumnAfterTheCapIsNotSeen) {  // 4
    Recorder rec;
    KeyValues keys;
    keys.counts = {kMaxKeyCombinations + 1, 0};
    keys.encode = [](size_t, size_t) -> std::string { throw std::logic_error("not encoded"); };
    StatementRoute r = route_statement(sharded(keys), rec.lookups());
    EXPECT_EQ(r.description, "scatter through coordinator c:1");
    EXPECT_TRUE(r.keyless);
}

TEST(StatementTest, OneKeyValueGoesToTheOwnerOfItsBucket) {  // 5
    Recorder rec;
    StatementRoute r =
        route_statement(sharded(encoded_key_values({{int_bytes(1)}})), rec.lookups());
    ASSERT_EQ(rec.group_calls.size(), 1u);
    EXPECT_EQ(rec.group_calls[0], std::set<uint32_t>({1934}));  // integer 1 (facts, section 3)
    ASSERT_EQ(r.targets.size(), 1u);
    EXPECT_EQ(r.targets[0].address, "b:1");
    EXPECT_FALSE(r.keyless);
    EXPECT_EQ(r.retry, Retry::Read);
    EXPECT_EQ(r.description, "bucket 1934 -> b:1 (master b:1 of replicaset r2)");
}

TEST(StatementTest, TheProductOfSeveralColumnsIsHashedValueByValue) {  // 6
    Recorder rec;
    std::vector<std::pair<size_t, size_t>> encoded;
    KeyValues keys;
    keys.counts = {2, 3};
    keys.encode = [&](size_t column, size_t index) {
        encoded.emplace_back(column, index);
        return int_bytes(static_cast<int64_t>(column * 10 + index));
    };
    StatementRoute r = route_statement(sharded(keys), rec.lookups());
    std::set<uint32_t> expected;
    for (int64_t a : {0, 1})
        for (int64_t b : {10, 11, 12})
            expected.insert(bucket_of_ints({a, b}));
    ASSERT_EQ(rec.group_calls.size(), 1u);
    EXPECT_EQ(rec.group_calls[0], expected);
    // Each value once, in the order of the product (first column slowest).
    std::vector<std::pair<size_t, size_t>> order = {{0, 0}, {1, 0}, {1, 1}, {1, 2}, {0, 1}};
    EXPECT_EQ(encoded, order);
    EXPECT_FALSE(r.keyless);
}

TEST(StatementTest, ExactlyTheCapIsStillRoutedByKey) {  // 7
    Recorder rec;
    KeyValues keys;
    keys.counts = {64, 64};
    ASSERT_EQ(64u * 64u, kMaxKeyCombinations);
    keys.encode = [](size_t column, size_t index) {
        return int_bytes(static_cast<int64_t>(column * 1000 + index));
    };
    StatementRoute r = route_statement(sharded(keys), rec.lookups());
    EXPECT_FALSE(r.keyless);
    ASSERT_EQ(rec.group_calls.size(), 1u);
    EXPECT_TRUE(rec.spread_calls.empty());
}

TEST(StatementTest, MoreCombinationsThanTheCapGoThroughACoordinator) {  // 8
    Recorder rec;
    KeyValues keys;
    keys.counts = {65, 64};
    keys.encode = [](size_t, size_t) -> std::string { throw std::logic_error("not encoded"); };
    StatementRoute r = route_statement(sharded(keys), rec.lookups());
    EXPECT_TRUE(r.keyless);
    EXPECT_EQ(r.description, "scatter through coordinator c:1");
    EXPECT_TRUE(rec.group_calls.empty());
}

TEST(StatementTest, ATierWithoutBucketsGoesThroughACoordinator) {  // 9
    Recorder rec;
    StatementInfo st = sharded(encoded_key_values({{int_bytes(1)}}));
    st.bucket_count = 0;
    StatementRoute r = route_statement(st, rec.lookups());
    EXPECT_TRUE(r.keyless);
    EXPECT_EQ(r.description, "scatter through coordinator c:1");
}

TEST(StatementTest, SeveralTargetsAreDescribedOneByOne) {  // 10
    Recorder rec;
    // The buckets of integers 1, 2 and 3, computed here, split between the two fake owners.
    std::vector<std::string> values = {int_bytes(1), int_bytes(2), int_bytes(3)};
    StatementRoute r = route_statement(sharded(encoded_key_values({values})), rec.lookups());
    std::vector<uint32_t> low, high;
    for (int64_t v : {1, 2, 3})
        (bucket_of_ints({v}) <= 1500 ? low : high).push_back(bucket_of_ints({v}));
    std::sort(low.begin(), low.end());
    std::sort(high.begin(), high.end());
    auto list = [](const std::vector<uint32_t> &buckets) {
        std::string s = buckets.size() == 1 ? "bucket " : "buckets ";
        for (size_t i = 0; i < buckets.size(); i++)
            s += (i ? ", " : "") + std::to_string(buckets[i]);
        return s;
    };
    std::string expected;
    if (!low.empty())
        expected = list(low) + " -> a:1 (master a:1 of replicaset r1)";
    if (!high.empty())
        expected +=
            (expected.empty() ? "" : "; ") + list(high) + " -> b:1 (master b:1 of replicaset r2)";
    ASSERT_FALSE(low.empty() || high.empty());  // 1, 2 and 3 have both owners
    // Each owner sent the whole key list would answer for all of it: the first gets it once and
    // routes it by the key, with every bucket (a retry re-routes by them).
    EXPECT_EQ(r.description, expected + ": sent once to a:1, which routes it by the key");
    ASSERT_EQ(r.targets.size(), 1u);
    EXPECT_EQ(r.targets[0].address, "a:1");
    std::vector<uint32_t> all = low;
    all.insert(all.end(), high.begin(), high.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(r.targets[0].buckets, all);
    EXPECT_TRUE(r.targets[0].ranges.empty());  // no bucket filter
    EXPECT_FALSE(r.keyless);
}

TEST(StatementTest, NobodyExplainsTheSameTargetsWithoutADescription) {  // 16
    std::vector<std::string> values = {int_bytes(1), int_bytes(2), int_bytes(3)};
    for (bool global : {false, true}) {
        for (size_t n : {size_t{1}, size_t{3}}) {
            Recorder rec_described, rec_silent;
            StatementInfo st = sharded(
                encoded_key_values({std::vector<std::string>(values.begin(), values.begin() + n)}));
            st.global = global;
            StatementRoute described = route_statement(st, rec_described.lookups());
            st.describe = false;
            StatementRoute silent = route_statement(st, rec_silent.lookups());
            EXPECT_FALSE(described.description.empty());
            EXPECT_TRUE(silent.description.empty()) << silent.description;
            ASSERT_EQ(silent.targets.size(), described.targets.size());
            for (size_t i = 0; i < silent.targets.size(); i++) {
                EXPECT_EQ(silent.targets[i].address, described.targets[i].address);
                EXPECT_EQ(silent.targets[i].buckets, described.targets[i].buckets);
            }
            EXPECT_EQ(silent.keyless, described.keyless);
            EXPECT_EQ(silent.retry, described.retry);
        }
    }
}

TEST(StatementTest, AWriteGroupsItsBucketsOnLeaders) {  // 11
    Recorder rec;
    StatementInfo st = sharded(encoded_key_values({{int_bytes(1)}}));
    st.write = true;
    st.read_pref = ReadPref::Replica;
    StatementRoute r = route_statement(st, rec.lookups());
    ASSERT_EQ(rec.group_prefs.size(), 1u);
    EXPECT_EQ(rec.group_prefs[0], ReadPref::Leader);
    EXPECT_EQ(r.retry, Retry::Write);
    EXPECT_FALSE(r.keyless);
}

TEST(StatementTest, MastersScatterWithoutPruningGoesThroughOneCoordinator) {  // 12
    Recorder rec;
    StatementInfo st = sharded();
    st.scatter_masters = true;
    st.prune_by_bucket_id = false;
    st.read_pref = ReadPref::Any;
    StatementRoute r = route_statement(st, rec.lookups());
    EXPECT_EQ(rec.masters_calls, 0);
    ASSERT_EQ(r.targets.size(), 1u);
    EXPECT_EQ(r.retry, Retry::Read);
    EXPECT_TRUE(r.keyless);
    EXPECT_EQ(r.description,
              "scatter 'masters' needs a Picodata version that restricts a statement by bucket_id "
              "(26.2.1-rc2); scatter through coordinator c:1");
    ASSERT_EQ(rec.spread_calls.size(), 1u);
    EXPECT_EQ(rec.spread_calls[0], std::make_pair(ReadPref::Any, false));
}

TEST(StatementTest, MastersScatterWherePrunedAsksEveryMasterOnce) {  // 13
    Recorder rec;
    rec.ranges_a = {{1, 100}, {201, 300}};
    rec.ranges_b = {{101, 200}};
    StatementInfo st = sharded();
    st.scatter_masters = true;
    st.prune_by_bucket_id = true;
    StatementRoute r = route_statement(st, rec.lookups());
    EXPECT_EQ(rec.masters_calls, 1);
    EXPECT_EQ(r.targets.size(), 2u);
    EXPECT_EQ(r.retry, Retry::Never);
    EXPECT_TRUE(r.keyless);
    EXPECT_EQ(r.description,
              "scatter to the 2 masters of tier \"t\": a:1 (buckets 1-100, 201-300), b:1 "
              "(buckets 101-200)");
    EXPECT_TRUE(rec.spread_calls.empty());
}

TEST(StatementTest, MastersScatterAtTheChainLimitStillScatters) {  // 13
    EXPECT_EQ(caps::kDnfMostChains, 513u);
    Recorder rec;
    rec.ranges_a = {{1, 513}};  // 513 chains: Picodata still expands them
    rec.ranges_b = {{514, 600}};
    StatementInfo st = sharded();
    st.write = true;  // a write is never split: one statement per master
    st.scatter_masters = true;
    st.prune_by_bucket_id = true;
    StatementRoute r = route_statement(st, rec.lookups());
    ASSERT_EQ(r.targets.size(), 2u);
    EXPECT_EQ(dnf_chains(1, r.targets[0]), 513u);
    EXPECT_TRUE(rec.spread_calls.empty());
    // The same with a WHERE clause of 3 chains and 171 buckets: 513 chains.
    rec.ranges_a = {{1, 171}};
    rec.ranges_b = {{172, 300}};
    st.where_chains = 3;
    r = route_statement(st, rec.lookups());
    EXPECT_EQ(r.targets.size(), 2u);
}

TEST(StatementTest, MastersScatterWriteOneChainOverTheLimitGoesThroughOneCoordinator) {  // 13
    Recorder rec;
    rec.ranges_a = {{1, 514}};  // 514 chains: Picodata would ask every replicaset from a:1
    rec.ranges_b = {{515, 600}};
    StatementInfo st = sharded();
    st.write = true;
    st.scatter_masters = true;
    st.prune_by_bucket_id = true;
    StatementRoute r = route_statement(st, rec.lookups());
    ASSERT_EQ(r.targets.size(), 1u);
    EXPECT_EQ(r.targets[0].address, "c:1");
    EXPECT_EQ(r.description,
              "scatter 'masters': the buckets of a:1 expand the WHERE clause to 514 OR-of-AND "
              "chains, more than Picodata expands (513); scatter through coordinator c:1");
}

TEST(StatementTest, MastersScatterOverTheChainLimitSplitsAReadPerMaster) {  // 13
    Recorder rec;
    rec.ranges_a = {{1, 100}};
    rec.ranges_b = {{101, 300}};
    StatementInfo st = sharded();
    st.scatter_masters = true;
    st.prune_by_bucket_id = true;
    st.where_chains = 3;  // b:1: 3 x 200 = 600 chains; 171 buckets a statement keep 513
    StatementRoute r = route_statement(st, rec.lookups());
    ASSERT_EQ(r.targets.size(), 3u);
    EXPECT_EQ(r.targets[0].address, "a:1");
    EXPECT_EQ(r.targets[1].address, "b:1");
    EXPECT_EQ(r.targets[2].address, "b:1");
    EXPECT_EQ(r.targets[1].ranges, (std::vector<std::pair<uint32_t, uint32_t>>{{101, 271}}));
    EXPECT_EQ(r.targets[2].ranges, (std::vector<std::pair<uint32_t, uint32_t>>{{272, 300}}));
    EXPECT_EQ(dnf_chains(st.where_chains, r.targets[1]), 513u);
    for (const Target &t : r.targets)
        EXPECT_LE(dnf_chains(st.where_chains, t), 513u);
    EXPECT_EQ(r.retry, Retry::Never);
    EXPECT_EQ(r.description,
              "scatter to the 2 masters of tier \"t\": a:1 (buckets 1-100), b:1 (buckets 101-300 "
              "in 2 statements)");
    EXPECT_TRUE(rec.spread_calls.empty());
}

TEST(StatementTest, MastersScatterWriteOverTheChainLimitGoesThroughOneCoordinator) {  // 13
    Recorder rec;
    rec.ranges_a = {{1, 100}};
    rec.ranges_b = {{101, 300}};
    StatementInfo st = sharded();
    st.write = true;
    st.scatter_masters = true;
    st.prune_by_bucket_id = true;
    st.where_chains = 3;
    StatementRoute r = route_statement(st, rec.lookups());
    ASSERT_EQ(r.targets.size(), 1u);
    EXPECT_EQ(r.targets[0].address, "c:1");
    EXPECT_EQ(r.retry, Retry::Write);
    EXPECT_EQ(r.description,
              "scatter 'masters': the buckets of b:1 expand the WHERE clause to 600 OR-of-AND "
              "chains, more than Picodata expands (513); scatter through coordinator c:1");
}

TEST(StatementTest, MastersScatterOfAWholeDefaultTierReadsInStatementsOf513Buckets) {  // 13
    Recorder rec;  // 2000 and 1000 buckets: a plain scan is over 513 chains at each master
    StatementInfo st = sharded();
    st.scatter_masters = true;
    st.prune_by_bucket_id = true;
    StatementRoute r = route_statement(st, rec.lookups());
    ASSERT_EQ(r.targets.size(), 6u);  // 4 statements for a:1, 2 for b:1
    for (const Target &t : r.targets)
        EXPECT_LE(dnf_chains(1, t), 513u);
    EXPECT_EQ(dnf_chains(1, r.targets[0]), 513u);
    EXPECT_NE(r.description.find("in 4 statements"), std::string::npos) << r.description;
}

TEST(StatementTest, MastersScatterWithAWhereClauseOverTheLimitGoesThroughOneCoordinator) {
    Recorder rec;
    rec.ranges_a = {{1, 10}};
    rec.ranges_b = {{11, 20}};
    StatementInfo st = sharded();
    st.scatter_masters = true;
    st.prune_by_bucket_id = true;
    st.where_chains = 600;  // over the limit with one bucket: no split helps
    StatementRoute r = route_statement(st, rec.lookups());
    ASSERT_EQ(r.targets.size(), 1u);
    EXPECT_EQ(r.targets[0].address, "c:1");
}

TEST(StatementTest, SplitByChainsCoversEveryBucketOnceWithinTheLimit) {
    Target a;
    a.address = "a:1";
    a.ranges = {{1, 3}, {10, 12}, {20, 20}};  // 7 buckets
    Target b;
    b.address = "b:1";
    b.ranges = {{4, 9}};  // 6 buckets
    Target c;             // no ranges: kept as it is
    c.address = "c:1";
    // 513 / 200 = 2 buckets a statement
    // In turns: every master's first piece, then every second one, ...
    std::vector<Target> pieces = split_by_chains({a, b, c}, 200);
    std::vector<std::string> got;
    for (const Target &p : pieces) {
        std::string text = p.address + ":";
        for (const auto &[s, e] : p.ranges)
            text += " " + std::to_string(s) + "-" + std::to_string(e);
        got.push_back(text);
        EXPECT_LE(dnf_chains(200, p), 513u);
    }
    EXPECT_EQ(got, (std::vector<std::string>{"a:1: 1-2", "b:1: 4-5", "c:1:", "a:1: 3-3 10-10",
                                             "b:1: 6-7", "a:1: 11-12", "b:1: 8-9", "a:1: 20-20"}));
    // Within the limit: one target per master, unchanged.
    pieces = split_by_chains({a, b}, 1);
    ASSERT_EQ(pieces.size(), 2u);
    EXPECT_EQ(pieces[0].ranges, a.ranges);
    EXPECT_EQ(pieces[1].ranges, b.ranges);
    // The last bucket of the id space does not wrap around.
    Target top;
    top.address = "t:1";
    top.ranges = {{UINT32_MAX - 2, UINT32_MAX}};
    pieces = split_by_chains({top}, 256);  // 2 buckets a statement
    ASSERT_EQ(pieces.size(), 2u);
    EXPECT_EQ(pieces[1].ranges,
              (std::vector<std::pair<uint32_t, uint32_t>>{{UINT32_MAX, UINT32_MAX}}));
}

TEST(StatementTest, MastersScatterIsNeverCombinedWithAKeyList) {  // 13
    Recorder rec;
    rec.ranges_a = {{1, 10}};
    rec.ranges_b = {{11, 20}};
    // More key combinations than the cap: the statement goes out without routing by its key, but
    // its key list is still in the WHERE clause.
    StatementInfo st = sharded(
        encoded_key_values({std::vector<std::string>(kMaxKeyCombinations + 1, int_bytes(1))}));
    st.scatter_masters = true;
    st.prune_by_bucket_id = true;
    StatementRoute r = route_statement(st, rec.lookups());
    ASSERT_EQ(r.targets.size(), 1u);
    EXPECT_EQ(r.targets[0].address, "c:1");
    EXPECT_EQ(r.description,
              "scatter 'masters' is not combined with a list of sharding keys; scatter through "
              "coordinator c:1");
}

TEST(StatementTest, DnfChainsCountEveryBucketOfTheList) {
    Target t;
    EXPECT_EQ(dnf_chains(1, t), 1u);  // no filter
    EXPECT_EQ(dnf_chains(7, t), 7u);
    t.buckets = {5, 9};
    EXPECT_EQ(dnf_chains(1, t), 2u);
    EXPECT_EQ(dnf_chains(100, t), 200u);  // (k IN (100 keys)) AND bucket_id IN (2 buckets)
    Target m;
    m.ranges = {{1, 1500}, {3000, 3000}};
    EXPECT_EQ(dnf_chains(1, m), 1501u);
    EXPECT_EQ(dnf_chains(SIZE_MAX / 2, m), SIZE_MAX);  // saturates
}

TEST(StatementTest, NoKeyGoesThroughACoordinator) {  // 14
    Recorder rec;
    StatementInfo st = sharded();
    st.read_pref = ReadPref::Replica;
    StatementRoute r = route_statement(st, rec.lookups());
    EXPECT_EQ(r.description, "scatter through coordinator c:1");
    EXPECT_TRUE(r.keyless);
    ASSERT_EQ(rec.spread_calls.size(), 1u);
    EXPECT_EQ(rec.spread_calls[0], std::make_pair(ReadPref::Replica, false));
}

TEST(StatementTest, AConversionErrorPropagates) {  // 15
    Recorder rec;
    KeyValues keys;
    keys.counts = {1};
    keys.encode = [](size_t, size_t) -> std::string { throw std::runtime_error("bad key"); };
    EXPECT_THROW(route_statement(sharded(keys), rec.lookups()), std::runtime_error);
}

TEST(StatementTest, AKeyPicodataHashesDifferentlyGoesThroughACoordinator) {  // 17
    Recorder rec;
    KeyValues keys;
    keys.counts = {2};
    keys.encode = [](size_t, size_t) -> std::string { throw std::logic_error("not encoded"); };
    StatementInfo st = sharded(keys);
    st.hashing_disagrees = true;
    st.read_pref = ReadPref::Replica;
    StatementRoute r = route_statement(st, rec.lookups());
    ASSERT_EQ(r.targets.size(), 1u);
    EXPECT_EQ(r.targets[0].address, "c:1");
    EXPECT_TRUE(r.targets[0].buckets.empty());
    EXPECT_FALSE(r.keyless);
    EXPECT_EQ(r.retry, Retry::Read);
    EXPECT_EQ(r.description,
              "Picodata hashes this sharding key differently (picoroute_route_checks): through "
              "coordinator c:1, which routes it by its own hashing");
    EXPECT_TRUE(rec.group_calls.empty());
    ASSERT_EQ(rec.spread_calls.size(), 1u);
    EXPECT_EQ(rec.spread_calls[0], std::make_pair(ReadPref::Replica, false));

    // A write asks for a leader and keeps its retry rule.
    st.write = true;
    r = route_statement(st, rec.lookups());
    EXPECT_EQ(r.retry, Retry::Write);
    EXPECT_EQ(rec.spread_calls.back(), std::make_pair(ReadPref::Leader, true));

    // A key with no value still sends nothing; a statement without keys is not concerned.
    st.keys = encoded_key_values({{}});
    EXPECT_TRUE(route_statement(st, rec.lookups()).targets.empty());
    st.keys.reset();
    st.write = false;
    EXPECT_EQ(route_statement(st, rec.lookups()).description, "scatter through coordinator c:1");
}

}  // namespace
}  // namespace picoroute::routing
