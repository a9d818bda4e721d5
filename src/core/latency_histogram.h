// The latency histogram of picoroute_stat_instances: fixed log-scale buckets of microseconds, so
// that every backend adds to the same shared counters with one atomic increment, and the
// percentiles computed from the counts when the view is read.
//
// Bucket 0 holds [0, 16 us). Each power of two from 16 us to 2^27 us (about 134 s) is cut into 4
// equal buckets: a latency lands in a bucket at most 25% wider than its lower bound, and a
// percentile interpolated in it is off by less than that. The last bucket holds everything from
// 2^27 us on; a percentile that falls there is reported as its lower bound.
#pragma once
#include "core/firewall.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace picoroute {

inline constexpr unsigned kLatencySubBuckets = 4;   // per power of two
inline constexpr unsigned kLatencyFirstOctave = 4;  // 2^4 us = 16 us: the end of bucket 0
inline constexpr unsigned kLatencyLastOctave = 27;  // 2^27 us: the start of the last bucket
inline constexpr size_t kLatencyBuckets =
    1 + (kLatencyLastOctave - kLatencyFirstOctave) * kLatencySubBuckets + 1;

// The bucket of a latency of `micros` microseconds.
size_t latency_bucket(uint64_t micros);
// The bucket's bounds in microseconds: [lower, upper); the last bucket's upper bound is
// UINT64_MAX (unbounded).
uint64_t latency_bucket_lower(size_t bucket);
uint64_t latency_bucket_upper(size_t bucket);

// The latency below which `fraction` (0 to 1) of the counted latencies fall, in microseconds,
// interpolated linearly inside the bucket where that rank falls; std::nullopt when nothing was
// counted. `counts` has kLatencyBuckets entries.
std::optional<double> latency_percentile(const uint64_t *counts, double fraction);

}  // namespace picoroute
