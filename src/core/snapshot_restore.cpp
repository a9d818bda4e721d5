// Snapshot image -> topology model. The model is rebuilt by replaying events through
// Topology::apply, so it can only ever hold a state the seed algorithm itself could produce.
//
// Order of replay: replicasets, instances, bucket ranges, then tiers. Tiers go last on purpose: a
// tier's bucket_count is only learned once (the first value stays) and may have arrived after
// ranges that reach beyond it; replaying it first would make Topology::apply reject such a range
// and the restore would fail on a map the publisher accepted. Replaying it last builds the same
// model.
//
// What the image cannot tell apart, and how it is restored:
// - an empty string and an unknown field: both become std::nullopt;
// - a tier's bucket_count is replayed only when the image says it came from a tier event
//   (kTierCountKnown), so a tier whose count is not known yet can still learn it later;
// - a replicaset master that is not a known instance yet keeps its uuid (master_uuid), so the
//   instance event that follows in a later call completes it.
#include "core/snapshot_restore.h"

#include "core/errors.h"
#include "core/events.h"

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace picoroute {

namespace {

std::optional<std::string> optional_text(const SnapshotView &view, StringRef ref) {
    if (ref.length == 0) {
        return std::nullopt;
    }
    return std::string(view.str(ref));
}

// A replicaset uuid no real replicaset has, used to make a tier known without a TierEvent.
std::string unused_replicaset_uuid(const SnapshotView &view) {
    std::set<std::string_view> taken;
    for (uint32_t i = 0; i < view.n_replicasets(); ++i) {
        taken.insert(view.str(view.replicaset(i).uuid));
    }
    std::string candidate = "picoroute-restore-placeholder";
    while (taken.count(candidate) != 0) {
        candidate += '-';
    }
    return candidate;
}

// Replicasets. A new replicaset in a tier that already has one clears that tier's map; the map is
// still empty at this point, so that changes nothing. Returns the tiers they belong to.
std::set<std::string> replay_replicasets(const SnapshotView &view, Topology &topology) {
    std::set<std::string> tiers_present;
    for (uint32_t i = 0; i < view.n_replicasets(); ++i) {
        const ReplicasetRecord &record = view.replicaset(i);
        ReplicasetEvent event{
            Op::Replace, std::string(view.str(record.uuid)), optional_text(view, record.tier),
            optional_text(view, record.master_uuid), optional_text(view, record.name)};
        if (event.tier) {
            tiers_present.insert(*event.tier);
        }
        topology.apply(event);
    }
    return tiers_present;
}

void replay_instances(const SnapshotView &view, Topology &topology) {
    for (uint32_t i = 0; i < view.n_instances(); ++i) {
        const InstanceRecord &record = view.instance(i);
        topology.apply(
            InstanceEvent{Op::Replace, std::string(view.str(record.uuid)),
                          optional_text(view, record.replicaset_uuid),
                          optional_text(view, record.state), optional_text(view, record.address),
                          optional_text(view, record.name), optional_text(view, record.version)});
    }
}

// A tier with neither a bucket_count, a replicaset nor a range (its replicasets were all deleted)
// is still known: create it through a placeholder replicaset that is removed at once. Deleting it
// clears the tier's map, which is empty before the ranges are replayed.
void replay_bare_tiers(const SnapshotView &view, const std::set<std::string> &tiers_present,
                       Topology &topology) {
    std::string placeholder;
    for (uint32_t t = 0; t < view.n_tiers(); ++t) {
        const TierRecord &tier = view.tier(t);
        std::string name(view.str(tier.name));
        if ((tier.flags & kTierCountKnown) || tier.n_ranges != 0 ||
            tiers_present.count(name) != 0) {
            continue;
        }
        if (placeholder.empty()) {
            placeholder = unused_replicaset_uuid(view);
        }
        ReplicasetEvent create;
        create.op = Op::Replace;
        create.replicaset_uuid = placeholder;
        create.tier = name;
        topology.apply(create);
        ReplicasetEvent remove;
        remove.op = Op::Delete;
        remove.replicaset_uuid = placeholder;
        topology.apply(remove);
    }
}

// Bucket ranges: sorted and disjoint within a tier, so none overlaps the ones before it.
void replay_ranges(const SnapshotView &view, Topology &topology) {
    for (uint32_t t = 0; t < view.n_tiers(); ++t) {
        const TierRecord &tier = view.tier(t);
        const std::string name(view.str(tier.name));
        for (uint32_t r = tier.first_range; r < tier.first_range + tier.n_ranges; ++r) {
            const RangeRecord &record = view.range(r);
            topology.apply(BucketEvent{Op::Replace, name, std::string(view.str(record.state)),
                                       record.start, record.end,
                                       std::string(view.str(record.replicaset_uuid))});
        }
    }
}

// Tiers with a bucket_count, last (see the top of the file).
void replay_tier_counts(const SnapshotView &view, Topology &topology) {
    for (uint32_t t = 0; t < view.n_tiers(); ++t) {
        const TierRecord &tier = view.tier(t);
        if (tier.flags & kTierCountKnown) {
            topology.apply(TierEvent{std::string(view.str(tier.name)), tier.bucket_count,
                                     (tier.flags & kTierDefault) != 0});
        }
    }
}

}  // namespace

Topology topology_from_snapshot(const SnapshotView &view) {
    Topology topology;
    std::set<std::string> tiers_present = replay_replicasets(view, topology);
    replay_instances(view, topology);
    replay_bare_tiers(view, tiers_present, topology);
    replay_ranges(view, topology);
    replay_tier_counts(view, topology);
    return topology;
}

}  // namespace picoroute
