// What changed between two topologies, as a DBA reads it: buckets that moved, a master that
// switched, an instance that stopped, a replicaset that joined or left, a version that changed.
// The map store compares the map it replaces with the one it publishes (both the worker's and
// picoroute_apply_events' publications go through it) and keeps the changes in the topology
// event log (view picoroute_topology_events); the worker adds the changes of its own state
// (another source instance, a refresh that failed, the first that succeeded again).
#pragma once
#include "core/firewall.h"

#include "core/topology.h"

#include <cstdint>
#include <string>
#include <vector>

namespace picoroute {

enum class ChangeKind : uint32_t {
    TierAdded,               // tier; new_value: its bucket_count
    ReplicasetAdded,         // tier, replicaset; new_value: its master
    ReplicasetRemoved,       // tier, replicaset (expelled, or no longer listed)
    MasterSwitched,          // tier, replicaset, instance (the new master); old/new master
    InstanceAdded,           // tier, replicaset, instance; new_value: its state
    InstanceRemoved,         // tier, replicaset, instance; old_value: its last state
    InstanceStateChanged,    // tier, replicaset, instance; old/new state (Online, Offline, ...)
    InstanceAddressChanged,  // tier, replicaset, instance; old/new host:port
    InstanceVersionChanged,  // tier, replicaset, instance; old/new picodata_version
    BucketsMapped,           // tier, range, to_replicaset: the map did not know their owner
    BucketsMoved,            // tier, range, from_replicaset, to_replicaset
    BucketsUnmapped,         // tier, range, from_replicaset: the map no longer knows their owner
    ClusterVersionChanged,   // old/new: the lowest version an online instance reports
    // Recorded by the worker, never by diff_topologies:
    SourceSwitched,    // old/new: the instance the catalog is read from
    RefreshFailed,     // detail: the error
    RefreshRecovered,  // detail: how many refreshes had failed
    EventsDropped,     // (a row of the view only) new_value: how many older events were dropped
};

// The kind's name in the view (snake_case: "buckets_moved", "master_switched", ...).
const char *change_kind_name(ChangeKind kind);

// One change. Empty strings are "none" (NULL in the view); names are those of the topology the
// change was read in, the uuid where the map knows no name. bucket_start == 0: no bucket range.
struct TopologyChange {
    ChangeKind kind = ChangeKind::TierAdded;
    std::string tier;
    uint32_t bucket_start = 0;
    uint32_t bucket_end = 0;  // inclusive
    std::string from_replicaset, to_replicaset;
    std::string replicaset;
    std::string instance;
    std::string old_value, new_value;
    std::string detail;
};

// The changes from `before` to `after`, in this order: tiers added, replicasets removed, then
// added, masters switched, instances removed, added and changed (state, address, version), the
// bucket ownership of each tier (in tier order, by bucket), the cluster version. Ownership is
// compared bucket by bucket, so ranges split or merged without a new owner give nothing, and the
// adjacent buckets that went from the same owner to the same owner make one change. An unset
// field and an empty one are the same (the published image does not tell them apart).
std::vector<TopologyChange> diff_topologies(const Topology &before, const Topology &after);

}  // namespace picoroute
