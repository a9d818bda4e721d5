// The events of stats.h: each finds its slot (store.h) and adds to its counters atomically.
// (The connection counts are connections.cpp's.)
extern "C" {
#include "postgres.h"
}

#include "pg/settings.h"
#include "pg/stats/stats.h"
#include "pg/stats/store.h"

namespace picoroute::pg::stats {

namespace {

void add(pg_atomic_uint64 *counter, uint64_t n) {
    pg_atomic_fetch_add_u64(counter, static_cast<int64>(n));
}

InstanceSlot *counting_instance(std::string_view address) {
    return setting_track_statistics ? instance_slot(address) : nullptr;
}

TableSlot *counting_table(Oid relid) {
    return setting_track_statistics ? table_slot(relid) : nullptr;
}

}  // namespace

bool enabled() noexcept {
    return setting_track_statistics && instance_slots_used() > 0;
}

void statement_sent(std::string_view address, Sent kind) noexcept {
    if (InstanceSlot *slot = counting_instance(address))
        add(&slot->counters[I_ROUTED + static_cast<uint32_t>(kind)], 1);
}

void answer_received(std::string_view address, uint64_t rows, uint64_t bytes,
                     uint64_t micros) noexcept {
    InstanceSlot *slot = counting_instance(address);
    if (slot == nullptr)
        return;
    add(&slot->counters[I_ANSWERS], 1);
    if (rows > 0)
        add(&slot->counters[I_ROWS], rows);
    if (bytes > 0)
        add(&slot->counters[I_BYTES], bytes);
    add(&slot->counters[I_TIME_US], micros);
    add(&slot->latency[latency_bucket(micros)], 1);
}

void statement_failed(std::string_view address, Failure kind) noexcept {
    if (InstanceSlot *slot = counting_instance(address))
        add(&slot->counters[I_ERR_REFUSED + static_cast<uint32_t>(kind)], 1);
}

void statement_resent(std::string_view address) noexcept {
    if (InstanceSlot *slot = counting_instance(address))
        add(&slot->counters[I_RESENT], 1);
}

void failover_waited(std::string_view address) noexcept {
    if (InstanceSlot *slot = counting_instance(address))
        add(&slot->counters[I_FAILOVER_WAITS], 1);
}

Stopwatch::Stopwatch() noexcept : running_(setting_track_statistics) {
    if (running_)
        INSTR_TIME_SET_CURRENT(start_);
}

uint64_t Stopwatch::micros() const noexcept {
    if (!running_)
        return 0;
    instr_time now;
    INSTR_TIME_SET_CURRENT(now);
    INSTR_TIME_SUBTRACT(now, start_);
    return static_cast<uint64_t>(INSTR_TIME_GET_MICROSEC(now));
}

void table_started(Oid relid, TableStart what) noexcept {
    if (TableSlot *slot = counting_table(relid))
        add(&slot->counters[T_SCANS + static_cast<uint32_t>(what)], 1);
}

void table_statement(Oid relid, Sent kind) noexcept {
    if (TableSlot *slot = counting_table(relid))
        add(&slot->counters[T_ROUTED + static_cast<uint32_t>(kind)], 1);
}

void table_rows(Oid relid, uint64_t read, uint64_t written) noexcept {
    TableSlot *slot = counting_table(relid);
    if (slot == nullptr)
        return;
    if (read > 0)
        add(&slot->counters[T_ROWS_READ], read);
    if (written > 0)
        add(&slot->counters[T_ROWS_WRITTEN], written);
}

void table_work(Oid relid, Work what, bool pushed) noexcept {
    if (TableSlot *slot = counting_table(relid))
        add(&slot->counters[(pushed ? T_PUSHED_AGGREGATES : T_LOCAL_AGGREGATES) +
                            static_cast<uint32_t>(what)],
            1);
}

void table_chunked_read(Oid relid) noexcept {
    if (TableSlot *slot = counting_table(relid))
        add(&slot->counters[T_CHUNKED_READS], 1);
}

}  // namespace picoroute::pg::stats
