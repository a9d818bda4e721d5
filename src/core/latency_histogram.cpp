// Log-scale latency buckets and percentiles (see latency_histogram.h).
#include "core/latency_histogram.h"

#include <algorithm>

namespace picoroute {

namespace {

unsigned highest_bit(uint64_t v) {
    return 63u - static_cast<unsigned>(__builtin_clzll(v));
}

}  // namespace

size_t latency_bucket(uint64_t micros) {
    if (micros < (uint64_t{1} << kLatencyFirstOctave))
        return 0;
    unsigned octave = highest_bit(micros);
    if (octave >= kLatencyLastOctave)
        return kLatencyBuckets - 1;
    // The two bits under the highest one choose the quarter of the octave.
    unsigned shift = octave - 2;
    size_t sub = static_cast<size_t>((micros >> shift) & (kLatencySubBuckets - 1));
    return 1 + (octave - kLatencyFirstOctave) * kLatencySubBuckets + sub;
}

uint64_t latency_bucket_lower(size_t bucket) {
    if (bucket == 0)
        return 0;
    if (bucket >= kLatencyBuckets - 1)
        return uint64_t{1} << kLatencyLastOctave;
    unsigned octave =
        kLatencyFirstOctave + static_cast<unsigned>((bucket - 1) / kLatencySubBuckets);
    uint64_t sub = (bucket - 1) % kLatencySubBuckets;
    return (uint64_t{1} << octave) + sub * (uint64_t{1} << (octave - 2));
}

uint64_t latency_bucket_upper(size_t bucket) {
    if (bucket >= kLatencyBuckets - 1)
        return UINT64_MAX;
    return latency_bucket_lower(bucket + 1);
}

std::optional<double> latency_percentile(const uint64_t *counts, double fraction) {
    uint64_t total = 0;
    for (size_t i = 0; i < kLatencyBuckets; i++)
        total += counts[i];
    if (total == 0)
        return std::nullopt;
    fraction = std::clamp(fraction, 0.0, 1.0);
    double rank = fraction * static_cast<double>(total);
    uint64_t below = 0;  // counted in the buckets before i
    for (size_t i = 0; i < kLatencyBuckets; i++) {
        if (counts[i] == 0)
            continue;
        if (static_cast<double>(below + counts[i]) >= rank) {
            double lower = static_cast<double>(latency_bucket_lower(i));
            if (i == kLatencyBuckets - 1)
                return lower;
            double width = static_cast<double>(latency_bucket_upper(i)) - lower;
            double inside = (rank - static_cast<double>(below)) / static_cast<double>(counts[i]);
            return lower + std::max(0.0, inside) * width;
        }
        below += counts[i];
    }
    return static_cast<double>(latency_bucket_lower(kLatencyBuckets - 1));
}

}  // namespace picoroute
