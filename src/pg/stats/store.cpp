// The statistics' shared memory (see store.h): a header, the instance slots and the table slots,
// each slot on cache lines of its own so that backends counting for different instances never
// share a line. A slot is taken under a spinlock held for a few comparisons and one copy; finding
// a slot takes no lock: the slots below the `used` count never change their key, so a backend
// reads them freely and remembers the slot of every key it met.
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "storage/shmem.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
}

#include "pg/settings.h"
#include "pg/stats/store.h"

#include <cstring>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace picoroute::pg::stats {

namespace {

struct Header {
    slock_t mutex;                    // held while a slot is taken
    pg_atomic_uint32 instances_used;  // slots in use, slot 0 included
    pg_atomic_uint32 tables_used;
    uint32 instance_capacity;  // slots, slot 0 included
    uint32 table_capacity;
    pg_atomic_uint64 reset_time;
};

Header *header = nullptr;
char *instance_base = nullptr;
char *table_base = nullptr;

constexpr Size kHeaderSize = TYPEALIGN(PG_CACHE_LINE_SIZE, sizeof(Header));
constexpr Size kInstanceStride = TYPEALIGN(PG_CACHE_LINE_SIZE, sizeof(InstanceSlot));
constexpr Size kTableStride = TYPEALIGN(PG_CACHE_LINE_SIZE, sizeof(TableSlot));

uint32 instance_capacity() {
    return static_cast<uint32>(setting_max_stat_instances) + 1;
}

uint32 table_capacity() {
    return static_cast<uint32>(setting_max_stat_tables) + 1;
}

InstanceSlot *islot(uint32 index) {
    return reinterpret_cast<InstanceSlot *>(instance_base + index * kInstanceStride);
}

TableSlot *tslot(uint32 index) {
    return reinterpret_cast<TableSlot *>(table_base + index * kTableStride);
}

void init_instance_slot(InstanceSlot *slot) {
    slot->address[0] = '\0';
    for (auto &c : slot->counters)
        pg_atomic_init_u64(&c, 0);
    for (auto &c : slot->latency)
        pg_atomic_init_u64(&c, 0);
    pg_atomic_init_u64(&slot->connections_open, 0);
    pg_atomic_init_u64(&slot->connections_unlisted, 0);
}

void init_table_slot(TableSlot *slot) {
    slot->dbid = InvalidOid;
    slot->relid = InvalidOid;
    for (auto &c : slot->counters)
        pg_atomic_init_u64(&c, 0);
}

// What this backend remembers: the slot of every key it met. The keys of `instances` point into
// the slots' own addresses, which never change; those that got no slot (slot 0) are kept in
// `overflowed`. Allocated once and never freed, so that it outlives every destructor that may
// still count at process exit.
struct Local {
    std::unordered_map<std::string_view, uint32> instances;
    std::unordered_set<std::string> overflowed;
    std::unordered_map<uint64, uint32> tables;
};
Local *local = nullptr;

bool same_address(const InstanceSlot *slot, std::string_view address) {
    return memcmp(slot->address, address.data(), address.size()) == 0 &&
           slot->address[address.size()] == '\0';
}

// The index of the slot of `address`, taken now if no slot has it; 0 when none is free.
uint32 find_or_take_instance(std::string_view address) {
    if (address.empty() || address.size() >= kAddressBytes)
        return 0;
    uint32 used = pg_atomic_read_u32(&header->instances_used);
    pg_read_barrier();
    for (uint32 i = 1; i < used; i++)
        if (same_address(islot(i), address))
            return i;
    uint32 found = 0;
    SpinLockAcquire(&header->mutex);
    uint32 now_used = pg_atomic_read_u32(&header->instances_used);
    for (uint32 i = used; i < now_used && found == 0; i++)
        if (same_address(islot(i), address))
            found = i;
    if (found == 0 && now_used < header->instance_capacity) {
        found = now_used;
        memcpy(islot(found)->address, address.data(), address.size());
        islot(found)->address[address.size()] = '\0';
        pg_write_barrier();
        pg_atomic_write_u32(&header->instances_used, now_used + 1);
    }
    SpinLockRelease(&header->mutex);
    return found;
}

uint32 find_or_take_table(Oid dbid, Oid relid) {
    auto same = [&](uint32 i) { return tslot(i)->dbid == dbid && tslot(i)->relid == relid; };
    uint32 used = pg_atomic_read_u32(&header->tables_used);
    pg_read_barrier();
    for (uint32 i = 1; i < used; i++)
        if (same(i))
            return i;
    uint32 found = 0;
    SpinLockAcquire(&header->mutex);
    uint32 now_used = pg_atomic_read_u32(&header->tables_used);
    for (uint32 i = used; i < now_used && found == 0; i++)
        if (same(i))
            found = i;
    if (found == 0 && now_used < header->table_capacity) {
        found = now_used;
        tslot(found)->dbid = dbid;
        tslot(found)->relid = relid;
        pg_write_barrier();
        pg_atomic_write_u32(&header->tables_used, now_used + 1);
    }
    SpinLockRelease(&header->mutex);
    return found;
}

}  // namespace

Size shmem_size() {
    Size size = kHeaderSize;
    size = add_size(size, mul_size(instance_capacity(), kInstanceStride));
    return add_size(size, mul_size(table_capacity(), kTableStride));
}

void shmem_init() {
    bool found = false;
    char *base = static_cast<char *>(ShmemInitStruct("picoroute statistics", shmem_size(), &found));
    // The region starts on a cache line of its own (ShmemInitStruct aligns to one).
    header = reinterpret_cast<Header *>(base);
    instance_base = base + kHeaderSize;
    table_base = instance_base + instance_capacity() * kInstanceStride;
    if (found)
        return;
    SpinLockInit(&header->mutex);
    header->instance_capacity = instance_capacity();
    header->table_capacity = table_capacity();
    pg_atomic_init_u32(&header->instances_used, 1);
    pg_atomic_init_u32(&header->tables_used, 1);
    pg_atomic_init_u64(&header->reset_time, 0);
    for (uint32 i = 0; i < header->instance_capacity; i++)
        init_instance_slot(islot(i));
    for (uint32 i = 0; i < header->table_capacity; i++)
        init_table_slot(tslot(i));
}

InstanceSlot *instance_slot(std::string_view address) noexcept {
    if (header == nullptr)
        return nullptr;
    try {
        if (local == nullptr)
            local = new Local();
        auto it = local->instances.find(address);
        if (it != local->instances.end())
            return islot(it->second);
        if (local->overflowed.count(std::string(address)) != 0)
            return islot(0);
        uint32 index = find_or_take_instance(address);
        if (index == 0)
            local->overflowed.emplace(address);
        else
            local->instances.emplace(std::string_view(islot(index)->address, address.size()),
                                     index);
        return islot(index);
    } catch (...) {
        return islot(0);  // no memory to remember it: counted with the others
    }
}

TableSlot *table_slot(Oid relid) noexcept {
    if (header == nullptr)
        return nullptr;
    try {
        if (local == nullptr)
            local = new Local();
        uint64 key = (static_cast<uint64>(MyDatabaseId) << 32) | relid;
        auto it = local->tables.find(key);
        if (it != local->tables.end())
            return tslot(it->second);
        uint32 index = find_or_take_table(MyDatabaseId, relid);
        local->tables.emplace(key, index);
        return tslot(index);
    } catch (...) {
        return tslot(0);
    }
}

uint32_t instance_slots_used() {
    return header == nullptr ? 0 : pg_atomic_read_u32(&header->instances_used);
}

InstanceSlot *instance_slot_at(uint32_t index) {
    pg_read_barrier();
    return islot(index);
}

uint32_t table_slots_used() {
    return header == nullptr ? 0 : pg_atomic_read_u32(&header->tables_used);
}

TableSlot *table_slot_at(uint32_t index) {
    pg_read_barrier();
    return tslot(index);
}

void reset_all() {
    if (header == nullptr)
        return;
    for (uint32 i = 0, n = instance_slots_used(); i < n; i++) {
        for (auto &c : islot(i)->counters)
            pg_atomic_write_u64(&c, 0);
        for (auto &c : islot(i)->latency)
            pg_atomic_write_u64(&c, 0);
    }
    for (uint32 i = 0, n = table_slots_used(); i < n; i++)
        for (auto &c : tslot(i)->counters)
            pg_atomic_write_u64(&c, 0);
    pg_atomic_write_u64(&header->reset_time, static_cast<uint64>(GetCurrentTimestamp()));
}

TimestampTz last_reset() {
    return header == nullptr ? 0
                             : static_cast<TimestampTz>(pg_atomic_read_u64(&header->reset_time));
}

}  // namespace picoroute::pg::stats
