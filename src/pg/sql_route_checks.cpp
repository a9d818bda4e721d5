// The SQL function behind the view picoroute_route_checks: the verdicts of the route check
// (pg/route_checks.h), every database's.
extern "C" {
#include "postgres.h"

#include "commands/dbcommands.h"
}

#include "core/bucket_hash.h"
#include "core/route_check.h"
#include "pg/guard.h"
#include "pg/route_checks.h"
#include "pg/sql_common.h"

#include <string>
#include <vector>

// Behind the view picoroute_route_checks: one row per recorded verdict, every database's.
PICOROUTE_SQL_FUNCTION(picoroute_route_check_rows) {
    using namespace picoroute;
    using namespace picoroute::pg;
    std::vector<Row> rows;
    for (const CheckRow &c : list_checks()) {
        const char *database = nullptr;
        pg_call([&] { database = get_database_name(c.dbid); });
        rows.push_back({
            database != nullptr ? Cell::str(database) : Cell::null(),
            c.result.table.empty() ? Cell::str(std::to_string(c.relid)) : Cell::str(c.result.table),
            Cell::str(c.key.signature),
            Cell::str_or_null(c.key.version),
            Cell::str(hash_rule_name(static_cast<HashRule>(c.key.rule))),
            Cell::str(route_check::state_name(c.state)),
            Cell::str_or_null(c.result.sample),
            c.result.picoroute_bucket > 0
                ? Cell::int4(static_cast<int32_t>(c.result.picoroute_bucket))
                : Cell::null(),
            c.result.picodata_bucket > 0
                ? Cell::int4(static_cast<int32_t>(c.result.picodata_bucket))
                : Cell::null(),
            Cell::str_or_null(c.result.detail),
            Cell::timestamptz(c.checked_at),
            Cell::timestamptz(c.next_check),
            Cell::int4(static_cast<int32_t>(c.attempts)),
        });
    }
    return_rows(fcinfo, rows);
    return (Datum)0;
}
