// The shared-memory topology map: two snapshot slots published with a sequence lock, so a reader
// sees either the previous image or the new one, never a mix, and never waits on the network or on
// the publisher. Plus the worker's status and the refresh hand-shake.
//
// Readers keep a backend-local copy of the current image and copy again only when the generation
// moved, so a lookup is a few atomic reads plus a binary search on local memory.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

#include "core/snapshot.h"
#include "core/topology.h"

#include <cstdint>
#include <optional>
#include <string>

namespace picoroute::pg {

// Registers the shared-memory request (call from _PG_init while preloading).
void map_store_install_hooks();
// True once the shared memory exists (the library was preloaded).
bool map_store_available();
// ERROR with a hint when the library was not preloaded.
void require_preloaded();

// The current map as seen by this backend; `generation` is 0 before the first publish.
struct MapRef {
    const SnapshotView *view;  // never null: an empty map before the first publish
    uint64_t generation;
};
MapRef current_map();

// Publishing (the worker, or a backend in push mode): the one way a map reaches shared memory.
// Builds the image of `topology` against the configured capacities and, under the publish lock,
// makes it current when the published generation is still `expected` (any generation when
// std::nullopt); the generation moves only when the image differs from the current one. Records
// in the status whether the topology fits; throws Error(CapacityExceeded) naming the setting when
// it does not (the published map then stays as it was). Never waits on anything but the lock,
// held for one copy of the image.
enum class PublishResult { Published, Unchanged, Conflict };
PublishResult publish_topology(const Topology &topology,
                               std::optional<uint64_t> expected = std::nullopt);
// The generation of the current image (0 before the first publish); no copy is made.
uint64_t published_generation();
SnapshotLimits configured_limits();

enum class WorkerState : uint32_t {
    NotStarted,
    Idle,
    Connecting,
    Refreshing,
    Waiting,
    Backoff,
    Stopped
};
const char *worker_state_name(WorkerState state);

// A consistent copy of the status block.
struct StatusCopy {
    int worker_pid;
    WorkerState state;
    char source_instance[256];
    char last_error[1024];
    char last_warning[1024];
    TimestampTz last_refresh_start;
    TimestampTz last_refresh_end;
    TimestampTz last_success;
    uint64_t generation;
    uint64_t refreshes_started;
    uint64_t refreshes_finished;
    uint64_t refreshes_failed;
    uint64_t topology_resets;
    uint32_t n_tiers, n_replicasets, n_instances, n_ranges;
    bool capacity_exceeded;
};
StatusCopy read_status();

// Worker side.
void status_worker_started(int pid);
void status_worker_stopped();
void status_set_state(WorkerState state);
void status_set_source(const char *instance);  // "" when not connected
void status_count_reset();                     // the topology was cleared and rebuilt
void status_set_error(const char *message);    // "" clears
void status_set_warning(const char *message);  // non-fatal: e.g. a tier whose buckets were not read
void status_set_capacity_exceeded(bool exceeded);
uint64_t status_refresh_begin();  // returns the refresh's sequence number
void status_refresh_end(uint64_t seq, bool success);

// Backend side of picoroute_refresh(): wakes the worker and waits until a refresh that started
// after the call has finished. Returns false on timeout; `failed` tells whether that refresh
// failed.
bool request_refresh_and_wait(int timeout_ms, bool *failed);
// Wakes the worker without waiting (e.g. after a connection failure).
void wake_worker();

}  // namespace picoroute::pg
