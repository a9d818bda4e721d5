// picoroute_topology_event_rows, behind the view picoroute_topology_events: the topology event log
// (topology_log.h), oldest first, after a row that counts the events dropped when there were any.
extern "C" {
#include "postgres.h"

#include "fmgr.h"
}

#include "pg/sql_common.h"
#include "pg/topology_log.h"

#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;

namespace {

Row event_row(const LoggedChange &logged) {
    const TopologyChange &c = logged.change;
    Row row;
    row.push_back(Cell::int8(static_cast<int64_t>(logged.seq)));
    row.push_back(Cell::timestamptz(logged.time));
    row.push_back(Cell::int8(static_cast<int64_t>(logged.generation)));
    row.push_back(Cell::str(change_kind_name(c.kind)));
    row.push_back(Cell::str_or_null(c.tier));
    bool range = c.bucket_start != 0;
    row.push_back(range ? Cell::int4(static_cast<int32_t>(c.bucket_start)) : Cell::null());
    row.push_back(range ? Cell::int4(static_cast<int32_t>(c.bucket_end)) : Cell::null());
    for (const std::string *text : {&c.from_replicaset, &c.to_replicaset, &c.replicaset,
                                    &c.instance, &c.old_value, &c.new_value, &c.detail})
        row.push_back(Cell::str_or_null(*text));
    return row;
}

// The first row when older events were dropped: how many, and when the newest of them happened.
Row dropped_row(const LogCopy &log) {
    TopologyChange c;
    c.kind = ChangeKind::EventsDropped;
    c.new_value = std::to_string(log.dropped);
    c.detail = std::to_string(log.dropped) +
               " older events were dropped: picoroute.max_topology_events (" +
               std::to_string(log.capacity) + ") keeps the newest";
    Row row = event_row(LoggedChange{0, log.last_dropped_time, 0, c});
    row[0] = Cell::null();  // no seq: it stands for the events before the first row that follows
    row[2] = Cell::null();
    return row;
}

}  // namespace

// picoroute_topology_event_rows() returns SETOF record (see the view picoroute_topology_events).
PICOROUTE_SQL_FUNCTION(picoroute_topology_event_rows) {
    LogCopy log = topology_log_read();
    std::vector<Row> rows;
    rows.reserve(log.records.size() + 1);
    if (log.dropped > 0)
        rows.push_back(dropped_row(log));
    for (const LoggedChange &logged : log.records)
        rows.push_back(event_row(logged));
    return_rows(fcinfo, rows);
    return (Datum)0;
}
