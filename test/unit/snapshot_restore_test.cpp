// Snapshot image -> topology model: rebuilding the model from an image reproduces the image byte
// for byte, and the rebuilt model keeps applying events as the original would.
#include "core/errors.h"
#include "core/snapshot.h"
#include "core/snapshot_restore.h"
#include "core/topology.h"
#include "event_builders.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace picoroute {
using namespace picoroute::testing;

namespace {

const SnapshotLimits kLimits{64, 32, 1024};

Topology build(const std::vector<Event> &events) {
    Topology topology;
    for (const Event &event : events) {
        topology.apply(event);
    }
    return topology;
}

// Image -> model -> image; returns the rebuilt model.
Topology round_trip(const Topology &original) {
    const std::string image = build_snapshot(original, kLimits);
    SnapshotView view(image.data(), image.size());
    Topology restored = topology_from_snapshot(view);
    const std::string again = build_snapshot(restored, kLimits);
    EXPECT_EQ(again, image);
    return restored;
}

// Three replicasets with two instances each, ranges of two tiers, names and addresses.
Topology full_cluster() {
    return build({
        tier("default", 3000),
        tier("cold", 100),
        replicaset("r1", "default", "i1a", "r1_name"),
        replicaset("r2", "default", "i2a", "r2_name"),
        replicaset("r3", "cold", "i3a", "r3_name"),
        instance("i1a", "r1", "Online", "10.0.0.1:4327", "i1a_name"),
        instance("i1b", "r1", "Offline", "10.0.0.2:4327", "i1b_name"),
        instance("i2a", "r2", "Online", "10.0.0.3:4327", "i2a_name"),
        instance("i2b", "r2", "Online", "10.0.0.4:4327"),
        instance("i3a", "r3", "Online", "10.0.0.5:4327"),
        bucket("default", 1, 1500, "r1"),
        bucket("default", 1501, 3000, "r2", "sending"),
        bucket("cold", 1, 100, "r3"),
    });
}

TEST(SnapshotRestore, EmptyTopology) {
    Topology restored = round_trip(Topology());
    EXPECT_EQ(restored, Topology());
}

TEST(SnapshotRestore, FullClusterIsRebuiltExactly) {
    const Topology original = full_cluster();
    Topology restored = round_trip(original);
    EXPECT_EQ(restored, original);
    ASSERT_NE(restored.find_bucket_master("default", 2000), nullptr);
    EXPECT_EQ(restored.find_bucket_master("default", 2000)->uuid, "i2a");
}

TEST(SnapshotRestore, SeedCaseReplicasetRemovedMidway) {
    // Seed 000, replicaset removed: R2 deleted, the map cleared, R1's new range applied.
    Topology topology = build({
        tier("default", 3000),
        replicaset("r1", "default", "i1"),
        replicaset("r2", "default", "i2"),
        replicaset("r3", "default", "i3"),
        instance("i1", "r1", "Online", "h1:1"),
        instance("i2", "r2", "Online", "h2:1"),
        instance("i3", "r3", "Online", "h3:1"),
        bucket("default", 1, 1000, "r1"),
        bucket("default", 1001, 2000, "r2"),
        bucket("default", 2001, 3000, "r3"),
        replicaset_delete("r2"),
        bucket("default", 1, 1500, "r1"),
    });
    Topology restored = round_trip(topology);
    EXPECT_EQ(restored, topology);
    // The next event of the case applies to the rebuilt model as to the original.
    topology.apply(bucket("default", 1501, 3000, "r3"));
    restored.apply(bucket("default", 1501, 3000, "r3"));
    EXPECT_EQ(restored, topology);
}

TEST(SnapshotRestore, TwoTiersAndAWeightChangeMidway) {
    Topology topology = build({
        tier("T1", 3000), tier("T2", 3000), replicaset("r1", "T1", "i1"),
        replicaset("r2", "T1", "i2"), replicaset("r3", "T2", "i3"),
        instance("i1", "r1", "Online", "h1:1"), instance("i2", "r2", "Online", "h2:1"),
        instance("i3", "r3", "Online", "h3:1"), bucket("T1", 1, 1500, "r1"),
        bucket("T1", 1501, 3000, "r2"), bucket("T2", 1, 3000, "r3"),
        bucket("T1", 1, 750, "r1"),  // overlaps: T1 cleared, T2 untouched
    });
    Topology restored = round_trip(topology);
    EXPECT_EQ(restored, topology);
}

TEST(SnapshotRestore, TierOnlyKnownFromAReplicasetKeepsAcceptingItsCount) {
    // The replicaset names a tier before any tier event: the image stores bucket_count 0.
    Topology topology =
        build({replicaset("r1", "late", "i1"), instance("i1", "r1", "Online", "h1:1"),
               bucket("late", 1, 10, "r1")});
    Topology restored = round_trip(topology);
    EXPECT_EQ(restored, topology);
    topology.apply(tier("late", 10));
    restored.apply(tier("late", 10));
    EXPECT_EQ(restored, topology);
    EXPECT_EQ(restored.tiers().at("late"), 10u);
}

TEST(SnapshotRestore, TierWhoseReplicasetsWereAllDeletedStaysKnown) {
    Topology topology = build({replicaset("r1", "gone", "i1"), replicaset_delete("r1")});
    ASSERT_EQ(topology.buckets().count("gone"), 1u);
    Topology restored = round_trip(topology);
    EXPECT_EQ(restored, topology);
    EXPECT_TRUE(restored.replicasets().empty());
    EXPECT_EQ(restored.buckets().count("gone"), 1u);
}

TEST(SnapshotRestore, RangeBeyondALaterBucketCount) {
    // The tier's count arrived after a range that reaches beyond it; the restore still succeeds.
    Topology topology = build({replicaset("r1", "t", "i1"), instance("i1", "r1", "Online", "h1:1"),
                               bucket("t", 1, 3000, "r1"), tier("t", 100)});
    Topology restored = round_trip(topology);
    EXPECT_EQ(restored, topology);
}

TEST(SnapshotRestore, RangesOfUnknownReplicasetsAndPartialFields) {
    Topology topology = build({
        tier("default", 3000),
        instance("lonely", std::nullopt, std::nullopt, std::nullopt),
        instance("i9", "r9", "Expelled", "h9:1"),
        bucket("default", 1, 10, "r-unknown"),
        bucket("default", 11, 20, "r9", ""),
        replicaset("r9", std::nullopt),
    });
    Topology restored = round_trip(topology);
    EXPECT_EQ(build_snapshot(restored, kLimits), build_snapshot(topology, kLimits));
    EXPECT_EQ(restored.instances(), topology.instances());
    EXPECT_EQ(restored.buckets(), topology.buckets());
}

TEST(SnapshotRestore, MasterNamedBeforeItsInstanceIsKept) {
    // Push mode may deliver a replicaset event and its master's instance event in separate calls:
    // the master's uuid must survive the round trip so the instance event completes it.
    Topology topology = build({tier("default", 10), replicaset("r1", "default", "not-yet-known"),
                               bucket("default", 1, 10, "r1")});
    Topology restored = round_trip(topology);
    EXPECT_EQ(restored, topology);
    EXPECT_EQ(restored.find_bucket_master("default", 5), nullptr);
    ASSERT_TRUE(restored.replicasets().at("r1").current_master_uuid.has_value());
    EXPECT_EQ(*restored.replicasets().at("r1").current_master_uuid, "not-yet-known");
    restored.apply(instance("not-yet-known", "r1", "Online", "h:1"));
    ASSERT_NE(restored.find_bucket_master("default", 5), nullptr);
    EXPECT_EQ(*restored.find_bucket_master("default", 5)->address, "h:1");
}

TEST(SnapshotRestore, TierWithZeroBucketsKeepsItsCount) {
    Topology topology = build({tier("cold", 0), replicaset("r1", "cold", "i1")});
    Topology restored = round_trip(topology);
    EXPECT_EQ(restored, topology);
    ASSERT_EQ(restored.tiers().count("cold"), 1u);
    EXPECT_EQ(restored.tiers().at("cold"), 0u);
}

TEST(SnapshotRestore, ManyRangesAndInstances) {
    std::vector<Event> events{tier("big", 1000)};
    for (int r = 0; r < 10; ++r) {
        const std::string rs = "rs" + std::to_string(r);
        events.push_back(replicaset(rs, "big", "inst" + std::to_string(r) + "-0"));
        for (int i = 0; i < 3; ++i) {
            const std::string uuid = "inst" + std::to_string(r) + "-" + std::to_string(i);
            events.push_back(instance(uuid, rs, i == 2 ? "Offline" : "Online",
                                      "host" + std::to_string(r * 3 + i) + ":4327"));
        }
    }
    for (uint32_t b = 0; b < 100; ++b) {
        events.push_back(bucket("big", b * 10 + 1, b * 10 + 10, "rs" + std::to_string(b % 10)));
    }
    Topology topology = build(events);
    Topology restored = round_trip(topology);
    EXPECT_EQ(restored, topology);
}

}  // namespace
}  // namespace picoroute
