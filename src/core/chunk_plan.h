// Bounded keyless reads: a read without a sharding key whose answer is larger than the row bound a
// coordinator may gather is read again in chunks of consecutive buckets. The plan is made from the
// row count of each bucket (one GROUP BY bucket_id statement); a chunk that still exceeds the
// bound when read (rows inserted meanwhile) is split in two. Pure decisions, no server.
#pragma once
#include "core/firewall.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace picoroute::chunks {

// The rows of one bucket that match the read's conditions.
struct BucketCount {
    uint32_t bucket = 0;
    uint64_t rows = 0;
};

// A range of buckets read by one statement: first..last, both included; `rows` as counted.
struct Chunk {
    uint32_t first = 0;
    uint32_t last = 0;
    uint64_t rows = 0;
};

struct ChunkPlan {
    // Consecutive ranges that together cover buckets 1..bucket_count, in order, each counted at
    // most `bound` rows (a range without counted rows is part of its neighbour).
    std::vector<Chunk> chunks;
    // Set when one bucket alone holds more than `bound` rows: no chunk can read it (and `chunks`
    // is empty).
    std::optional<BucketCount> too_large;
};

// The chunks for `counts` (buckets 1..bucket_count in any order; a bucket given twice counts the
// sum; a larger bucket extends the last chunk) under `bound` rows per chunk (0 is taken as 1).
// No counted rows: one chunk over every bucket.
ChunkPlan plan_chunks(std::vector<BucketCount> counts, uint64_t bound, uint32_t bucket_count);

// The two halves of a chunk that exceeded the bound when read: first..mid and mid+1..last (their
// counts unknown, 0). None for a chunk of one bucket, which cannot be split.
std::optional<std::pair<Chunk, Chunk>> split_chunk(const Chunk &chunk);

}  // namespace picoroute::chunks
