// The event-application algorithm of seeds 000 and 002, case by case, with the bucket map checked
// after every step.
#include "core/errors.h"
#include "core/topology.h"
#include "event_builders.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

namespace picoroute {
using namespace picoroute::testing;

namespace {

using Ranges = std::vector<std::tuple<uint32_t, uint32_t, std::string>>;

Ranges ranges(const Topology &t, const std::string &tier) {
    Ranges out;
    auto it = t.buckets().find(tier);
    if (it == t.buckets().end()) {
        return out;
    }
    for (const auto &[start, r] : it->second) {
        EXPECT_EQ(start, r.start);
        out.emplace_back(r.start, r.end, r.replicaset_uuid);
    }
    return out;
}

// A tier "default" of 3000 buckets with replicasets R1..R3 (or fewer) owning `initial`.
Topology tier_with(const Ranges &initial, const std::string &tier = "default") {
    Topology t;
    t.apply(TierEvent{tier, 3000, std::nullopt});
    for (const auto &[start, end, rs] : initial) {
        if (t.replicasets().count(rs) == 0) {
            t.apply(replicaset(rs, tier));
        }
    }
    for (const auto &[start, end, rs] : initial) {
        t.apply(bucket(tier, start, end, rs));
    }
    EXPECT_EQ(ranges(t, tier), initial);
    return t;
}

TEST(TopologySeed, ReplicasetRemoved) {
    Topology t = tier_with({{1, 1000, "R1"}, {1001, 2000, "R2"}, {2001, 3000, "R3"}});
    t.apply(replicaset_delete("R2"));
    EXPECT_EQ(ranges(t, "default"), Ranges{});
    EXPECT_EQ(t.replicasets().count("R2"), 0u);
    EXPECT_EQ(t.buckets().count("default"), 1u);  // the tier stays known, its map empty
    t.apply(bucket("default", 1, 1500, "R1"));
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 1500, "R1"}}));
    t.apply(bucket("default", 1501, 3000, "R3"));
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 1500, "R1"}, {1501, 3000, "R3"}}));
}

TEST(TopologySeed, ReplicasetAdded) {
    Topology t = tier_with({{1, 1500, "R1"}, {1501, 3000, "R2"}});
    t.apply(replicaset("R3", "default"));
    EXPECT_EQ(ranges(t, "default"), Ranges{});
    t.apply(bucket("default", 1, 1000, "R1"));
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 1000, "R1"}}));
    t.apply(bucket("default", 1001, 2000, "R2"));
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 1000, "R1"}, {1001, 2000, "R2"}}));
    t.apply(bucket("default", 2001, 3000, "R3"));
    EXPECT_EQ(ranges(t, "default"),
              (Ranges{{1, 1000, "R1"}, {1001, 2000, "R2"}, {2001, 3000, "R3"}}));
}

TEST(TopologySeed, WeightsChanged) {
    Topology t = tier_with({{1, 1000, "R1"}, {1001, 2000, "R2"}, {2001, 3000, "R3"}});
    t.apply(bucket("default", 1, 750, "R1"));  // overlaps R1(1-1000): the map is cleared first
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 750, "R1"}}));
    t.apply(bucket("default", 751, 1500, "R2"));  // no overlap with the new map
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 750, "R1"}, {751, 1500, "R2"}}));
    t.apply(bucket("default", 1501, 3000, "R3"));
    EXPECT_EQ(ranges(t, "default"),
              (Ranges{{1, 750, "R1"}, {751, 1500, "R2"}, {1501, 3000, "R3"}}));
}

TEST(TopologySeed, TierIsolation) {
    Topology t = tier_with({{1, 1500, "R1"}, {1501, 3000, "R2"}}, "T1");
    t.apply(TierEvent{"T2", 3000, std::nullopt});
    t.apply(replicaset("R3", "T2"));
    EXPECT_EQ(ranges(t, "T1"), (Ranges{{1, 1500, "R1"}, {1501, 3000, "R2"}}));
    t.apply(bucket("T2", 1, 3000, "R3"));
    EXPECT_EQ(ranges(t, "T2"), (Ranges{{1, 3000, "R3"}}));
    t.apply(replicaset("R4", "T1"));
    EXPECT_EQ(ranges(t, "T1"), Ranges{});
    EXPECT_EQ(ranges(t, "T2"), (Ranges{{1, 3000, "R3"}}));
    t.apply(bucket("T1", 1, 1000, "R1"));
    EXPECT_EQ(ranges(t, "T1"), (Ranges{{1, 1000, "R1"}}));
    t.apply(bucket("T1", 1001, 2000, "R2"));
    EXPECT_EQ(ranges(t, "T1"), (Ranges{{1, 1000, "R1"}, {1001, 2000, "R2"}}));
    t.apply(bucket("T1", 2001, 3000, "R4"));
    EXPECT_EQ(ranges(t, "T1"), (Ranges{{1, 1000, "R1"}, {1001, 2000, "R2"}, {2001, 3000, "R4"}}));
    EXPECT_EQ(ranges(t, "T2"), (Ranges{{1, 3000, "R3"}}));
}

TEST(Topology, RedeliveryIsNotAnOverlap) {
    const Ranges initial{{1, 1000, "R1"}, {1001, 2000, "R2"}, {2001, 3000, "R3"}};
    Topology t = tier_with(initial);
    std::vector<Event> poll;
    for (const auto &[start, end, rs] : initial) {
        poll.push_back(bucket("default", start, end, rs));
    }
    EXPECT_FALSE(t.apply_all(poll));
    EXPECT_EQ(ranges(t, "default"), initial);
}

TEST(Topology, SameBoundsNewOwnerIsAnOverlap) {
    Topology t = tier_with({{1, 1000, "R1"}, {1001, 2000, "R2"}, {2001, 3000, "R3"}});
    t.apply(bucket("default", 1001, 2000, "R1"));
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1001, 2000, "R1"}}));
}

TEST(Topology, RangeBeforeReachingStartIsAnOverlap) {
    Topology t = tier_with({{1, 1000, "R1"}, {2001, 3000, "R3"}});
    t.apply(bucket("default", 1001, 2000, "R2"));  // fills the gap: no overlap
    EXPECT_EQ(ranges(t, "default"),
              (Ranges{{1, 1000, "R1"}, {1001, 2000, "R2"}, {2001, 3000, "R3"}}));
    t.apply(bucket("default", 1000, 1000, "R2"));  // R1(1-1000) reaches 1000
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1000, 1000, "R2"}}));
    t.apply(bucket("default", 500, 2000, "R1"));  // a range starting within [500, 2000]
    EXPECT_EQ(ranges(t, "default"), (Ranges{{500, 2000, "R1"}}));
}

TEST(Topology, MasterSwitchLeavesBuckets) {
    Topology t = tier_with({{1, 1500, "R1"}, {1501, 3000, "R2"}});
    t.apply(instance("i1", "R1"));
    t.apply(instance("i2", "R1"));
    t.apply(replicaset("R1", "default", "i1"));
    ASSERT_NE(t.find_bucket_master("default", 10), nullptr);
    EXPECT_EQ(t.find_bucket_master("default", 10)->uuid, "i1");
    t.apply(replicaset("R1", std::nullopt, "i2"));
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 1500, "R1"}, {1501, 3000, "R2"}}));
    EXPECT_EQ(t.find_bucket_master("default", 10)->uuid, "i2");
    EXPECT_EQ(t.replicasets().at("R1").tier, "default");
}

TEST(Topology, NewReplicasetOfANewTierCreatesAnEmptyMap) {
    Topology t;
    t.apply(replicaset("R1", "fresh"));
    ASSERT_EQ(t.buckets().count("fresh"), 1u);
    EXPECT_TRUE(t.buckets().at("fresh").empty());
    t.apply(replicaset("R0", std::nullopt));  // no tier: no bucket map
    EXPECT_EQ(t.buckets().size(), 1u);
}

TEST(Topology, FirstReplicasetOfATierKeepsItsRanges) {
    // Seed 002: only another known replicaset of the tier makes a new one clear the map.
    Topology t;
    t.apply(bucket("default", 1, 100, "R1"));
    t.apply(replicaset("R1", "default"));
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 100, "R1"}}));
}

TEST(Topology, ReplicasetDeleteOfUnknownOrTierlessChangesNoBuckets) {
    Topology t = tier_with({{1, 3000, "R1"}});
    t.apply(replicaset("R9", std::nullopt));
    t.apply(replicaset_delete("R9"));
    t.apply(replicaset_delete("nobody"));
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 3000, "R1"}}));
}

TEST(Topology, BucketDeleteRemovesOnlyThatRange) {
    Topology t = tier_with({{1, 1000, "R1"}, {1001, 2000, "R2"}, {2001, 3000, "R3"}});
    t.apply(bucket_delete("default", 1001));
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 1000, "R1"}, {2001, 3000, "R3"}}));
    t.apply(bucket_delete("default", 1500));  // no range starts there
    t.apply(bucket_delete("other", 1));
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 1000, "R1"}, {2001, 3000, "R3"}}));
}

TEST(Topology, InstanceUpsertAndDelete) {
    Topology t;
    t.apply(instance("i1", "R1", std::string("Offline"), std::string("h1:4327")));
    t.apply(instance("i1", std::nullopt, std::string("Online"), std::nullopt));
    const Instance &i1 = t.instances().at("i1");
    EXPECT_EQ(i1.replicaset_uuid, "R1");
    EXPECT_EQ(i1.current_state, "Online");
    EXPECT_EQ(i1.address, "h1:4327");
    EXPECT_TRUE(i1.is_online());
    t.apply(instance("i2", "R1", std::string("Offline"), std::string("h2:4327")));
    EXPECT_EQ(t.online_addresses(), (std::set<std::string>{"h1:4327"}));
    InstanceEvent del;
    del.op = Op::Delete;
    del.instance_uuid = "i1";
    t.apply(del);
    EXPECT_EQ(t.instances().count("i1"), 0u);
    EXPECT_EQ(t.instances().count("i2"), 1u);
    t.apply(del);  // deleting an unknown instance is harmless
    EXPECT_EQ(t.instances().size(), 1u);
}

TEST(Topology, ClearKeepsTiers) {
    Topology t = tier_with({{1, 3000, "R1"}});
    t.apply(instance("i1", "R1"));
    t.apply(TierEvent{"other", 16, std::nullopt});
    t.clear();
    EXPECT_TRUE(t.instances().empty());
    EXPECT_TRUE(t.replicasets().empty());
    EXPECT_TRUE(t.buckets().empty());
    EXPECT_EQ(t.tiers().size(), 2u);
    EXPECT_EQ(t.known_tiers(), (std::set<std::string>{"default", "other"}));
}

TEST(Topology, TierKeepsItsFirstBucketCount) {
    Topology t;
    t.apply(TierEvent{"default", 3000, std::nullopt});
    t.apply(TierEvent{"default", 10, std::nullopt});
    EXPECT_EQ(t.tiers().at("default"), 3000u);
    EXPECT_NO_THROW(t.apply(bucket("default", 1, 3000, "R1")));
}

TEST(Topology, FindBucketMasterNullCases) {
    Topology t = tier_with({{1, 1000, "R1"}, {2001, 3000, "R3"}});
    t.apply(bucket("default", 1001, 1500, "R-unknown"));
    t.apply(instance("m1", "R1"));
    t.apply(replicaset("R1", std::nullopt, "m1"));
    EXPECT_EQ(t.find_bucket_master("default", 1)->uuid, "m1");
    EXPECT_EQ(t.find_bucket_master("default", 1000)->uuid, "m1");
    EXPECT_EQ(t.find_bucket_master("nope", 1), nullptr);        // unknown tier
    EXPECT_EQ(t.find_bucket_master("default", 0), nullptr);     // before every range
    EXPECT_EQ(t.find_bucket_master("default", 1700), nullptr);  // in a gap
    EXPECT_EQ(t.find_bucket_master("default", 3001), nullptr);  // past the end
    EXPECT_EQ(t.find_bucket_master("default", 1200), nullptr);  // replicaset unknown
    EXPECT_EQ(t.find_bucket_master("default", 2500), nullptr);  // master unknown (nullopt)
    ASSERT_NE(t.find_bucket_range("default", 1200), nullptr);
    EXPECT_EQ(t.find_bucket_range("default", 1200)->replicaset_uuid, "R-unknown");
    t.apply(replicaset("R3", std::nullopt, ""));
    EXPECT_EQ(t.find_bucket_master("default", 2500), nullptr);  // master "" means unknown
    t.apply(replicaset("R3", std::nullopt, "m3"));
    EXPECT_EQ(t.find_bucket_master("default", 2500), nullptr);  // master instance not seen yet
    t.apply(instance("m3", "R3"));
    EXPECT_EQ(t.find_bucket_master("default", 2500)->uuid, "m3");
}

TEST(Topology, BucketReplicasMasterFirstThenByUuid) {
    Topology t = tier_with({{1, 1500, "R1"}, {1501, 3000, "R2"}});
    t.apply(instance("c", "R1"));
    t.apply(instance("a", "R1"));
    t.apply(instance("b", "R1"));
    t.apply(instance("z", "R2"));
    t.apply(replicaset("R1", std::nullopt, "b"));
    std::vector<std::string> uuids;
    for (const Instance *i : t.bucket_replicas("default", 7)) {
        uuids.push_back(i->uuid);
    }
    EXPECT_EQ(uuids, (std::vector<std::string>{"b", "a", "c"}));
    EXPECT_EQ(t.bucket_replicas("default", 2000).size(), 1u);
    EXPECT_TRUE(t.bucket_replicas("default", 4000).empty());
}

TEST(Topology, InvalidEventsThrowAndChangeNothing) {
    Topology t = tier_with({{1, 1000, "R1"}});
    t.apply(TierEvent{"empty", 0, std::nullopt});
    const Topology before = t;
    auto rejects = [&](const Event &e) {
        try {
            t.apply(e);
            ADD_FAILURE() << "accepted " << describe(e);
        } catch (const Error &error) {
            EXPECT_EQ(error.kind(), ErrorKind::InvalidInput) << describe(e);
        }
        EXPECT_TRUE(t == before) << describe(e);
    };
    rejects(instance("", "R1"));
    rejects(replicaset("", "default"));
    rejects(replicaset("R5", std::string("")));
    rejects(bucket("default", 0, 10, "R1"));
    rejects(bucket("default", 20, 10, "R1"));
    rejects(bucket("default", 2001, 3001, "R1"));
    rejects(bucket("default", 1, 10, ""));
    rejects(bucket("", 1, 10, "R1"));
    rejects(bucket("empty", 1, 1, "R1"));  // bucket_count 0: no bucket is in range
    rejects(TierEvent{"", 5, std::nullopt});
    try {
        t.apply(bucket("default", 2001, 3001, "R1"));
        ADD_FAILURE() << "range beyond bucket_count accepted";
    } catch (const Error &error) {
        EXPECT_NE(std::string(error.what()).find("default"), std::string::npos);
        EXPECT_NE(std::string(error.what()).find("3000"), std::string::npos);
    }
    EXPECT_NO_THROW(t.apply(bucket("unknown-tier", 1, 999999, "R1")));  // no bucket_count known
}

TEST(Topology, ApplyAllIsAllOrNothing) {
    Topology t = tier_with({{1, 1000, "R1"}, {1001, 2000, "R2"}, {2001, 3000, "R3"}});
    t.apply(instance("i1", "R1"));
    const Topology before = t;
    std::vector<Event> batch{replicaset_delete("R2"), bucket("default", 1, 1500, "R1"),
                             instance("i9", "R9"), bucket("default", 1501, 9000, "R3"),
                             bucket("default", 1501, 3000, "R3")};
    try {
        t.apply_all(batch);
        ADD_FAILURE() << "batch accepted";
    } catch (const Error &error) {
        EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
        EXPECT_NE(std::string(error.what()).find("event 3"), std::string::npos) << error.what();
    }
    EXPECT_TRUE(t == before);
    batch.erase(batch.begin() + 3);
    EXPECT_TRUE(t.apply_all(batch));
    EXPECT_EQ(ranges(t, "default"), (Ranges{{1, 1500, "R1"}, {1501, 3000, "R3"}}));
    EXPECT_EQ(t.instances().count("i9"), 1u);
    EXPECT_FALSE(t.apply_all({}));
    EXPECT_FALSE(t.apply_all({instance("i9", "R9")}));  // already so: nothing changed
}

TEST(Topology, DescribeNamesTheEvent) {
    EXPECT_EQ(describe(bucket("default", 1, 10, "R1")),
              "bucket replace tier=\"default\" range=[1, 10] replicaset=\"R1\" state=\"active\"");
    EXPECT_EQ(describe(replicaset_delete("R2")), "replicaset delete uuid=\"R2\"");
    EXPECT_EQ(describe(TierEvent{"t", 3, std::nullopt}), "tier name=\"t\" bucket_count=3");
    EXPECT_NE(describe(instance("i1", "R1")).find("state=\"Online\""), std::string::npos);
}

}  // namespace
}  // namespace picoroute
