// The named-statement policy of a connection: prepared on second use, LRU eviction with the names
// to close, refused and invalidated statements, capacity 0.
#include "core/statement_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace picoroute {
namespace {

using Kind = StatementCache::Use::Kind;

// Uses `sql` and completes a Prepare as the instance would accept it.
StatementCache::Use run(StatementCache &cache, const std::string &sql, size_t capacity) {
    StatementCache::Use use = cache.use(sql, capacity);
    if (use.kind == Kind::Prepare)
        cache.prepared(sql, use.name);
    return use;
}

TEST(StatementCacheTest, PreparedOnSecondUseThenExecuted) {
    StatementCache cache;
    EXPECT_EQ(run(cache, "q1", 4).kind, Kind::Unnamed);
    StatementCache::Use second = run(cache, "q1", 4);
    EXPECT_EQ(second.kind, Kind::Prepare);
    EXPECT_EQ(second.name, "picoroute_1");
    StatementCache::Use third = run(cache, "q1", 4);
    EXPECT_EQ(third.kind, Kind::Execute);
    EXPECT_EQ(third.name, "picoroute_1");
    EXPECT_FALSE(cache.has_to_close());
}

TEST(StatementCacheTest, EvictsTheLeastRecentlyUsedAndClosesItsName) {
    StatementCache cache;
    for (const char *sql : {"a", "a", "b", "b"})  // a -> picoroute_1, b -> picoroute_2
        run(cache, sql, 2);
    run(cache, "a", 2);  // a is now the most recently used
    EXPECT_EQ(cache.use("c", 2).kind, Kind::Unnamed);
    EXPECT_TRUE(cache.contains("a"));
    EXPECT_FALSE(cache.contains("b"));
    EXPECT_EQ(cache.take_to_close(), std::vector<std::string>({"picoroute_2"}));
    EXPECT_FALSE(cache.has_to_close());
    EXPECT_EQ(cache.size(), 2u);
}

TEST(StatementCacheTest, AnEvictedTextThatWasNeverPreparedClosesNothing) {
    StatementCache cache;
    run(cache, "a", 1);
    run(cache, "b", 1);
    EXPECT_FALSE(cache.contains("a"));
    EXPECT_FALSE(cache.has_to_close());
    EXPECT_EQ(run(cache, "a", 1).kind, Kind::Unnamed);  // seen again as new
}

TEST(StatementCacheTest, CapacityZeroSendsUnnamedAndEmptiesTheCache) {
    StatementCache cache;
    run(cache, "a", 4);
    run(cache, "a", 4);  // picoroute_1
    run(cache, "b", 4);
    EXPECT_EQ(cache.use("a", 0).kind, Kind::Unnamed);
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_EQ(cache.take_to_close(), std::vector<std::string>({"picoroute_1"}));
    EXPECT_EQ(cache.use("a", 0).kind, Kind::Unnamed);
}

TEST(StatementCacheTest, ALowerCapacityShrinksAtTheNextNewText) {
    StatementCache cache;
    for (const char *sql : {"a", "a", "b", "b", "c", "c"})
        run(cache, sql, 3);
    EXPECT_EQ(run(cache, "a", 1).kind, Kind::Execute);  // known texts do not shrink the cache
    EXPECT_EQ(cache.size(), 3u);
    run(cache, "d", 1);
    EXPECT_EQ(cache.size(), 1u);
    EXPECT_EQ(cache.take_to_close(),
              std::vector<std::string>({"picoroute_2", "picoroute_3", "picoroute_1"}));
}

TEST(StatementCacheTest, ARefusedParseAlwaysGoesUnnamed) {
    StatementCache cache;
    cache.use("bad", 4);
    StatementCache::Use use = cache.use("bad", 4);
    ASSERT_EQ(use.kind, Kind::Prepare);
    cache.prepare_failed("bad");
    EXPECT_EQ(cache.use("bad", 4).kind, Kind::Unnamed);
    EXPECT_EQ(cache.use("bad", 4).kind, Kind::Unnamed);
    EXPECT_FALSE(cache.has_to_close());
}

TEST(StatementCacheTest, AnInvalidatedStatementIsPreparedAgainUnderANewName) {
    StatementCache cache;
    run(cache, "q", 4);
    run(cache, "q", 4);  // picoroute_1
    EXPECT_TRUE(cache.invalidated("q", "picoroute_1"));
    StatementCache::Use again = cache.use("q", 4);
    EXPECT_EQ(again.kind, Kind::Prepare);
    EXPECT_EQ(again.name, "picoroute_2");
    EXPECT_EQ(cache.take_to_close(), std::vector<std::string>({"picoroute_1"}));
    cache.prepared("q", again.name);
    EXPECT_EQ(cache.use("q", 4).kind, Kind::Execute);
}

TEST(StatementCacheTest, AnInvalidationOfAnotherNameOrAnUnknownTextChangesNothing) {
    StatementCache cache;
    run(cache, "q", 4);
    run(cache, "q", 4);  // picoroute_1
    EXPECT_TRUE(cache.invalidated("q", "picoroute_9"));
    EXPECT_EQ(cache.use("q", 4).kind, Kind::Execute);
    EXPECT_FALSE(cache.invalidated("other", "picoroute_1"));
}

TEST(StatementCacheTest, APrepareInterruptedBeforeItsOutcomeIsTriedAgain) {
    StatementCache cache;
    cache.use("q", 4);
    ASSERT_EQ(cache.use("q", 4).kind, Kind::Prepare);  // the connection broke: no outcome
    StatementCache::Use retry = cache.use("q", 4);
    EXPECT_EQ(retry.kind, Kind::Prepare);
    EXPECT_EQ(retry.name, "picoroute_2");
}

TEST(StatementCacheTest, ANamePreparedForATextEvictedMeanwhileIsClosed) {
    StatementCache cache;
    cache.use("q", 1);
    StatementCache::Use use = cache.use("q", 1);
    cache.use("other", 1);  // evicts q before its Parse completed
    cache.prepared("q", use.name);
    EXPECT_EQ(cache.take_to_close(), std::vector<std::string>({use.name}));
}

TEST(StatementCacheTest, StorageFullClosesEveryNameAndGoesUnnamed) {
    StatementCache cache;
    for (const char *sql : {"a", "a", "b", "b"})  // a -> picoroute_1, b -> picoroute_2
        run(cache, sql, 8);
    StatementCache::Use c = cache.use("c", 8);
    EXPECT_EQ(c.kind, Kind::Unnamed);
    c = cache.use("c", 8);
    ASSERT_EQ(c.kind, Kind::Prepare);
    EXPECT_TRUE(cache.storage_full());  // the instance refused the Parse of c: names to close
    EXPECT_TRUE(cache.is_storage_full());
    std::vector<std::string> closed = cache.take_to_close();
    std::sort(closed.begin(), closed.end());
    EXPECT_EQ(closed, (std::vector<std::string>{"picoroute_1", "picoroute_2"}));
    EXPECT_EQ(cache.size(), 0u);
    for (const char *sql : {"a", "b", "c", "c", "c"})
        EXPECT_EQ(run(cache, sql, 8).kind, Kind::Unnamed) << sql;
    EXPECT_FALSE(cache.has_to_close());
    EXPECT_EQ(cache.size(), 0u);
    EXPECT_FALSE(cache.storage_full());  // refused again: nothing left to give back
}

TEST(StatementCacheTest, StorageFullWithNothingPreparedHasNothingToGiveBack) {
    StatementCache cache;
    cache.use("a", 4);  // unnamed, its Parse refused for lack of storage
    EXPECT_FALSE(cache.storage_full());
    EXPECT_TRUE(cache.is_storage_full());
    EXPECT_EQ(cache.use("a", 4).kind, Kind::Unnamed);
}

TEST(StatementCacheTest, APrepareAcceptedAfterStorageFullIsClosed) {
    StatementCache cache;
    cache.use("a", 4);
    StatementCache::Use a = cache.use("a", 4);
    ASSERT_EQ(a.kind, Kind::Prepare);
    cache.storage_full();
    cache.prepared("a", a.name);  // an answer that crossed the refusal: nothing will use it
    EXPECT_EQ(cache.take_to_close(), std::vector<std::string>{a.name});
}

}  // namespace
}  // namespace picoroute
