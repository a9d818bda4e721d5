// Bounded keyless reads: the chunk plan (see chunk_plan.h).
#include "core/chunk_plan.h"

#include <algorithm>

namespace picoroute::chunks {

namespace {

// The counts sorted by bucket, a bucket's repeated entries added up, the buckets with no row
// dropped.
std::vector<BucketCount> merged(std::vector<BucketCount> counts) {
    std::sort(counts.begin(), counts.end(),
              [](const BucketCount &a, const BucketCount &b) { return a.bucket < b.bucket; });
    std::vector<BucketCount> out;
    for (const BucketCount &c : counts) {
        if (c.rows == 0)
            continue;
        if (!out.empty() && out.back().bucket == c.bucket)
            out.back().rows += c.rows;
        else
            out.push_back(c);
    }
    return out;
}

}  // namespace

ChunkPlan plan_chunks(std::vector<BucketCount> counts, uint64_t bound, uint32_t bucket_count) {
    ChunkPlan plan;
    bound = std::max<uint64_t>(bound, 1);
    uint32_t first_bucket = 1;
    uint32_t last_bucket = std::max<uint32_t>(bucket_count, 1);
    std::vector<BucketCount> sorted = merged(std::move(counts));
    for (const BucketCount &c : sorted) {
        if (c.rows > bound) {
            plan.too_large = c;
            return plan;
        }
    }
    // Greedy: each chunk takes the following buckets while their rows fit; it starts where the
    // previous one ended, so that every bucket (counted or not) is in exactly one chunk.
    Chunk current{first_bucket, first_bucket, 0};
    for (const BucketCount &c : sorted) {
        if (current.rows > 0 && current.rows + c.rows > bound) {
            current.last = c.bucket > current.first ? c.bucket - 1 : current.first;
            plan.chunks.push_back(current);
            current = Chunk{c.bucket, c.bucket, 0};
        }
        current.rows += c.rows;
    }
    current.last = std::max(last_bucket, current.first);
    for (const BucketCount &c : sorted)
        current.last = std::max(current.last, c.bucket);
    plan.chunks.push_back(current);
    return plan;
}

std::optional<std::pair<Chunk, Chunk>> split_chunk(const Chunk &chunk) {
    if (chunk.last <= chunk.first)
        return std::nullopt;
    uint32_t mid = chunk.first + (chunk.last - chunk.first) / 2;
    return std::make_pair(Chunk{chunk.first, mid, 0}, Chunk{mid + 1, chunk.last, 0});
}

}  // namespace picoroute::chunks
