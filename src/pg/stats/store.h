// The shared-memory layout behind stats.h, for the event functions (events.cpp) and the views
// (sql_stats.cpp): the counters of a slot, the slot tables, and the backend-local lookups.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
#include "port/atomics.h"
}

#include "core/latency_histogram.h"

#include <cstdint>
#include <string_view>

namespace picoroute::pg::stats {

// The counters of an instance slot (the order of the first five is Sent's, of the errors
// Failure's).
enum InstanceCounter : uint32_t {
    I_ROUTED,
    I_COORDINATOR,
    I_SCATTER,
    I_BATCH,
    I_CHUNK,
    I_ERR_REFUSED,
    I_ERR_UNKNOWN,
    I_ERR_CONNECTION,
    I_ERR_REMOTE,
    I_RESENT,
    I_FAILOVER_WAITS,
    I_ANSWERS,
    I_ROWS,
    I_BYTES,
    I_TIME_US,
    I_CONNECTIONS_OPENED,
    I_BUDGET_WAITS,  // admissions that waited for picoroute.max_connections_per_instance
    I_COUNT
};

// The counters of a table slot (the order of the first five is TableStart's, of the next five
// Sent's).
enum TableCounter : uint32_t {
    T_SCANS,
    T_PUSHED_SCANS,
    T_DIRECT_MODIFIES,
    T_ROW_MODIFIES,
    T_INSERTS,
    T_ROUTED,
    T_COORDINATOR,
    T_SCATTER,
    T_BATCH,
    T_CHUNK,
    T_ROWS_READ,
    T_ROWS_WRITTEN,
    T_PUSHED_AGGREGATES,
    T_PUSHED_SORTS,
    T_PUSHED_JOINS,
    T_LOCAL_AGGREGATES,
    T_LOCAL_SORTS,
    T_LOCAL_JOINS,
    T_CHUNKED_READS,
    T_COUNT
};

// host:port as the map holds it: a DNS name (253 bytes at most), ':', a port, and room to spare.
constexpr size_t kAddressBytes = 272;

struct InstanceSlot {
    char address[kAddressBytes];  // NUL-terminated; "" in slot 0, the row of the other addresses
    pg_atomic_uint64 counters[I_COUNT];
    pg_atomic_uint64 latency[kLatencyBuckets];  // answers by latency bucket (microseconds)
    pg_atomic_uint64 connections_open;          // a gauge: opened minus closed (never reset)
    // A gauge: of connections_open, those without a row in picoroute_stat_connections (beyond
    // picoroute.max_stat_connections).
    pg_atomic_uint64 connections_unlisted;
};

struct TableSlot {
    Oid dbid;   // InvalidOid in slot 0, the row of the other tables
    Oid relid;  // idem
    pg_atomic_uint64 counters[T_COUNT];
};

// The slot of `address` (taking a free one at its first use), or slot 0 when the table is full or
// the address does not fit a slot. nullptr only when the library was not preloaded.
InstanceSlot *instance_slot(std::string_view address) noexcept;
// The same for a foreign table of the current database.
TableSlot *table_slot(Oid relid) noexcept;

// The slots in use, slot 0 included, for the views; 0 when the library was not preloaded.
uint32_t instance_slots_used();
InstanceSlot *instance_slot_at(uint32_t index);
uint32_t table_slots_used();
TableSlot *table_slot_at(uint32_t index);

// Zeroes every counter (not connections_open nor connections_unlisted, which are gauges) and
// records the time.
void reset_all();
// The time of the last reset; 0 when never reset.
TimestampTz last_reset();

}  // namespace picoroute::pg::stats
