// The topology event log in shared memory (see topology_log.h): a ring of fixed-size records behind
// one LWLock. Writers (the map store under its publish lock, the worker) prepare their records in
// local memory and hold the lock only to copy them in; a reader copies the whole ring out.
extern "C" {
#include "postgres.h"

#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"
}

#include "core/address.h"
#include "pg/guard.h"
#include "pg/settings.h"
#include "pg/topology_log.h"

#include <cstring>
#include <new>
#include <string>

namespace picoroute::pg {

namespace {

constexpr const char *kTranche = "picoroute topology events";

// One change as stored. Names are cut to 63 bytes (Picodata's names are short identifiers; an
// unnamed object shows its 36-byte uuid), values to 127, the detail to 511.
struct Record {
    uint64 seq;
    TimestampTz time;
    uint64 generation;
    uint32 kind;
    uint32 bucket_start;
    uint32 bucket_end;
    char tier[64];
    char from_replicaset[64];
    char to_replicaset[64];
    char replicaset[64];
    char instance[64];
    char old_value[128];
    char new_value[128];
    char detail[512];
};

struct Ring {
    LWLock *lock;
    uint32 capacity;
    uint64
        next_seq;  // the seq of the next record; records next_seq - capacity .. next_seq - 1 kept
    TimestampTz last_dropped_time;
    // followed by `capacity` records
};

Ring *ring = nullptr;

Record *records() {
    return reinterpret_cast<Record *>(reinterpret_cast<char *>(ring) + MAXALIGN(sizeof(Ring)));
}

uint32 configured_capacity() {
    return static_cast<uint32>(setting_max_topology_events);
}

template <size_t N>
void put(char (&field)[N], const std::string &text) {
    std::string cut = text.size() < N ? text : utf8_truncate(text, N - 1);
    memcpy(field, cut.c_str(), cut.size() + 1);
}

Record to_record(const TopologyChange &c, TimestampTz now, uint64_t generation) {
    Record r;
    memset(&r, 0, sizeof(r));
    r.time = now;
    r.generation = generation;
    r.kind = static_cast<uint32>(c.kind);
    r.bucket_start = c.bucket_start;
    r.bucket_end = c.bucket_end;
    put(r.tier, c.tier);
    put(r.from_replicaset, c.from_replicaset);
    put(r.to_replicaset, c.to_replicaset);
    put(r.replicaset, c.replicaset);
    put(r.instance, c.instance);
    put(r.old_value, c.old_value);
    put(r.new_value, c.new_value);
    put(r.detail, c.detail);
    return r;
}

TopologyChange from_record(const Record &r) {
    TopologyChange c;
    c.kind = static_cast<ChangeKind>(r.kind);
    c.tier = r.tier;
    c.bucket_start = r.bucket_start;
    c.bucket_end = r.bucket_end;
    c.from_replicaset = r.from_replicaset;
    c.to_replicaset = r.to_replicaset;
    c.replicaset = r.replicaset;
    c.instance = r.instance;
    c.old_value = r.old_value;
    c.new_value = r.new_value;
    c.detail = r.detail;
    return c;
}

// Holds the ring's lock for its lifetime (taken through pg_call: a failure is a PgError).
class RingLock {
  public:
    explicit RingLock(LWLockMode mode) {
        pg_call([mode] { LWLockAcquire(ring->lock, mode); });
    }
    ~RingLock() { LWLockRelease(ring->lock); }
    RingLock(const RingLock &) = delete;
    RingLock &operator=(const RingLock &) = delete;
};

}  // namespace

Size topology_log_shmem_size() {
    return add_size(MAXALIGN(sizeof(Ring)), mul_size(configured_capacity(), sizeof(Record)));
}

void topology_log_request_lock() {
    RequestNamedLWLockTranche(kTranche, 1);
}

void topology_log_shmem_init() {
    bool found = false;
    ring = static_cast<Ring *>(
        ShmemInitStruct("picoroute topology events", topology_log_shmem_size(), &found));
    if (found)
        return;
    memset(ring, 0, MAXALIGN(sizeof(Ring)));
    ring->lock = &(GetNamedLWLockTranche(kTranche))->lock;
    ring->capacity = configured_capacity();
    ring->next_seq = 1;
}

void topology_log_append(const std::vector<TopologyChange> &changes, uint64_t generation) noexcept {
    if (ring == nullptr || changes.empty())
        return;
    try {
        TimestampTz now = GetCurrentTimestamp();
        // Only the newest `capacity` can stay: the others are counted as dropped.
        size_t skip = changes.size() > ring->capacity ? changes.size() - ring->capacity : 0;
        std::vector<Record> prepared;
        prepared.reserve(changes.size() - skip);
        for (size_t i = skip; i < changes.size(); i++)
            prepared.push_back(to_record(changes[i], now, generation));
        RingLock lock(LW_EXCLUSIVE);
        Record *slots = records();
        ring->next_seq += skip;
        if (skip > 0)
            ring->last_dropped_time = now;
        for (Record &r : prepared) {
            r.seq = ring->next_seq++;
            Record &slot = slots[r.seq % ring->capacity];
            if (slot.seq != 0)
                ring->last_dropped_time = Max(ring->last_dropped_time, slot.time);
            slot = r;
        }
    } catch (...) {
        // The log is an aid: losing a change never stops the map from being published.
    }
}

LogCopy topology_log_read() {
    LogCopy copy;
    if (ring == nullptr)
        return copy;
    copy.capacity = ring->capacity;
    std::vector<Record> raw(ring->capacity);
    uint64 next_seq = 0;
    {
        RingLock lock(LW_SHARED);
        memcpy(raw.data(), records(), sizeof(Record) * ring->capacity);
        next_seq = ring->next_seq;
        copy.last_dropped_time = ring->last_dropped_time;
    }
    uint64 written = next_seq - 1;
    uint64 kept = Min(written, static_cast<uint64>(ring->capacity));
    copy.dropped = written - kept;
    copy.records.reserve(kept);
    for (uint64 seq = next_seq - kept; seq < next_seq; seq++) {
        const Record &r = raw[seq % ring->capacity];
        copy.records.push_back(LoggedChange{r.seq, r.time, r.generation, from_record(r)});
    }
    return copy;
}

}  // namespace picoroute::pg
