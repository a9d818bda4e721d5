// The topology event log (view picoroute_topology_events): what the map store published and what
// the worker did, newest last, in a ring of picoroute.max_topology_events records in shared
// memory. It lives as long as the server: a restart of the worker keeps it (nothing but the
// shared-memory initialisation clears it). When the ring is full the oldest record is dropped, and
// the count of dropped records is kept.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

#include "core/topology_diff.h"

#include <cstdint>
#include <vector>

namespace picoroute::pg {

// Shared memory, from the library's shmem hooks (picoroute.cpp): the size to request, the lock to
// request, and the ring's creation or attachment (called with AddinShmemInitLock held).
Size topology_log_shmem_size();
void topology_log_request_lock();
void topology_log_shmem_init();

// Appends `changes`, all stamped with the current time and `generation` (the map generation they
// produced, or the one current when the worker changed state). Strings longer than their field
// are cut on a UTF-8 character boundary. Never throws and never raises a PostgreSQL error: a log
// that cannot be written (no shared memory, no memory for the copy) loses the changes.
void topology_log_append(const std::vector<TopologyChange> &changes, uint64_t generation) noexcept;

struct LoggedChange {
    uint64_t seq;  // 1 for the first record since the server started, consecutive
    TimestampTz time;
    uint64_t generation;
    TopologyChange change;
};
struct LogCopy {
    std::vector<LoggedChange> records;  // oldest first
    uint64_t dropped = 0;               // records overwritten since the server started
    TimestampTz last_dropped_time = 0;  // the time of the newest of them
    uint32_t capacity = 0;
};
// A consistent copy of the ring. Throws (PgError) only when the lock cannot be taken.
LogCopy topology_log_read();

}  // namespace picoroute::pg
