// Shared memory of picoroute: the double-buffered topology snapshot and the worker status block.
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "pgstat.h"
#include "port/atomics.h"
#include "storage/condition_variable.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include "core/address.h"
#include "core/errors.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/settings.h"

#include <cstring>
#include <optional>
#include <string>

namespace picoroute::pg {

namespace {

struct Slot {
    pg_atomic_uint64 seq;  // odd while the slot is being written
    uint64 generation;
    uint64 size;
    // followed by `slot_capacity` bytes of image
};

struct SharedState {
    LWLock *publish_lock;
    pg_atomic_uint32 current_slot;
    pg_atomic_uint64 generation;
    Size slot_capacity;
    Size slot_stride;

    slock_t mutex;      // protects everything below
    StatusCopy status;  // what picoroute_status shows (its generation field is unused here)
    int worker_procno;
    uint64 last_finished_seq;
    bool last_finished_failed;
    ConditionVariable refresh_cv;
};

SharedState *shared = nullptr;
shmem_request_hook_type prev_shmem_request_hook = nullptr;
shmem_startup_hook_type prev_shmem_startup_hook = nullptr;

// Backend-local copy of the current image.
struct LocalCopy {
    std::string bytes;
    uint64 generation = UINT64_MAX;
    std::optional<SnapshotView> view;
};
LocalCopy local;
std::string empty_image;
std::optional<SnapshotView> empty_view;

Size slot_header_size() {
    return MAXALIGN(sizeof(Slot));
}

Size shared_size(Size capacity) {
    Size stride = add_size(slot_header_size(), MAXALIGN(capacity));
    return add_size(MAXALIGN(sizeof(SharedState)), mul_size(stride, 2));
}

Slot *slot_at(uint32 index) {
    char *base = reinterpret_cast<char *>(shared) + MAXALIGN(sizeof(SharedState));
    return reinterpret_cast<Slot *>(base + index * shared->slot_stride);
}

char *slot_data(Slot *slot) {
    return reinterpret_cast<char *>(slot) + slot_header_size();
}

void request_shmem() {
    if (prev_shmem_request_hook)
        prev_shmem_request_hook();
    RequestAddinShmemSpace(shared_size(snapshot_capacity(configured_limits())));
    RequestNamedLWLockTranche("picoroute", 1);
}

void startup_shmem() {
    if (prev_shmem_startup_hook)
        prev_shmem_startup_hook();
    LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
    Size capacity = snapshot_capacity(configured_limits());
    bool found = false;
    shared =
        static_cast<SharedState *>(ShmemInitStruct("picoroute", shared_size(capacity), &found));
    if (!found) {
        memset(shared, 0, MAXALIGN(sizeof(SharedState)));
        shared->publish_lock = &(GetNamedLWLockTranche("picoroute"))->lock;
        pg_atomic_init_u32(&shared->current_slot, 0);
        pg_atomic_init_u64(&shared->generation, 0);
        shared->slot_capacity = capacity;
        shared->slot_stride = add_size(slot_header_size(), MAXALIGN(capacity));
        for (uint32 i = 0; i < 2; i++) {
            Slot *slot = slot_at(i);
            pg_atomic_init_u64(&slot->seq, 0);
            slot->generation = 0;
            slot->size = 0;
        }
        SpinLockInit(&shared->mutex);
        shared->status.worker_pid = 0;
        shared->worker_procno = -1;
        shared->status.state = WorkerState::NotStarted;
        ConditionVariableInit(&shared->refresh_cv);
    }
    LWLockRelease(AddinShmemInitLock);
}

const SnapshotView *the_empty_view() {
    if (!empty_view) {
        empty_image = build_snapshot(Topology(), SnapshotLimits{1, 1, 1});
        empty_view.emplace(empty_image.data(), empty_image.size());
    }
    return &*empty_view;
}

// Reads the slot's generation consistently; false when the slot was being written.
bool read_generation(Slot *slot, uint64 *seq_out, uint64 *generation_out) {
    uint64 seq = pg_atomic_read_u64(&slot->seq);
    if (seq & 1)
        return false;
    pg_read_barrier();
    uint64 generation = slot->generation;
    pg_read_barrier();
    if (pg_atomic_read_u64(&slot->seq) != seq)
        return false;
    *seq_out = seq;
    *generation_out = generation;
    return true;
}

}  // namespace

SnapshotLimits configured_limits() {
    return SnapshotLimits{static_cast<uint32_t>(setting_max_instances),
                          static_cast<uint32_t>(setting_max_replicasets),
                          static_cast<uint32_t>(setting_max_bucket_ranges)};
}

void map_store_install_hooks() {
    prev_shmem_request_hook = shmem_request_hook;
    shmem_request_hook = request_shmem;
    prev_shmem_startup_hook = shmem_startup_hook;
    shmem_startup_hook = startup_shmem;
}

bool map_store_available() {
    return shared != nullptr;
}

void require_preloaded() {
    if (shared != nullptr)
        return;
    ereport(ERROR, (errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
                    errmsg("picoroute must be loaded via shared_preload_libraries"),
                    errhint("Add picoroute to shared_preload_libraries in postgresql.conf and "
                            "restart the server.")));
}

MapRef current_map() {
    // A bounded number of attempts: a writer holds a slot only for one memcpy, and it writes the
    // slot that is not current, so retries are rare.
    for (int attempt = 0; attempt < 1000; attempt++) {
        uint32 index = pg_atomic_read_u32(&shared->current_slot);
        pg_read_barrier();
        Slot *slot = slot_at(index);
        uint64 seq = 0, generation = 0;
        if (!read_generation(slot, &seq, &generation))
            continue;
        if (generation == 0)
            return MapRef{the_empty_view(), 0};
        if (generation == local.generation && local.view)
            return MapRef{&*local.view, generation};
        uint64 size = slot->size;
        if (size > shared->slot_capacity)
            continue;
        local.view.reset();
        local.generation = UINT64_MAX;
        local.bytes.assign(slot_data(slot), size);
        pg_read_barrier();
        if (pg_atomic_read_u64(&slot->seq) != seq)
            continue;
        local.view.emplace(local.bytes.data(), local.bytes.size());
        // Lookups then cost the same whatever the number of ranges (O(1) per bucket), for the
        // tiers whose tables fit picoroute.max_map_memory; the others are searched.
        local.view->build_bucket_index(1u << 20,
                                       static_cast<size_t>(setting_max_map_memory) * 1024);
        local.generation = generation;
        return MapRef{&*local.view, generation};
    }
    throw Error(ErrorKind::InvalidInput,
                "picoroute: the shared topology map kept changing while it was read");
}

uint64_t published_generation() {
    return pg_atomic_read_u64(&shared->generation);
}

namespace {

// Makes `image` current; the caller holds the publish lock and checked the size.
bool publish_image(const std::string &image) {
    Assert(LWLockHeldByMeInMode(shared->publish_lock, LW_EXCLUSIVE));
    uint32 current = pg_atomic_read_u32(&shared->current_slot);
    Slot *cur = slot_at(current);
    if (cur->generation != 0 && cur->size == image.size() &&
        memcmp(slot_data(cur), image.data(), image.size()) == 0)
        return false;

    uint64 generation = pg_atomic_read_u64(&shared->generation) + 1;
    Slot *target = slot_at(1 - current);
    pg_atomic_fetch_add_u64(&target->seq, 1);  // odd: being written (full barrier)
    memcpy(slot_data(target), image.data(), image.size());
    target->size = image.size();
    target->generation = generation;
    pg_write_barrier();
    pg_atomic_fetch_add_u64(&target->seq, 1);  // even again
    pg_atomic_exchange_u32(&shared->current_slot, 1 - current);
    pg_atomic_write_u64(&shared->generation, generation);

    SnapshotView view(image.data(), image.size());
    SpinLockAcquire(&shared->mutex);
    shared->status.n_tiers = view.n_tiers();
    shared->status.n_replicasets = view.n_replicasets();
    shared->status.n_instances = view.n_instances();
    shared->status.n_ranges = view.n_ranges();
    SpinLockRelease(&shared->mutex);
    return true;
}

}  // namespace

PublishResult publish_topology(const Topology &topology, std::optional<uint64_t> expected) {
    std::string image;
    try {
        image = build_snapshot(topology, configured_limits());
        if (image.size() > shared->slot_capacity)
            throw Error(ErrorKind::CapacityExceeded,
                        "the topology image needs " + std::to_string(image.size()) +
                            " bytes but a shared slot holds " +
                            std::to_string(shared->slot_capacity),
                        "Raise picoroute.max_instances, picoroute.max_replicasets or "
                        "picoroute.max_bucket_ranges (they size the slots) and restart the "
                        "server.");
    } catch (const Error &e) {
        if (e.kind() == ErrorKind::CapacityExceeded)
            status_set_capacity_exceeded(true);
        throw;
    }
    status_set_capacity_exceeded(false);
    // LWLockAcquire may only fail by ERROR on a broken lock; it holds interrupts off meanwhile.
    pg_call([] { LWLockAcquire(shared->publish_lock, LW_EXCLUSIVE); });
    PublishResult result = PublishResult::Conflict;
    if (!expected || pg_atomic_read_u64(&shared->generation) == *expected)
        result = publish_image(image) ? PublishResult::Published : PublishResult::Unchanged;
    LWLockRelease(shared->publish_lock);
    return result;
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
    SpinLockAcquire(&shared->mutex);
    copy = shared->status;
    SpinLockRelease(&shared->mutex);
    copy.generation = pg_atomic_read_u64(&shared->generation);
    return copy;
}

void status_worker_started(int pid) {
    SpinLockAcquire(&shared->mutex);
    shared->status.worker_pid = pid;
    shared->worker_procno = MyProc->pgprocno;
    shared->status.state = WorkerState::Idle;
    SpinLockRelease(&shared->mutex);
}

void status_worker_stopped() {
    SpinLockAcquire(&shared->mutex);
    shared->status.worker_pid = 0;
    shared->worker_procno = -1;
    shared->status.state = WorkerState::Stopped;
    SpinLockRelease(&shared->mutex);
    ConditionVariableBroadcast(&shared->refresh_cv);
}

void status_set_state(WorkerState state) {
    SpinLockAcquire(&shared->mutex);
    shared->status.state = state;
    SpinLockRelease(&shared->mutex);
}

namespace {

// Copies a message into a status field, cut on a UTF-8 character boundary.
template <size_t N>
void set_text(char (&field)[N], const char *message) {
    std::string text = utf8_truncate(message, N - 1);
    SpinLockAcquire(&shared->mutex);
    memcpy(field, text.c_str(), text.size() + 1);
    SpinLockRelease(&shared->mutex);
}

}  // namespace

void status_set_source(const char *instance) {
    set_text(shared->status.source_instance, instance);
}

void status_count_reset() {
    SpinLockAcquire(&shared->mutex);
    shared->status.topology_resets++;
    SpinLockRelease(&shared->mutex);
}

void status_set_error(const char *message) {
    set_text(shared->status.last_error, message);
}

void status_set_warning(const char *message) {
    set_text(shared->status.last_warning, message);
}

void status_set_capacity_exceeded(bool exceeded) {
    SpinLockAcquire(&shared->mutex);
    shared->status.capacity_exceeded = exceeded;
    SpinLockRelease(&shared->mutex);
}

uint64_t status_refresh_begin() {
    TimestampTz now = GetCurrentTimestamp();
    SpinLockAcquire(&shared->mutex);
    uint64 seq = ++shared->status.refreshes_started;
    shared->status.last_refresh_start = now;
    shared->status.state = WorkerState::Refreshing;
    SpinLockRelease(&shared->mutex);
    return seq;
}

void status_refresh_end(uint64_t seq, bool success) {
    TimestampTz now = GetCurrentTimestamp();
    SpinLockAcquire(&shared->mutex);
    shared->status.refreshes_finished++;
    if (!success)
        shared->status.refreshes_failed++;
    else
        shared->status.last_success = now;
    shared->status.last_refresh_end = now;
    shared->last_finished_seq = seq;
    shared->last_finished_failed = !success;
    SpinLockRelease(&shared->mutex);
    ConditionVariableBroadcast(&shared->refresh_cv);
}

void wake_worker() {
    SpinLockAcquire(&shared->mutex);
    int procno = shared->worker_procno;
    SpinLockRelease(&shared->mutex);
    if (procno >= 0)
        SetLatch(&ProcGlobal->allProcs[procno].procLatch);
}

bool request_refresh_and_wait(int timeout_ms, bool *failed) {
    SpinLockAcquire(&shared->mutex);
    uint64 started_before = shared->status.refreshes_started;
    SpinLockRelease(&shared->mutex);
    wake_worker();

    TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
    bool done = false;
    *failed = false;
    ConditionVariablePrepareToSleep(&shared->refresh_cv);
    for (;;) {
        SpinLockAcquire(&shared->mutex);
        int pid = shared->status.worker_pid;
        if (shared->last_finished_seq > started_before) {
            done = true;
            *failed = shared->last_finished_failed;
        }
        SpinLockRelease(&shared->mutex);
        if (done)
            break;
        long remaining = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
        if (remaining <= 0)
            break;
        if (pid == 0)
            break;  // no worker to wait for
        ConditionVariableTimedSleep(&shared->refresh_cv, Min(remaining, 100L), PG_WAIT_EXTENSION);
    }
    ConditionVariableCancelSleep();
    return done;
}

}  // namespace picoroute::pg
