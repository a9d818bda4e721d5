// The slots of picoroute_stat_connections (see conn_slots.h).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/shmem.h"
#include "storage/spin.h"
}

#include "pg/settings.h"
#include "pg/stats/conn_slots.h"

#include <algorithm>
#include <cstring>

namespace picoroute::pg::stats {

namespace {

struct Slot {
    pg_atomic_uint32 pid;      // the owner; 0 when free
    pg_atomic_uint32 changes;  // odd while the owner writes the fields below, and while free
    ConnectionRow row;         // row.pid is unused (pid is the owner)
};

constexpr Size kStride = TYPEALIGN(PG_CACHE_LINE_SIZE, sizeof(Slot));

char *base = nullptr;
uint32 capacity = 0;

Slot *slot_at(uint32 index) {
    return reinterpret_cast<Slot *>(base + index * kStride);
}

void copy_text(char *to, size_t room, std::string_view text) {
    size_t n = std::min(text.size(), room - 1);
    memcpy(to, text.data(), n);
    to[n] = '\0';
}

void begin_write(Slot *slot) {
    pg_atomic_fetch_add_u32(&slot->changes, 1);
    pg_write_barrier();
}

void end_write(Slot *slot) {
    pg_write_barrier();
    pg_atomic_fetch_add_u32(&slot->changes, 1);
}

}  // namespace

Size connection_slots_shmem_size() {
    return mul_size(static_cast<Size>(setting_max_stat_connections), kStride);
}

void connection_slots_shmem_init() {
    bool found = false;
    base = static_cast<char *>(
        ShmemInitStruct("picoroute connections", connection_slots_shmem_size(), &found));
    capacity = static_cast<uint32>(setting_max_stat_connections);
    if (found)
        return;
    for (uint32 i = 0; i < capacity; i++) {
        pg_atomic_init_u32(&slot_at(i)->pid, 0);
        pg_atomic_init_u32(&slot_at(i)->changes, 1);
    }
}

int32 take_connection_slot(std::string_view address, std::string_view user, std::string_view server,
                           TimestampTz since) noexcept {
    for (uint32 i = 0; i < capacity; i++) {
        Slot *slot = slot_at(i);
        uint32 expected = 0;
        if (pg_atomic_read_u32(&slot->pid) != 0 ||
            !pg_atomic_compare_exchange_u32(&slot->pid, &expected, static_cast<uint32>(MyProcPid)))
            continue;
        // changes is odd since the slot was freed: readers wait for end_write.
        copy_text(slot->row.address, sizeof(slot->row.address), address);
        copy_text(slot->row.user, sizeof(slot->row.user), user);
        copy_text(slot->row.server, sizeof(slot->row.server), server);
        slot->row.since = since;
        slot->row.state = 0;  // ConnectionState::Idle (connections.h)
        slot->row.statements = 0;
        slot->row.prepared = 0;
        end_write(slot);
        return static_cast<int32>(i);
    }
    return -1;
}

void update_connection_slot(int32 index, uint32 state, uint64 statements,
                            uint64 prepared) noexcept {
    if (index < 0 || static_cast<uint32>(index) >= capacity)
        return;
    Slot *slot = slot_at(static_cast<uint32>(index));
    begin_write(slot);
    slot->row.state = state;
    slot->row.statements = statements;
    slot->row.prepared = prepared;
    end_write(slot);
}

void free_connection_slot(int32 index) noexcept {
    if (index < 0 || static_cast<uint32>(index) >= capacity)
        return;
    Slot *slot = slot_at(static_cast<uint32>(index));
    begin_write(slot);  // odd until the next owner has filled it
    pg_atomic_write_u32(&slot->pid, 0);
}

uint32 connection_slot_count() {
    return base == nullptr ? 0 : capacity;
}

bool read_connection_slot(uint32 index, ConnectionRow *out) {
    Slot *slot = slot_at(index);
    // An owner writes a few dozen bytes between its two increments; a slot still changing after
    // this many tries is being taken or freed over and over, and is left out of this reading.
    for (int tries = 0; tries < 10000; tries++) {
        uint32 pid = pg_atomic_read_u32(&slot->pid);
        if (pid == 0)
            return false;
        uint32 before = pg_atomic_read_u32(&slot->changes);
        pg_read_barrier();
        memcpy(static_cast<void *>(out), &slot->row, sizeof(*out));
        pg_read_barrier();
        if ((before & 1) == 0 && before == pg_atomic_read_u32(&slot->changes) &&
            pid == pg_atomic_read_u32(&slot->pid)) {
            out->pid = static_cast<int32>(pid);
            return true;
        }
        SPIN_DELAY();
    }
    return false;
}

}  // namespace picoroute::pg::stats
