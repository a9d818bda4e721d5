// The shared topology map (see map_store.h): two snapshot slots behind a sequence lock, the publish
// lock that orders writers, and each backend's local copy of the current image.
extern "C" {
#include "postgres.h"

#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
}

#include "core/errors.h"
#include "core/snapshot_restore.h"
#include "core/topology_diff.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/settings.h"
#include "pg/topology_log.h"

#include <cstring>
#include <optional>
#include <string>

namespace picoroute::pg {

namespace {

struct Slot {
    pg_atomic_uint64 seq;  // odd while the slot is being written
    uint64 generation;
    uint64 size;
    uint32 origin;  // MapOrigin of the image
    // followed by `slot_capacity` bytes of image
};

struct SharedState {
    LWLock *publish_lock;
    pg_atomic_uint32 current_slot;
    pg_atomic_uint64 generation;
    pg_atomic_uint32 over_capacity;  // the last topology offered to publish() did not fit
    Size slot_capacity;
    Size slot_stride;
};

SharedState *shared = nullptr;

// Backend-local copy of the current image.
struct LocalCopy {
    std::string bytes;
    uint64 generation = UINT64_MAX;
    MapOrigin origin = MapOrigin::Events;
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

Size map_store_shmem_size() {
    return shared_size(snapshot_capacity(configured_limits()));
}

void map_store_request_lock() {
    RequestNamedLWLockTranche("picoroute", 1);
}

void map_store_shmem_init() {
    Size capacity = snapshot_capacity(configured_limits());
    bool found = false;
    shared =
        static_cast<SharedState *>(ShmemInitStruct("picoroute", shared_size(capacity), &found));
    if (found)
        return;
    memset(shared, 0, MAXALIGN(sizeof(SharedState)));
    shared->publish_lock = &(GetNamedLWLockTranche("picoroute"))->lock;
    pg_atomic_init_u32(&shared->current_slot, 0);
    pg_atomic_init_u64(&shared->generation, 0);
    pg_atomic_init_u32(&shared->over_capacity, 0);
    shared->slot_capacity = capacity;
    shared->slot_stride = add_size(slot_header_size(), MAXALIGN(capacity));
    for (uint32 i = 0; i < 2; i++) {
        Slot *slot = slot_at(i);
        pg_atomic_init_u64(&slot->seq, 0);
        slot->generation = 0;
        slot->size = 0;
        slot->origin = static_cast<uint32>(MapOrigin::Events);
    }
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
            return MapRef{&*local.view, generation, local.origin};
        uint64 size = slot->size;
        MapOrigin origin = static_cast<MapOrigin>(slot->origin);
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
        local.origin = origin;
        return MapRef{&*local.view, generation, origin};
    }
    throw Error(ErrorKind::InvalidInput,
                "picoroute: the shared topology map kept changing while it was read");
}

uint64_t published_generation() {
    return pg_atomic_read_u64(&shared->generation);
}

namespace {

// Holds the publish lock for its lifetime. LWLockAcquire may only fail by ERROR on a broken lock;
// it holds interrupts off until the release, so nothing between them can raise one.
class PublishLock {
  public:
    PublishLock() {
        pg_call([] { LWLockAcquire(shared->publish_lock, LW_EXCLUSIVE); });
    }
    ~PublishLock() { LWLockRelease(shared->publish_lock); }
    PublishLock(const PublishLock &) = delete;
    PublishLock &operator=(const PublishLock &) = delete;
};

// Makes `image` current unless it equals the current image and has the same origin; the caller
// holds the publish lock and checked the size. Writes only plain memory: nothing here throws.
bool publish_image(const std::string &image, MapOrigin origin) noexcept {
    Assert(LWLockHeldByMeInMode(shared->publish_lock, LW_EXCLUSIVE));
    uint32 current = pg_atomic_read_u32(&shared->current_slot);
    Slot *cur = slot_at(current);
    if (cur->generation != 0 && cur->size == image.size() &&
        cur->origin == static_cast<uint32>(origin) &&
        memcmp(slot_data(cur), image.data(), image.size()) == 0)
        return false;

    uint64 generation = pg_atomic_read_u64(&shared->generation) + 1;
    Slot *target = slot_at(1 - current);
    pg_atomic_fetch_add_u64(&target->seq, 1);  // odd: being written (full barrier)
    memcpy(slot_data(target), image.data(), image.size());
    target->size = image.size();
    target->generation = generation;
    target->origin = static_cast<uint32>(origin);
    pg_write_barrier();
    pg_atomic_fetch_add_u64(&target->seq, 1);  // even again
    pg_atomic_exchange_u32(&shared->current_slot, 1 - current);
    pg_atomic_write_u64(&shared->generation, generation);
    return true;
}

// Appends to the topology event log what changed from the image publish_image() just replaced to
// `after`; the caller still holds the publish lock, so that image stays in its slot. The log is an
// aid: nothing here may fail the publication.
void log_changes(const Topology &after) noexcept {
    try {
        Slot *previous = slot_at(1 - pg_atomic_read_u32(&shared->current_slot));
        Topology before;
        if (previous->generation != 0)
            before = topology_from_snapshot(SnapshotView(slot_data(previous), previous->size));
        topology_log_append(diff_topologies(before, after), published_generation());
    } catch (...) {
    }
}

// The image of `topology`; throws Error(CapacityExceeded) when it does not fit the slots.
std::string image_that_fits(const Topology &topology) {
    std::string image = build_snapshot(topology, configured_limits());
    if (image.size() > shared->slot_capacity)
        throw Error(ErrorKind::CapacityExceeded,
                    "the topology image needs " + std::to_string(image.size()) +
                        " bytes but a shared slot holds " + std::to_string(shared->slot_capacity),
                    "Raise picoroute.max_instances, picoroute.max_replicasets or "
                    "picoroute.max_bucket_ranges (they size the slots) and restart the server.");
    return image;
}

}  // namespace

PublishOutcome publish(const Topology &topology, MapOrigin origin,
                       std::optional<uint64_t> expected) {
    std::string image;
    try {
        image = image_that_fits(topology);
    } catch (const Error &e) {
        if (e.kind() != ErrorKind::CapacityExceeded)
            throw;
        pg_atomic_write_u32(&shared->over_capacity, 1);
        return PublishOutcome{PublishResult::OverCapacity, published_generation(), e};
    }
    pg_atomic_write_u32(&shared->over_capacity, 0);
    PublishLock lock;
    PublishResult result = PublishResult::Conflict;
    if (!expected || pg_atomic_read_u64(&shared->generation) == *expected)
        result = publish_image(image, origin) ? PublishResult::Published : PublishResult::Unchanged;
    if (result == PublishResult::Published)
        log_changes(topology);
    return PublishOutcome{result, pg_atomic_read_u64(&shared->generation), std::nullopt};
}

bool map_over_capacity() {
    return pg_atomic_read_u32(&shared->over_capacity) != 0;
}

}  // namespace picoroute::pg
