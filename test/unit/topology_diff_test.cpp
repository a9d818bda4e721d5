// What changed between two topologies: the rows of picoroute_topology_events that a publication
// adds.
#include "core/topology.h"
#include "core/topology_diff.h"
#include "event_builders.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace picoroute {
using namespace picoroute::testing;

namespace {

// One change as a line: kind tier [start-end] from>to rs instance old>new.
std::string line(const TopologyChange &c) {
    std::string out = change_kind_name(c.kind);
    out += " " + c.tier;
    if (c.bucket_start != 0)
        out += " [" + std::to_string(c.bucket_start) + "-" + std::to_string(c.bucket_end) + "]";
    if (!c.from_replicaset.empty() || !c.to_replicaset.empty())
        out += " " + c.from_replicaset + ">" + c.to_replicaset;
    if (!c.replicaset.empty())
        out += " rs=" + c.replicaset;
    if (!c.instance.empty())
        out += " i=" + c.instance;
    if (!c.old_value.empty() || !c.new_value.empty())
        out += " " + c.old_value + ">" + c.new_value;
    return out;
}

std::vector<std::string> lines(const Topology &before, const Topology &after) {
    std::vector<std::string> out;
    for (const TopologyChange &c : diff_topologies(before, after))
        out.push_back(line(c));
    return out;
}

InstanceEvent versioned(InstanceEvent e, const std::string &version) {
    e.picodata_version = version;
    return e;
}

// Tier "default" of 3000 buckets: R1 (rs_1, master i1a, replica i1b) owns 1-1500, R2 (rs_2,
// master i2a) owns 1501-3000.
Topology two_replicasets() {
    Topology t;
    t.apply(tier("default", 3000));
    t.apply(replicaset("R1", std::string("default"), std::string("i1a"), std::string("rs_1")));
    t.apply(replicaset("R2", std::string("default"), std::string("i2a"), std::string("rs_2")));
    t.apply(versioned(instance("i1a", std::string("R1"), std::string("Online"),
                               std::string("10.0.0.1:4327"), std::string("i_1a")),
                      "25.5.10"));
    t.apply(versioned(instance("i1b", std::string("R1"), std::string("Online"),
                               std::string("10.0.0.2:4327"), std::string("i_1b")),
                      "25.5.10"));
    t.apply(versioned(instance("i2a", std::string("R2"), std::string("Online"),
                               std::string("10.0.0.3:4327"), std::string("i_2a")),
                      "25.5.10"));
    t.apply(bucket("default", 1, 1500, "R1"));
    t.apply(bucket("default", 1501, 3000, "R2"));
    return t;
}

TEST(TopologyDiff, NothingChangedNothingSaid) {
    EXPECT_TRUE(lines(two_replicasets(), two_replicasets()).empty());
    EXPECT_TRUE(lines(Topology(), Topology()).empty());
}

TEST(TopologyDiff, TheFirstMapSaysWhatItHolds) {
    EXPECT_EQ(lines(Topology(), two_replicasets()),
              (std::vector<std::string>{
                  "tier_added default >3000",
                  "replicaset_added default rs=rs_1 >i_1a",
                  "replicaset_added default rs=rs_2 >i_2a",
                  "instance_added default rs=rs_1 i=i_1a >Online",
                  "instance_added default rs=rs_1 i=i_1b >Online",
                  "instance_added default rs=rs_2 i=i_2a >Online",
                  "buckets_mapped default [1-1500] >rs_1",
                  "buckets_mapped default [1501-3000] >rs_2",
                  "cluster_version_changed  >25.5.10",
              }));
}

TEST(TopologyDiff, ABucketMoveNamesTheRangeAndBothOwners) {
    Topology before = two_replicasets();
    Topology after = before;
    // The range of R1 loses buckets 1-10 to R2: it is split, the first part moves.
    after.apply(bucket_delete("default", 1));
    after.apply(bucket("default", 1, 10, "R2"));
    after.apply(bucket("default", 11, 1500, "R1"));
    EXPECT_EQ(lines(before, after),
              (std::vector<std::string>{"buckets_moved default [1-10] rs_1>rs_2"}));
    // Back again: the opposite move; a split without a new owner says nothing.
    EXPECT_EQ(lines(after, before),
              (std::vector<std::string>{"buckets_moved default [1-10] rs_2>rs_1"}));
}

TEST(TopologyDiff, AdjacentBucketsWithTheSameChangeMakeOneRow) {
    Topology before = two_replicasets();
    Topology after = two_replicasets();
    // Buckets 1001-2000 go to R3 (a new replicaset clears the tier; the catalog lists it again):
    // the two parts come from different owners, so two rows.
    after.apply(replicaset("R3", std::string("default"), std::nullopt, std::string("rs_3")));
    after.apply(bucket("default", 1, 1000, "R1"));
    after.apply(bucket("default", 1001, 1200, "R3"));
    after.apply(bucket("default", 1201, 1500, "R3"));
    after.apply(bucket("default", 1501, 2000, "R3"));
    after.apply(bucket("default", 2001, 3000, "R2"));
    EXPECT_EQ(lines(before, after), (std::vector<std::string>{
                                        "replicaset_added default rs=rs_3",
                                        "buckets_moved default [1001-1500] rs_1>rs_3",
                                        "buckets_moved default [1501-2000] rs_2>rs_3",
                                    }));
}

TEST(TopologyDiff, ARemovedReplicasetLeavesItsTierUnmapped) {
    Topology before = two_replicasets();
    Topology after = before;
    after.apply(replicaset_delete("R2"));  // the seed clears the tier's map
    EXPECT_EQ(lines(before, after), (std::vector<std::string>{
                                        "replicaset_removed default rs=rs_2",
                                        "buckets_unmapped default [1-1500] rs_1>",
                                        "buckets_unmapped default [1501-3000] rs_2>",
                                    }));
}

TEST(TopologyDiff, AMasterSwitchNamesTheOldAndTheNewMaster) {
    Topology before = two_replicasets();
    Topology after = before;
    after.apply(replicaset("R1", std::nullopt, std::string("i1b")));
    EXPECT_EQ(lines(before, after),
              (std::vector<std::string>{"master_switched default rs=rs_1 i=i_1b i_1a>i_1b"}));
}

TEST(TopologyDiff, InstanceStateAddressAndVersionChanges) {
    Topology before = two_replicasets();
    Topology after = before;
    after.apply(instance("i1b", std::nullopt, std::string("Offline")));
    after.apply(instance("i2a", std::nullopt, std::nullopt, std::string("10.0.0.9:4327")));
    EXPECT_EQ(lines(before, after),
              (std::vector<std::string>{
                  "instance_state_changed default rs=rs_1 i=i_1b Online>Offline",
                  "instance_address_changed default rs=rs_2 i=i_2a "
                  "10.0.0.3:4327>10.0.0.9:4327",
              }));
    // An upgrade of every instance: one row each, and the cluster's version once.
    Topology upgraded = before;
    for (const char *uuid : {"i1a", "i1b", "i2a"})
        upgraded.apply(versioned(instance(uuid, std::nullopt, std::nullopt), "26.1.6"));
    std::vector<std::string> got = lines(before, upgraded);
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0], "instance_version_changed default rs=rs_1 i=i_1a 25.5.10>26.1.6");
    EXPECT_EQ(got[3], "cluster_version_changed  25.5.10>26.1.6");
}

TEST(TopologyDiff, RemovedAndAddedInstancesAndUnnamedOnesByUuid) {
    Topology before = two_replicasets();
    Topology after = before;
    after.apply(InstanceEvent{Op::Delete, "i1b", {}, {}, {}, {}, {}});
    after.apply(instance("i9", std::string("R9"), std::string("Offline")));
    EXPECT_EQ(lines(before, after), (std::vector<std::string>{
                                        "instance_removed default rs=rs_1 i=i_1b Online>",
                                        // R9 is not known: its uuid, and no tier.
                                        "instance_added  rs=R9 i=i9 >Offline",
                                    }));
}

TEST(TopologyDiff, ASetFieldEmptiedIsNoChangeAsTheImageCannotTellThem) {
    Topology before = two_replicasets();
    Topology after = before;
    after.apply(instance("i1a", std::nullopt, std::nullopt, std::nullopt));
    EXPECT_TRUE(lines(before, after).empty());
    Topology with_empty;
    with_empty.apply(tier("t", 10));
    with_empty.apply(instance("x", std::string("R"), std::string(""), std::string("")));
    Topology without;
    without.apply(tier("t", 10));
    without.apply(instance("x", std::string("R"), std::nullopt, std::nullopt));
    EXPECT_TRUE(lines(with_empty, without).empty());
}

TEST(TopologyDiff, EveryKindHasAName) {
    for (uint32_t k = 0; k <= static_cast<uint32_t>(ChangeKind::EventsDropped); k++)
        EXPECT_STRNE(change_kind_name(static_cast<ChangeKind>(k)), "unknown") << k;
}

}  // namespace
}  // namespace picoroute
