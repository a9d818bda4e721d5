// The chunk plan of a bounded keyless read: consecutive bucket ranges covering every bucket, each
// within the bound, and the split of a chunk that exceeded it.
#include "core/chunk_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace picoroute {
using chunks::BucketCount;
using chunks::Chunk;
using chunks::plan_chunks;
using chunks::split_chunk;

namespace {

// The plan as (first, last, rows) triples.
std::vector<std::vector<uint64_t>> ranges(const chunks::ChunkPlan &plan) {
    std::vector<std::vector<uint64_t>> out;
    for (const Chunk &c : plan.chunks)
        out.push_back({c.first, c.last, c.rows});
    return out;
}

using Ranges = std::vector<std::vector<uint64_t>>;

TEST(ChunkPlan, EmptyTableIsOneChunkOverEveryBucket) {
    auto plan = plan_chunks({}, 4000, 3000);
    EXPECT_FALSE(plan.too_large);
    EXPECT_EQ(ranges(plan), (Ranges{{1, 3000, 0}}));
    // Buckets counted with no row change nothing.
    EXPECT_EQ(ranges(plan_chunks({{5, 0}, {7, 0}}, 4000, 3000)), (Ranges{{1, 3000, 0}}));
}

TEST(ChunkPlan, EverythingInOneBucketWithinTheBound) {
    auto plan = plan_chunks({{1500, 4000}}, 4000, 3000);
    EXPECT_FALSE(plan.too_large);
    EXPECT_EQ(ranges(plan), (Ranges{{1, 3000, 4000}}));
}

TEST(ChunkPlan, ABucketOverTheBoundCannotBeRead) {
    auto plan = plan_chunks({{3, 10}, {1500, 4001}, {2000, 10}}, 4000, 3000);
    ASSERT_TRUE(plan.too_large);
    EXPECT_EQ(plan.too_large->bucket, 1500u);
    EXPECT_EQ(plan.too_large->rows, 4001u);
    EXPECT_TRUE(plan.chunks.empty());
    // A bucket given twice counts the sum (two answers for one bucket).
    auto twice = plan_chunks({{9, 3}, {9, 3}}, 5, 10);
    ASSERT_TRUE(twice.too_large);
    EXPECT_EQ(twice.too_large->rows, 6u);
}

TEST(ChunkPlan, UnevenCountsAreCutWhereTheNextBucketWouldNotFit) {
    // 10 + 60 > 50: the first chunk ends before bucket 4; 60 alone is over 50 -> too large.
    EXPECT_TRUE(plan_chunks({{2, 10}, {4, 60}}, 50, 10).too_large);
    auto plan = plan_chunks({{9, 5}, {2, 30}, {4, 20}, {5, 1}, {7, 49}}, 50, 10);
    EXPECT_FALSE(plan.too_large);
    EXPECT_EQ(ranges(plan), (Ranges{{1, 4, 50}, {5, 8, 50}, {9, 10, 5}}));
    uint64_t total = 0;
    for (const Chunk &c : plan.chunks) {
        EXPECT_LE(c.rows, 50u);
        total += c.rows;
    }
    EXPECT_EQ(total, 105u);
}

TEST(ChunkPlan, BoundOneReadsOneBucketPerChunk) {
    auto plan = plan_chunks({{1, 1}, {2, 1}, {5, 1}}, 1, 6);
    EXPECT_EQ(ranges(plan), (Ranges{{1, 1, 1}, {2, 4, 1}, {5, 6, 1}}));
    EXPECT_TRUE(plan_chunks({{2, 2}}, 1, 6).too_large);
    // A bound of 0 is taken as 1.
    EXPECT_EQ(ranges(plan_chunks({{1, 1}, {2, 1}}, 0, 2)), (Ranges{{1, 1, 1}, {2, 2, 1}}));
}

TEST(ChunkPlan, RangesWithGapsStillCoverEveryBucketOnce) {
    // Rows only in far-apart buckets: the empty buckets between them belong to some chunk, so a
    // row inserted there while the chunks are read can be seen, and none is read twice.
    auto plan = plan_chunks({{100, 3}, {2000, 3}, {2999, 3}}, 4, 3000);
    EXPECT_EQ(ranges(plan), (Ranges{{1, 1999, 3}, {2000, 2998, 3}, {2999, 3000, 3}}));
    uint32_t next = 1;
    for (const Chunk &c : plan.chunks) {
        EXPECT_EQ(c.first, next);
        EXPECT_GE(c.last, c.first);
        next = c.last + 1;
    }
    EXPECT_EQ(next, 3001u);
    // A counted bucket beyond bucket_count extends the last chunk.
    EXPECT_EQ(ranges(plan_chunks({{12, 1}}, 4, 10)), (Ranges{{1, 12, 1}}));
}

TEST(ChunkPlan, SplitHalvesARangeAndNeverOneBucket) {
    auto halves = split_chunk(Chunk{1, 3000, 5000});
    ASSERT_TRUE(halves);
    EXPECT_EQ(halves->first.first, 1u);
    EXPECT_EQ(halves->first.last, 1500u);
    EXPECT_EQ(halves->second.first, 1501u);
    EXPECT_EQ(halves->second.last, 3000u);
    auto two = split_chunk(Chunk{7, 8, 0});
    ASSERT_TRUE(two);
    EXPECT_EQ(two->first.last, 7u);
    EXPECT_EQ(two->second.first, 8u);
    EXPECT_FALSE(split_chunk(Chunk{7, 7, 9}));
    // The largest bucket numbers do not overflow.
    auto top = split_chunk(Chunk{4294967294u, 4294967295u, 0});
    ASSERT_TRUE(top);
    EXPECT_EQ(top->second.last, 4294967295u);
}

}  // namespace
}  // namespace picoroute
