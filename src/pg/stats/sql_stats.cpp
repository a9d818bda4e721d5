// The SQL functions of the statistics: picoroute_stat_instance_rows, picoroute_stat_table_rows and
// picoroute_stat_connection_rows (behind the views picoroute_stat_instances, picoroute_stat_tables
// and picoroute_stat_connections) and picoroute_stat_reset.
// A view reads the counters one by one, as pg_stat_* views do: each is exact, two of them may be
// a few events apart while backends count.
extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"
}

#include "core/latency_histogram.h"
#include "pg/map_store.h"
#include "pg/sql_common.h"
#include "pg/stats/conn_slots.h"
#include "pg/stats/connections.h"
#include "pg/stats/store.h"

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;
using namespace picoroute::pg::stats;

namespace {

// Where the current map puts an address: the instance's name, its replicaset's name, its tier.
struct Place {
    std::string_view instance, replicaset, tier;
};

std::unordered_map<std::string_view, Place> places(const SnapshotView &view) {
    std::unordered_map<std::string_view, Place> out;
    for (uint32_t i = 0; i < view.n_instances(); i++) {
        const InstanceRecord &inst = view.instance(i);
        Place place;
        place.instance = view.str(inst.name);
        if (inst.replicaset != kNone) {
            const ReplicasetRecord &rs = view.replicaset(static_cast<uint32_t>(inst.replicaset));
            place.replicaset = view.str(rs.name);
            place.tier = view.str(rs.tier);
        }
        if (inst.address.length > 0)
            out.emplace(view.str(inst.address), place);
    }
    return out;
}

int64_t read(pg_atomic_uint64 *counter) {
    return static_cast<int64_t>(pg_atomic_read_u64(counter));
}

bool all_zero(pg_atomic_uint64 *counters, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (pg_atomic_read_u64(&counters[i]) != 0)
            return false;
    return true;
}

// Latency columns in milliseconds: total, mean, p50, p95, p99 (NULL without answers).
void latency_cells(InstanceSlot *slot, Row *row) {
    int64_t answers = read(&slot->counters[I_ANSWERS]);
    double total_ms = static_cast<double>(read(&slot->counters[I_TIME_US])) / 1000.0;
    row->push_back(Cell::float8(total_ms));
    row->push_back(answers > 0 ? Cell::float8(total_ms / static_cast<double>(answers))
                               : Cell::null());
    uint64_t counts[kLatencyBuckets];
    for (size_t i = 0; i < kLatencyBuckets; i++)
        counts[i] = pg_atomic_read_u64(&slot->latency[i]);
    for (double fraction : {0.5, 0.95, 0.99}) {
        std::optional<double> us = latency_percentile(counts, fraction);
        row->push_back(us ? Cell::float8(*us / 1000.0) : Cell::null());
    }
}

Row instance_row(InstanceSlot *slot, const std::unordered_map<std::string_view, Place> &where) {
    Row row;
    std::string_view address = slot->address;
    auto it = where.find(address);
    Place place = it == where.end() ? Place{} : it->second;
    row.push_back(Cell::str_or_null(address));
    row.push_back(Cell::str_or_null(place.instance));
    row.push_back(Cell::str_or_null(place.replicaset));
    row.push_back(Cell::str_or_null(place.tier));
    int64_t statements = 0;
    for (uint32_t c = I_ROUTED; c <= I_CHUNK; c++)
        statements += read(&slot->counters[c]);
    row.push_back(Cell::int8(statements));
    for (uint32_t c : {I_ROUTED, I_COORDINATOR, I_SCATTER, I_BATCH, I_CHUNK, I_RESENT, I_ANSWERS,
                       I_ROWS, I_BYTES})
        row.push_back(Cell::int8(read(&slot->counters[c])));
    latency_cells(slot, &row);
    for (uint32_t c : {I_ERR_REFUSED, I_ERR_UNKNOWN, I_ERR_CONNECTION, I_ERR_REMOTE,
                       I_FAILOVER_WAITS, I_BUDGET_WAITS})
        row.push_back(Cell::int8(read(&slot->counters[c])));
    row.push_back(Cell::int8(read(&slot->connections_open)));
    row.push_back(Cell::int8(read(&slot->connections_unlisted)));
    row.push_back(Cell::int8(read(&slot->counters[I_CONNECTIONS_OPENED])));
    row.push_back(Cell::timestamptz(last_reset()));
    return row;
}

Row connection_row(const ConnectionRow &c,
                   const std::unordered_map<std::string_view, Place> &where) {
    Row row;
    auto it = where.find(std::string_view(c.address));
    Place place = it == where.end() ? Place{} : it->second;
    row.push_back(Cell::int4(c.pid));
    row.push_back(Cell::str(c.address));
    row.push_back(Cell::str_or_null(place.instance));
    row.push_back(Cell::str_or_null(place.replicaset));
    row.push_back(Cell::str_or_null(place.tier));
    row.push_back(Cell::str_or_null(c.user));
    row.push_back(Cell::str_or_null(c.server));
    row.push_back(Cell::str(connection_state_name(c.state)));
    row.push_back(Cell::timestamptz(c.since));
    row.push_back(Cell::int8(static_cast<int64_t>(c.statements)));
    row.push_back(Cell::int8(static_cast<int64_t>(c.prepared)));
    return row;
}

Row table_row(TableSlot *slot, bool other) {
    Row row;
    row.push_back(other ? Cell::null() : Cell::oid(slot->relid));
    for (uint32_t c = T_SCANS; c <= T_INSERTS; c++)
        row.push_back(Cell::int8(read(&slot->counters[c])));
    int64_t statements = 0;
    for (uint32_t c = T_ROUTED; c <= T_CHUNK; c++)
        statements += read(&slot->counters[c]);
    row.push_back(Cell::int8(statements));
    for (uint32_t c = T_ROUTED; c < T_COUNT; c++)
        row.push_back(Cell::int8(read(&slot->counters[c])));
    row.push_back(Cell::timestamptz(last_reset()));
    return row;
}

}  // namespace

// Behind the view picoroute_stat_instances: one row per address counted since the server started
// (and the row of the addresses beyond picoroute.max_stat_instances, when it counted anything).
PICOROUTE_SQL_FUNCTION(picoroute_stat_instance_rows) {
    MapRef map = current_map();
    std::unordered_map<std::string_view, Place> where = places(*map.view);
    std::vector<Row> rows;
    for (uint32_t i = 0, n = instance_slots_used(); i < n; i++) {
        InstanceSlot *slot = instance_slot_at(i);
        if (i == 0 && all_zero(slot->counters, I_COUNT) && all_zero(&slot->connections_open, 1))
            continue;
        rows.push_back(instance_row(slot, where));
    }
    return_rows(fcinfo, rows);
    return (Datum)0;
}

// Behind the view picoroute_stat_connections: one row per connection of any backend to a Picodata
// instance that has a slot (picoroute.max_stat_connections; the others are counted in
// picoroute_stat_instances.connections_unlisted).
PICOROUTE_SQL_FUNCTION(picoroute_stat_connection_rows) {
    MapRef map = current_map();
    std::unordered_map<std::string_view, Place> where = places(*map.view);
    std::vector<Row> rows;
    ConnectionRow copy;
    for (uint32_t i = 0, n = connection_slot_count(); i < n; i++)
        if (read_connection_slot(i, &copy))
            rows.push_back(connection_row(copy, where));
    return_rows(fcinfo, rows);
    return (Datum)0;
}

// Behind the view picoroute_stat_tables: one row per foreign table of the current database that
// was counted (and the row of the tables beyond picoroute.max_stat_tables, all databases).
PICOROUTE_SQL_FUNCTION(picoroute_stat_table_rows) {
    std::vector<Row> rows;
    for (uint32_t i = 0, n = table_slots_used(); i < n; i++) {
        TableSlot *slot = table_slot_at(i);
        if (i == 0 ? all_zero(slot->counters, T_COUNT) : slot->dbid != MyDatabaseId)
            continue;
        rows.push_back(table_row(slot, i == 0));
    }
    return_rows(fcinfo, rows);
    return (Datum)0;
}

// picoroute_stat_reset() returns void: zeroes every counter of both views (not connections_open)
// and sets stats_reset.
PICOROUTE_SQL_FUNCTION(picoroute_stat_reset) {
    reset_all();
    PG_RETURN_VOID();
}
