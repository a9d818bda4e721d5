// The worker's status block and the refresh hand-shake in shared memory (see worker_status.h): one
// spinlock guards the block; a condition variable wakes the backends waiting for a refresh.
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "storage/condition_variable.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include "core/address.h"
#include "pg/worker_status.h"

#include <cstring>
#include <string>

namespace picoroute::pg {

namespace {

struct StatusBlock {
    slock_t mutex;      // protects everything below
    StatusCopy status;  // what picoroute_status shows
    int worker_procno;  // -1 while no worker runs
    uint64 last_finished_seq;
    bool last_finished_failed;
    ConditionVariable refresh_cv;  // broadcast when a refresh finishes or the worker stops
};

StatusBlock *block = nullptr;

// Copies a message into a status field, cut on a UTF-8 character boundary.
template <size_t N>
void set_text(char (&field)[N], const char *message) {
    std::string text = utf8_truncate(message, N - 1);
    SpinLockAcquire(&block->mutex);
    memcpy(field, text.c_str(), text.size() + 1);
    SpinLockRelease(&block->mutex);
}

}  // namespace

Size worker_status_shmem_size() {
    return MAXALIGN(sizeof(StatusBlock));
}

void worker_status_shmem_init() {
    bool found = false;
    block = static_cast<StatusBlock *>(
        ShmemInitStruct("picoroute worker status", worker_status_shmem_size(), &found));
    if (found)
        return;
    memset(block, 0, sizeof(StatusBlock));
    SpinLockInit(&block->mutex);
    block->status.worker_pid = 0;
    block->status.state = WorkerState::NotStarted;
    block->worker_procno = -1;
    ConditionVariableInit(&block->refresh_cv);
}

const char *worker_state_name(WorkerState state) {
    switch (state) {
        case WorkerState::NotStarted:
            return "not started";
        case WorkerState::Idle:
            return "idle";
        case WorkerState::Connecting:
            return "connecting";
        case WorkerState::Refreshing:
            return "refreshing";
        case WorkerState::Waiting:
            return "waiting";
        case WorkerState::Backoff:
            return "backoff";
        case WorkerState::Stopped:
            return "stopped";
    }
    return "unknown";
}

StatusCopy read_status() {
    StatusCopy copy;
    SpinLockAcquire(&block->mutex);
    copy = block->status;
    SpinLockRelease(&block->mutex);
    return copy;
}

void status_worker_started(int pid) {
    SpinLockAcquire(&block->mutex);
    block->status.worker_pid = pid;
    block->worker_procno = MyProc->pgprocno;
    block->status.state = WorkerState::Idle;
    SpinLockRelease(&block->mutex);
}

void status_worker_stopped() {
    SpinLockAcquire(&block->mutex);
    block->status.worker_pid = 0;
    block->worker_procno = -1;
    block->status.state = WorkerState::Stopped;
    SpinLockRelease(&block->mutex);
    ConditionVariableBroadcast(&block->refresh_cv);
}

void status_set_state(WorkerState state) {
    SpinLockAcquire(&block->mutex);
    block->status.state = state;
    SpinLockRelease(&block->mutex);
}

void status_set_source(const char *instance) {
    set_text(block->status.source_instance, instance);
}

void status_count_reset() {
    SpinLockAcquire(&block->mutex);
    block->status.topology_resets++;
    SpinLockRelease(&block->mutex);
}

void status_set_error(const char *message) {
    set_text(block->status.last_error, message);
}

void status_set_warning(const char *message) {
    set_text(block->status.last_warning, message);
}

uint64_t status_refresh_begin() {
    TimestampTz now = GetCurrentTimestamp();
    SpinLockAcquire(&block->mutex);
    uint64 seq = ++block->status.refreshes_started;
    block->status.last_refresh_start = now;
    block->status.state = WorkerState::Refreshing;
    SpinLockRelease(&block->mutex);
    return seq;
}

void status_refresh_end(uint64_t seq, bool success) {
    TimestampTz now = GetCurrentTimestamp();
    SpinLockAcquire(&block->mutex);
    block->status.refreshes_finished++;
    if (!success)
        block->status.refreshes_failed++;
    else
        block->status.last_success = now;
    block->status.last_refresh_end = now;
    block->last_finished_seq = seq;
    block->last_finished_failed = !success;
    SpinLockRelease(&block->mutex);
    ConditionVariableBroadcast(&block->refresh_cv);
}

void wake_worker() {
    SpinLockAcquire(&block->mutex);
    int procno = block->worker_procno;
    SpinLockRelease(&block->mutex);
    if (procno >= 0)
        SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

bool request_refresh_and_wait(int timeout_ms, bool *failed) {
    SpinLockAcquire(&block->mutex);
    uint64 started_before = block->status.refreshes_started;
    SpinLockRelease(&block->mutex);
    wake_worker();

    TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
    bool done = false;
    *failed = false;
    ConditionVariablePrepareToSleep(&block->refresh_cv);
    for (;;) {
        SpinLockAcquire(&block->mutex);
        int pid = block->status.worker_pid;
        if (block->last_finished_seq > started_before) {
            done = true;
            *failed = block->last_finished_failed;
        }
        SpinLockRelease(&block->mutex);
        if (done)
            break;
        long remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
        if (remaining <= 0)
            break;
        if (pid == 0)
            break;  // no worker to wait for
        ConditionVariableTimedSleep(&block->refresh_cv, Min(remaining, 100L), PG_WAIT_EXTENSION);
    }
    ConditionVariableCancelSleep();
    return done;
}

}  // namespace picoroute::pg
