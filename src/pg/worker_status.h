// The worker's status block in shared memory (what picoroute_status shows about the worker and its
// refreshes) and the refresh hand-shake: a backend wakes the worker and waits until a refresh that
// started after its request has finished. The map itself lives in map_store.h.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

#include <cstdint>

namespace picoroute::pg {

// Shared memory, from the library's shmem hooks (picoroute.cpp): the size to request, and the
// block's creation or attachment (called with AddinShmemInitLock held).
Size worker_status_shmem_size();
void worker_status_shmem_init();

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
    uint64_t refreshes_started;
    uint64_t refreshes_finished;
    uint64_t refreshes_failed;
    uint64_t topology_resets;
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
uint64_t status_refresh_begin();               // returns the refresh's sequence number
void status_refresh_end(uint64_t seq, bool success);

// Backend side of picoroute_refresh(): wakes the worker and waits until a refresh that started
// after the call has finished. Returns false on timeout; `failed` tells whether that refresh
// failed.
bool request_refresh_and_wait(int timeout_ms, bool *failed);
// Wakes the worker without waiting (e.g. after a connection failure).
void wake_worker();

}  // namespace picoroute::pg
