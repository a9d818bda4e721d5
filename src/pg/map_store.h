// The shared-memory topology map: two snapshot slots published with a sequence lock, so a reader
// sees either the previous image or the new one, never a mix, and never waits on the network or on
// the publisher. publish() is the one way a map reaches them (the worker in poll mode,
// picoroute_apply_events in push mode). The worker's status lives in worker_status.h.
//
// Readers keep a backend-local copy of the current image and copy again only when the generation
// moved, so a lookup is a few atomic reads plus a binary search on local memory.
#pragma once

extern "C" {
#include "postgres.h"
}

#include "core/errors.h"
#include "core/snapshot.h"
#include "core/topology.h"

#include <cstdint>
#include <optional>

namespace picoroute::pg {

// Shared memory, from the library's shmem hooks (picoroute.cpp): the size to request, the lock to
// request, and the slots' creation or attachment (called with AddinShmemInitLock held).
Size map_store_shmem_size();
void map_store_request_lock();
void map_store_shmem_init();
// True once the shared memory exists (the library was preloaded).
bool map_store_available();
// ERROR with a hint when the library was not preloaded.
void require_preloaded();

// Where the addresses of a published map come from; they decide where credentials go
// (connect_policy.h). Catalog: the worker built the map from a catalog it read from the
// configured hosts (or from an instance they reported). Events: picoroute_apply_events changed it,
// so any of its addresses may have been given by whoever may call that function.
enum class MapOrigin : uint32_t { Events = 0, Catalog = 1 };

// The current map as seen by this backend; `generation` is 0 before the first publish.
struct MapRef {
    const SnapshotView *view;  // never null: an empty map before the first publish
    uint64_t generation;
    MapOrigin origin = MapOrigin::Events;
};
MapRef current_map();

// Publishing: builds the image of `topology` against the configured capacities and, under the
// publish lock (taken and released here), makes it current, with `origin`, when the published
// generation is still `expected` (any generation when std::nullopt); the generation moves only
// when the image or its origin differs from the current one. A topology that does not fit is
// refused: the published map stays as it was, the outcome carries the Error(CapacityExceeded) that
// names the setting to raise, and map_over_capacity() says so until a topology fits again. Never
// waits on anything but the lock, held for one copy of the image and, when published, for the
// comparison of the replaced map with the new one that the topology event log records
// (topology_log.h).
enum class PublishResult { Published, Unchanged, Conflict, OverCapacity };
struct PublishOutcome {
    PublishResult result;
    uint64_t generation;           // current when the lock was released (the new one if Published)
    std::optional<Error> refusal;  // set exactly when result is OverCapacity
};
[[nodiscard]] PublishOutcome publish(const Topology &topology, MapOrigin origin,
                                     std::optional<uint64_t> expected = std::nullopt);
// Whether the last topology offered to publish() was refused for capacity.
bool map_over_capacity();
// The generation of the current image (0 before the first publish); no copy is made.
uint64_t published_generation();
SnapshotLimits configured_limits();

}  // namespace picoroute::pg
