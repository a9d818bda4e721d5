// The log-scale latency buckets of picoroute_stat_instances and the percentiles computed from them.
#include "core/latency_histogram.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace picoroute {
namespace {

TEST(LatencyHistogram, BucketsTileTheRangeWithoutGaps) {
    EXPECT_EQ(latency_bucket_lower(0), 0u);
    for (size_t i = 0; i + 1 < kLatencyBuckets; i++) {
        EXPECT_LT(latency_bucket_lower(i), latency_bucket_upper(i)) << i;
        EXPECT_EQ(latency_bucket_upper(i), latency_bucket_lower(i + 1)) << i;
    }
    EXPECT_EQ(latency_bucket_upper(kLatencyBuckets - 1), UINT64_MAX);
    EXPECT_EQ(kLatencyBuckets, 94u);
}

TEST(LatencyHistogram, EveryValueFallsBetweenItsBucketsBounds) {
    std::vector<uint64_t> values = {0,
                                    1,
                                    15,
                                    16,
                                    17,
                                    19,
                                    20,
                                    23,
                                    24,
                                    31,
                                    32,
                                    100,
                                    999,
                                    1000,
                                    1023,
                                    1024,
                                    4096,
                                    123456,
                                    (1u << 27) - 1,
                                    1u << 27,
                                    UINT64_MAX};
    for (uint64_t v = 1; v < (uint64_t{1} << 40); v = v * 3 + 1)
        values.push_back(v);
    for (uint64_t v : values) {
        size_t b = latency_bucket(v);
        ASSERT_LT(b, kLatencyBuckets) << v;
        EXPECT_GE(v, latency_bucket_lower(b)) << v;
        if (b + 1 < kLatencyBuckets) {  // the last bucket has no upper bound
            EXPECT_LT(v, latency_bucket_upper(b)) << v;
        }
    }
    EXPECT_EQ(latency_bucket(15), 0u);
    EXPECT_EQ(latency_bucket(16), 1u);
    EXPECT_EQ(latency_bucket(20), 2u);  // [20, 24): the second quarter of [16, 32)
    EXPECT_EQ(latency_bucket(UINT64_MAX), kLatencyBuckets - 1);
}

TEST(LatencyHistogram, BucketsAreAtMostAQuarterWiderThanTheirStart) {
    for (size_t i = 1; i + 1 < kLatencyBuckets; i++) {
        double lower = static_cast<double>(latency_bucket_lower(i));
        double width = static_cast<double>(latency_bucket_upper(i)) - lower;
        EXPECT_LE(width / lower, 0.25 + 1e-12) << i;
    }
}

TEST(LatencyHistogram, NoPercentileOfNothing) {
    std::vector<uint64_t> counts(kLatencyBuckets, 0);
    EXPECT_FALSE(latency_percentile(counts.data(), 0.5).has_value());
}

TEST(LatencyHistogram, PercentilesOfAUniformLoadAreCloseToTheTruth) {
    // 1 ms to 10 ms in steps of 1 us: the true p-th percentile is 1000 + p * 9000 us. The answers
    // fill most of their buckets, so the interpolation is off by a few percent (the last bucket,
    // [8192, 10240), is filled up to 9999 only: p99 reads about 2.3% high).
    std::vector<uint64_t> counts(kLatencyBuckets, 0);
    for (uint64_t us = 1000; us < 10000; us++)
        counts[latency_bucket(us)]++;
    for (double p : {0.5, 0.95, 0.99}) {
        double truth = 1000 + p * 9000;
        std::optional<double> got = latency_percentile(counts.data(), p);
        ASSERT_TRUE(got.has_value());
        EXPECT_NEAR(*got, truth, truth * 0.03) << p;
    }
}

TEST(LatencyHistogram, ATailShowsInTheHighPercentilesOnly) {
    // 980 answers at about 200 us, 20 at about 50 ms: p50 and p95 stay low, p99 is in the tail.
    std::vector<uint64_t> counts(kLatencyBuckets, 0);
    counts[latency_bucket(200)] += 980;
    counts[latency_bucket(50000)] += 20;
    double p50 = *latency_percentile(counts.data(), 0.5);
    double p95 = *latency_percentile(counts.data(), 0.95);
    double p99 = *latency_percentile(counts.data(), 0.99);
    EXPECT_GE(p50, 192);
    EXPECT_LT(p50, 224);
    EXPECT_LT(p95, 224);
    EXPECT_GE(p99, 49152);
    EXPECT_LT(p99, 57344);
    EXPECT_LE(p50, p95);
    EXPECT_LE(p95, p99);
}

TEST(LatencyHistogram, ThePercentileInTheLastBucketIsItsLowerBound) {
    std::vector<uint64_t> counts(kLatencyBuckets, 0);
    counts[kLatencyBuckets - 1] = 3;
    EXPECT_EQ(*latency_percentile(counts.data(), 0.99), static_cast<double>(1u << 27));
    // The extremes: 0 gives the lowest bucket's start, 1 its end.
    std::vector<uint64_t> one(kLatencyBuckets, 0);
    one[latency_bucket(1000)] = 1;
    EXPECT_EQ(*latency_percentile(one.data(), 0.0),
              static_cast<double>(latency_bucket_lower(latency_bucket(1000))));
    EXPECT_EQ(*latency_percentile(one.data(), 1.0),
              static_cast<double>(latency_bucket_upper(latency_bucket(1000))));
}

}  // namespace
}  // namespace picoroute
