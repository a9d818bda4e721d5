// The one grouping of keys and rows by owner (group_by_owner): INSERT rows (send_rows in the FDW's
// modify), the rows an UPDATE or DELETE writes one by one, and the keys of a batched join or of an
// array (batched_jobs in the FDW's routed); and how each group is reached (Sent).
#include "core/routing/grouping.h"

#include "routing_targets.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace picoroute::routing {
namespace {

using testing::coordinator_target;
using testing::master_target;

// Buckets up to 1500 belong to b:1 (r1), up to 3000 to a:1 (r2); the map knows no other.
OwnerLookups owners(int *coordinator_calls) {
    OwnerLookups l;
    l.owner = [](uint32_t bucket, Target *out) {
        if (bucket > 3000)
            return false;  // the map does not know its owner
        *out = bucket <= 1500 ? master_target("b:1", "r1") : master_target("a:1", "r2");
        return true;
    };
    l.coordinator = [coordinator_calls] {
        (*coordinator_calls)++;
        return coordinator_target("c:1");
    };
    return l;
}

std::function<std::optional<uint32_t>(int)> of(const std::vector<std::optional<uint32_t>> &b) {
    return [b](int i) { return b[static_cast<size_t>(i)]; };
}

TEST(GroupingTest, RowsGoToTheirOwnersInAddressOrderKeepingTheirOrder) {
    int calls = 0;
    auto groups = group_by_owner(5, of({10, 2000, 10, 5, 2999}), owners(&calls));
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].target.address, "a:1");
    EXPECT_EQ(groups[0].members, std::vector<int>({1, 4}));
    EXPECT_EQ(groups[0].target.buckets, std::vector<uint32_t>({2000, 2999}));
    EXPECT_EQ(groups[1].target.address, "b:1");
    EXPECT_EQ(groups[1].members, std::vector<int>({0, 2, 3}));
    EXPECT_EQ(groups[1].target.buckets, std::vector<uint32_t>({5, 10}));  // distinct, sorted
    EXPECT_EQ(calls, 0);  // no coordinator asked when every owner is known
}

TEST(GroupingTest, UnknownOwnersAndUnroutedRowsShareOneCoordinator) {
    int calls = 0;
    auto groups = group_by_owner(4, of({4000, 7, std::nullopt, 4001}), owners(&calls));
    EXPECT_EQ(calls, 1);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].target.address, "b:1");
    EXPECT_EQ(groups[0].members, std::vector<int>({1}));
    EXPECT_EQ(groups[1].target.address, "c:1");
    EXPECT_EQ(groups[1].target.role, Role::Coordinator);
    EXPECT_EQ(groups[1].members, std::vector<int>({0, 2, 3}));
    EXPECT_EQ(groups[1].target.buckets, std::vector<uint32_t>({4000, 4001}));
}

TEST(GroupingTest, UnroutedRowsCarryNoBucket) {
    int calls = 0;
    auto groups = group_by_owner(3, of({std::nullopt, std::nullopt, std::nullopt}), owners(&calls));
    ASSERT_EQ(groups.size(), 1u);
    EXPECT_EQ(groups[0].members, std::vector<int>({0, 1, 2}));
    EXPECT_TRUE(groups[0].target.buckets.empty());
    EXPECT_EQ(groups[0].target.sent, Sent::Coordinator);
    EXPECT_EQ(calls, 1);
}

// The owner's rows run on Picodata's local path; the coordinator's may wait for another
// replicaset's master (a dead master stalls the tier): they are not sent together. A batched key
// list groups its keys the same way.
TEST(GroupingTest, ACoordinatorAtAnOwnersAddressKeepsItsMembersApart) {
    OwnerLookups l;
    l.owner = [](uint32_t bucket, Target *out) {
        if (bucket == 99)
            return false;
        *out = master_target("a:1", "r1");
        return true;
    };
    l.coordinator = [] { return coordinator_target("a:1"); };
    auto groups = group_by_owner(3, of({1, 99, 2}), l);
    ASSERT_EQ(groups.size(), 2u);
    EXPECT_EQ(groups[0].target.role, Role::Master);
    EXPECT_EQ(groups[0].members, std::vector<int>({0, 2}));
    EXPECT_EQ(groups[0].target.buckets, std::vector<uint32_t>({1, 2}));
    EXPECT_EQ(groups[1].target.address, "a:1");
    EXPECT_EQ(groups[1].target.role, Role::Coordinator);
    EXPECT_EQ(groups[1].members, std::vector<int>({1}));
    EXPECT_EQ(groups[1].target.buckets, std::vector<uint32_t>({99}));
}

TEST(GroupingTest, NoMembersNoGroups) {
    int calls = 0;
    EXPECT_TRUE(group_by_owner(0, of({}), owners(&calls)).empty());
}

// The statistics count a statement by how it was routed: a group of several keys or rows at their
// owner is a batch, a group of one is routed by its key, a coordinator's group is a coordinator's
// statement (whatever the lookups said); a row sent on its own is routed by its key.
TEST(GroupingTest, EachGroupSaysHowItIsReached) {
    int calls = 0;
    auto groups = group_by_owner(4, of({10, 2000, 11, 4000}), owners(&calls));
    ASSERT_EQ(groups.size(), 3u);
    EXPECT_EQ(groups[0].target.sent, Sent::RoutedByKey);  // a:1, one key
    EXPECT_EQ(groups[1].target.sent, Sent::KeyBatch);     // b:1, two keys
    EXPECT_EQ(groups[2].target.sent, Sent::Coordinator);  // c:1, the unknown owner
    EXPECT_EQ(member_target(groups[1]).sent, Sent::RoutedByKey);
    EXPECT_EQ(member_target(groups[2]).sent, Sent::Coordinator);
    EXPECT_EQ(member_target(groups[1]).buckets, groups[1].target.buckets);
}

}  // namespace
}  // namespace picoroute::routing
