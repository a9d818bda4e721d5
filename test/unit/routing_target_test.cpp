// The routing decision on snapshots: owners, replicas, coordinators spread per session, the
// masters of a scatter (never one without buckets) and the bucket filters they get.
#include "core/routing/target.h"
#include "core/snapshot.h"
#include "routing_map.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

namespace picoroute {
using namespace picoroute::testing;
using routing::ReadPref;
using routing::Role;
using routing::Target;

TEST(TargetTest, BucketGoesToTheOwnersMaster) {
    Fixture f;
    Target target;
    ASSERT_TRUE(routing::bucket_target(f.view, f.t, 7, ReadPref::Leader, 0, &target));
    EXPECT_EQ(target.address, "10.0.0.1:4327");
    EXPECT_EQ(target.role, Role::Master);
    EXPECT_EQ(target.replicaset, "r1");
    ASSERT_TRUE(routing::bucket_target(f.view, f.t, 2000, ReadPref::Leader, 0, &target));
    EXPECT_EQ(target.address, "10.0.0.3:4327");
    EXPECT_EQ(routing::describe(target), "10.0.0.3:4327 (master b1 of replicaset rs2)");
}

TEST(TargetTest, ReplicaPreferenceUsesAReplicaWhenThereIsOne) {
    Fixture f;
    Target target;
    ASSERT_TRUE(routing::bucket_target(f.view, f.t, 7, ReadPref::Replica, 0, &target));
    EXPECT_EQ(target.address, "10.0.0.2:4327");
    EXPECT_EQ(target.role, Role::Replica);
    // r2 has no replica: its master.
    ASSERT_TRUE(routing::bucket_target(f.view, f.t, 2000, ReadPref::Replica, 0, &target));
    EXPECT_EQ(target.address, "10.0.0.3:4327");
    EXPECT_EQ(target.role, Role::Master);
}

TEST(TargetTest, UnknownBucketHasNoTarget) {
    Fixture f({bucket_delete("t", 1501)});
    Target target;
    EXPECT_FALSE(routing::bucket_target(f.view, f.t, 2000, ReadPref::Leader, 0, &target));
    routing::BucketGroups groups =
        routing::group_buckets(f.view, f.t, {7, 2000, 8}, ReadPref::Leader, 0);
    ASSERT_EQ(groups.targets.size(), 1u);
    EXPECT_EQ(groups.targets[0].buckets, (std::vector<uint32_t>{7, 8}));
    EXPECT_EQ(groups.unknown, (std::vector<uint32_t>{2000}));
}

TEST(TargetTest, GroupsBucketsPerInstanceInAddressOrder) {
    Fixture f;
    routing::BucketGroups groups =
        routing::group_buckets(f.view, f.t, {2000, 7, 1500, 1501}, ReadPref::Leader, 0);
    EXPECT_EQ(addresses(groups.targets),
              (std::vector<std::string>{"10.0.0.1:4327", "10.0.0.3:4327"}));
    EXPECT_EQ(groups.targets[0].buckets, (std::vector<uint32_t>{7, 1500}));
    EXPECT_EQ(groups.targets[1].buckets, (std::vector<uint32_t>{1501, 2000}));
    EXPECT_TRUE(groups.unknown.empty());
}

TEST(TargetTest, OneBucketGroupsAsManyDo) {
    Fixture f({bucket_delete("t", 1501)});
    for (uint32_t bucket : {7u, 1500u, 2000u, 2500u}) {
        routing::BucketGroups one =
            routing::group_buckets(f.view, f.t, {bucket}, ReadPref::Leader, 0);
        // The same bucket beside an unknown one goes through the general path.
        routing::BucketGroups many =
            routing::group_buckets(f.view, f.t, {bucket, 1501}, ReadPref::Leader, 0);
        std::vector<uint32_t> unknown = many.unknown;
        unknown.erase(std::remove(unknown.begin(), unknown.end(), 1501u), unknown.end());
        EXPECT_EQ(one.unknown, unknown) << bucket;
        ASSERT_EQ(one.targets.size(), many.targets.size()) << bucket;
        for (size_t i = 0; i < one.targets.size(); i++) {
            EXPECT_EQ(one.targets[i].address, many.targets[i].address) << bucket;
            EXPECT_EQ(one.targets[i].role, many.targets[i].role) << bucket;
            EXPECT_EQ(one.targets[i].replicaset, many.targets[i].replicaset) << bucket;
            EXPECT_EQ(one.targets[i].buckets, (std::vector<uint32_t>{bucket})) << bucket;
        }
    }
    routing::BucketGroups unknown =
        routing::group_buckets(f.view, f.t, {1501}, ReadPref::Leader, 0);
    EXPECT_TRUE(unknown.targets.empty());
    EXPECT_EQ(unknown.unknown, (std::vector<uint32_t>{1501}));
}

TEST(TargetTest, MastersScatterSkipsAReplicasetWithoutBuckets) {
    // r3 (c1) owns nothing: asking it without a bucket filter would return every row again.
    Fixture f;
    routing::MastersPlan plan = routing::master_targets(f.view, f.t);
    ASSERT_EQ(plan.status, routing::MastersPlan::Status::Ok);
    EXPECT_EQ(addresses(plan.targets),
              (std::vector<std::string>{"10.0.0.1:4327", "10.0.0.3:4327"}));
    for (const Target &target : plan.targets)
        EXPECT_FALSE(target.ranges.empty());
}

TEST(TargetTest, MastersScatterRefusesAnIncompleteMap) {
    Fixture f({bucket_delete("t", 1501)});
    routing::MastersPlan plan = routing::master_targets(f.view, f.t);
    EXPECT_EQ(plan.status, routing::MastersPlan::Status::Incomplete);
    EXPECT_EQ(plan.covered, 1500u);
    EXPECT_TRUE(plan.targets.empty());
}

TEST(TargetTest, MastersScatterNeedsEveryMasterOnline) {
    Fixture f({instance("b1", std::string("r2"), std::string("Offline"),
                        std::string("10.0.0.3:4327"), std::string("b1"))});
    routing::MastersPlan plan = routing::master_targets(f.view, f.t);
    EXPECT_EQ(plan.status, routing::MastersPlan::Status::NoOnlineMaster);
    EXPECT_EQ(f.view.str(f.view.replicaset(plan.replicaset).uuid), "r2");
}

TEST(TargetTest, KeylessStatementsSpreadOverTheTiersMasters) {
    Fixture f;
    std::set<std::string> seen;
    for (uint64_t salt = 0; salt < 12; salt++) {
        std::optional<Target> target =
            routing::spread_target(f.view, f.t, ReadPref::Leader, false, salt);
        ASSERT_TRUE(target.has_value());
        EXPECT_EQ(target->role, Role::Coordinator);
        seen.insert(target->address);
        // One session (one salt) keeps its coordinator.
        EXPECT_EQ(routing::spread_target(f.view, f.t, ReadPref::Leader, false, salt)->address,
                  target->address);
    }
    // The masters of tier t, including c1 (a coordinator needs no buckets); never a replica,
    // never another tier's instance.
    EXPECT_EQ(seen, (std::set<std::string>{"10.0.0.1:4327", "10.0.0.3:4327", "10.0.0.4:4327"}));
}

TEST(TargetTest, KeylessReadsFollowReadPreference) {
    Fixture f;
    for (uint64_t salt = 0; salt < 4; salt++) {
        EXPECT_EQ(routing::spread_target(f.view, f.t, ReadPref::Replica, false, salt)->address,
                  "10.0.0.2:4327");
        // Writes always go to masters.
        EXPECT_NE(routing::spread_target(f.view, f.t, ReadPref::Replica, true, salt)->address,
                  "10.0.0.2:4327");
        EXPECT_EQ(routing::spread_target(f.view, f.u, ReadPref::Leader, false, salt)->address,
                  "10.0.0.5:4327");
    }
    std::set<std::string> any;
    for (uint64_t salt = 0; salt < 8; salt++)
        any.insert(routing::spread_target(f.view, f.u, ReadPref::Any, false, salt)->address);
    EXPECT_EQ(any, (std::set<std::string>{"10.0.0.5:4327", "10.0.0.6:4327"}));
}

TEST(TargetTest, AnyOnlinePrefersMastersAndSkipsExcluded) {
    Fixture f;
    std::optional<Target> first = routing::any_online(f.view);
    ASSERT_TRUE(first.has_value());
    EXPECT_EQ(first->address, "10.0.0.1:4327");
    std::optional<Target> other = routing::any_online(f.view, {"10.0.0.1:4327"});
    ASSERT_TRUE(other.has_value());
    EXPECT_NE(other->address, "10.0.0.1:4327");
}

// A dead master stalls the tier's Lua dispatch; the local fast path (26.1.1+) does not wait.
TEST(TargetTest, OnlyTheLocalPathAtTheOwnerAvoidsLuaDispatch) {
    Fixture f;
    Target owner;
    ASSERT_TRUE(routing::bucket_target(f.view, f.t, 17, ReadPref::Leader, 0, &owner));
    owner.buckets = {17, 900};
    EXPECT_FALSE(routing::lua_dispatched(f.view, f.t, owner, ReadPref::Leader, true));
    EXPECT_TRUE(routing::lua_dispatched(f.view, f.t, owner, ReadPref::Leader, false))
        << "before 26.1.1 every statement goes through Lua, even at its owner";
    Target mixed = owner;
    mixed.buckets = {17, 2000};  // a bucket of r2 too
    EXPECT_TRUE(routing::lua_dispatched(f.view, f.t, mixed, ReadPref::Leader, true));
    Target keyless = owner;
    keyless.buckets.clear();
    EXPECT_TRUE(routing::lua_dispatched(f.view, f.t, keyless, ReadPref::Leader, true))
        << "all buckets of a tier of several replicasets";
    Target other;  // r2's master asked about r1's bucket: it forwards
    ASSERT_TRUE(routing::bucket_target(f.view, f.t, 2000, ReadPref::Leader, 0, &other));
    other.buckets = {17};
    EXPECT_TRUE(routing::lua_dispatched(f.view, f.t, other, ReadPref::Leader, true));
    // A replica runs a read of its replicaset's bucket only for 'replica' or 'any'.
    Target replica = owner;
    replica.address = "10.0.0.2:4327";
    replica.role = Role::Replica;
    EXPECT_TRUE(routing::lua_dispatched(f.view, f.t, replica, ReadPref::Leader, true));
    EXPECT_FALSE(routing::lua_dispatched(f.view, f.t, replica, ReadPref::Replica, true));
    EXPECT_FALSE(routing::lua_dispatched(f.view, f.t, replica, ReadPref::Any, true));
    EXPECT_TRUE(routing::lua_dispatched(f.view, f.t, owner, ReadPref::Replica, true));
    // A keyless statement on a tier of one replicaset runs at its master.
    Target single;
    ASSERT_TRUE(routing::bucket_target(f.view, f.u, 3, ReadPref::Leader, 0, &single));
    single.buckets.clear();
    EXPECT_FALSE(routing::lua_dispatched(f.view, f.u, single, ReadPref::Leader, true));
}

TEST(TargetTest, AMasterlessReplicasetOfTheTierIsFound) {
    Fixture up;
    EXPECT_EQ(up.view.find_tier("t") == kNone, false);
    EXPECT_EQ(routing::masterless_replicaset(up.view, up.t), kNone);
    // c1 (r3, no buckets) stopped: vshard's routeall still waits for it.
    Fixture down({instance("c1", std::string("r3"), std::string("Offline"),
                           std::string("10.0.0.4:4327"), std::string("c1"))});
    int32_t rs = routing::masterless_replicaset(down.view, down.t);
    ASSERT_NE(rs, kNone);
    EXPECT_EQ(down.view.str(down.view.replicaset(rs).uuid), "r3");
    EXPECT_EQ(routing::masterless_replicaset(down.view, down.u), kNone) << "another tier";
}

// A switchover under way: the buckets of a replicaset without a usable instance wait for it;
// buckets the map does not know do not (a coordinator takes them).
TEST(TargetTest, BucketsWithoutAnOnlineMasterAwaitOne) {
    Fixture up;
    EXPECT_FALSE(routing::awaiting_master(up.view, up.t, {7, 2000}, ReadPref::Leader, 0));
    Fixture down({instance("a1", std::string("r1"), std::string("Offline"),
                           std::string("10.0.0.1:4327"), std::string("a1"))});
    EXPECT_TRUE(routing::awaiting_master(down.view, down.t, {2000, 7}, ReadPref::Leader, 0));
    EXPECT_FALSE(routing::awaiting_master(down.view, down.t, {7}, ReadPref::Replica, 0))
        << "a replica read has a2";
    EXPECT_FALSE(routing::awaiting_master(down.view, kNone, {7}, ReadPref::Leader, 0));
    Fixture unknown({bucket_delete("t", 1)});
    EXPECT_FALSE(routing::awaiting_master(unknown.view, unknown.t, {7}, ReadPref::Leader, 0));
}

TEST(TargetTest, OneReplicasetIsKnownOnlyFromBuckets) {
    Fixture f;
    Target t;
    t.buckets = {7};
    EXPECT_TRUE(routing::one_replicaset(f.view, f.t, t));
    t.buckets = {7, 1500};
    EXPECT_TRUE(routing::one_replicaset(f.view, f.t, t));
    t.buckets = {7, 1501};
    EXPECT_FALSE(routing::one_replicaset(f.view, f.t, t));
    t.buckets.clear();
    EXPECT_FALSE(routing::one_replicaset(f.view, f.t, t)) << "keyless";
    t.buckets = {7, 8};
    EXPECT_FALSE(routing::one_replicaset(f.view, kNone, t));
    Fixture unknown({bucket_delete("t", 1)});
    EXPECT_FALSE(routing::one_replicaset(unknown.view, unknown.t, t));
}

TEST(TargetTest, ALeaderReadOfAReplicasBucketsGoesToTheirMaster) {
    Fixture f;
    Target replica;
    ASSERT_TRUE(routing::bucket_target(f.view, f.t, 7, ReadPref::Replica, 0, &replica));
    replica.buckets = {7, 8};
    replica.sent = routing::Sent::KeyBatch;
    Target leader = routing::leader_target(f.view, f.t, replica, 0);
    EXPECT_EQ(leader.address, "10.0.0.1:4327");
    EXPECT_EQ(leader.role, Role::Master);
    EXPECT_EQ(leader.sent, routing::Sent::KeyBatch);
    // A coordinator coordinates a leader read where it is; so does a master.
    Target c;
    c.address = "10.0.0.3:4327";
    c.buckets = {7};
    EXPECT_EQ(routing::leader_target(f.view, f.t, c, 0).address, "10.0.0.3:4327");
    replica.buckets = {7, 2000};  // two owners: stays
    EXPECT_EQ(routing::leader_target(f.view, f.t, replica, 0).address, replica.address);
}

TEST(TargetTest, APointStatementGoesToItsOwnerElseToACoordinator) {
    Fixture f({bucket_delete("t", 1501)});
    std::optional<Target> owner = routing::point_target(f.view, f.t, 7, ReadPref::Leader, 0);
    ASSERT_TRUE(owner);
    EXPECT_EQ(owner->address, "10.0.0.1:4327");
    EXPECT_EQ(owner->sent, routing::Sent::RoutedByKey);
    EXPECT_EQ(owner->buckets, std::vector<uint32_t>{7});
    std::optional<Target> unknown = routing::point_target(f.view, f.t, 2000, ReadPref::Leader, 0);
    ASSERT_TRUE(unknown);
    EXPECT_EQ(unknown->role, Role::Coordinator);
    EXPECT_EQ(unknown->sent, routing::Sent::Coordinator);
    EXPECT_EQ(unknown->buckets, std::vector<uint32_t>{2000});
}

TEST(TargetTest, ExecReadsGoToAnyMemberUnlessLeaderReadsWereLearned) {
    EXPECT_STREQ(routing::exec_read_preference(true, false), "any");
    EXPECT_STREQ(routing::exec_read_preference(true, true), "leader");
    EXPECT_STREQ(routing::exec_read_preference(false, false), "leader");
    EXPECT_EQ(routing::exec_read_pref("any", true), ReadPref::Replica);
    EXPECT_EQ(routing::exec_read_pref("", true), ReadPref::Replica) << "no option: a replica";
    EXPECT_EQ(routing::exec_read_pref("", false), ReadPref::Leader);
    EXPECT_EQ(routing::exec_read_pref("leader", true), ReadPref::Leader);
    EXPECT_EQ(routing::parse_read_pref(nullptr), ReadPref::Leader);
    EXPECT_EQ(routing::parse_read_pref("replica"), ReadPref::Replica);
    EXPECT_EQ(routing::parse_read_pref("any"), ReadPref::Any);
    EXPECT_STREQ(routing::read_pref_name(ReadPref::Any), "any");
}

TEST(TargetTest, EachLookupSaysHowItsTargetIsReached) {
    Fixture f;
    Target t;
    ASSERT_TRUE(routing::bucket_target(f.view, f.t, 7, ReadPref::Leader, 0, &t));
    EXPECT_EQ(t.sent, routing::Sent::RoutedByKey);
    EXPECT_EQ(routing::any_online(f.view)->sent, routing::Sent::Coordinator);
    EXPECT_EQ(routing::spread_target(f.view, f.t, ReadPref::Leader, false, 0)->sent,
              routing::Sent::Coordinator);
    for (const Target &m : routing::master_targets(f.view, f.t).targets)
        EXPECT_EQ(m.sent, routing::Sent::MastersScatter);
}

}  // namespace picoroute
