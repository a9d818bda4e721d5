// Keys and rows grouped by the instance that owns their bucket: the one grouping of the batched
// key lists (a batched join's keys, an array of keys), of INSERT rows and of the rows an UPDATE or
// DELETE writes one by one. Each group becomes one statement (or a few, key_slices in text.h) to
// its target, all sent in one round.
#pragma once
#include "core/firewall.h"
#include "core/routing/target.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

namespace picoroute::routing {

// Members of one group (indexes into what was grouped, in the order given) and where they go.
// target.buckets: the distinct buckets of its members, sorted. target.sent: KeyBatch for a group
// of several members at their owner, RoutedByKey for one, Coordinator for a coordinator's group.
struct Group {
    Target target;
    std::vector<int> members;
};

// The lookups of the grouping (src/pg/lookup.h gives them on the current map).
struct OwnerLookups {
    // The owner's instance that runs `bucket` (bucket_target), false when the map does not know
    // the owner or its usable instance.
    std::function<bool(uint32_t bucket, Target *out)> owner;
    // The coordinator of the members that are not routed or whose owner is unknown: any online
    // instance (an INSERT's rows), or one of the tier's per the read preference (a key list whose
    // key Picodata hashes differently).
    std::function<Target()> coordinator;
};

// Members 0..n-1 grouped by target instance, in address order. `bucket_of` gives a member's
// bucket, nullopt for one that is not routed; such members and those of a bucket whose owner is
// unknown go to one coordinator (asked once, at the first such member), in a group of their own
// even when the coordinator is an owner's instance (after that owner's group): the owner's
// statement runs on Picodata's local path (26.1.1+), which never waits for another replicaset's
// master, while a statement with members of other or unknown owners is dispatched and may wait (a
// dead master stalls the tier, target.h): grouped together, the owner's members would wait with
// them.
std::vector<Group> group_by_owner(int n,
                                  const std::function<std::optional<uint32_t>(int)> &bucket_of,
                                  const OwnerLookups &lookups);

// The target of one member of `group` sent in a statement of its own (a row written by its
// primary key): the group's, routed by its key unless the group is a coordinator's.
Target member_target(const Group &group);

}  // namespace picoroute::routing
