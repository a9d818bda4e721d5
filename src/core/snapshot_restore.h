// Snapshot image -> topology model: lets a backend in push mode continue from the published map.
#pragma once
#include "core/firewall.h"

#include "core/snapshot.h"
#include "core/topology.h"

namespace picoroute {

// Rebuilds the model the image was built from. Empty string references become std::nullopt (the
// image does not distinguish "unknown" from "empty"). build_snapshot(topology_from_snapshot(v))
// reproduces v's bytes.
Topology topology_from_snapshot(const SnapshotView &view);

}  // namespace picoroute
