// picoroute_stat_tables' pushed_* and local_* columns: the aggregates, sorts and joins over
// picoroute's foreign tables that each statement run computed in Picodata (a pushed ForeignScan) or
// here (an Agg, Sort or join node of PostgreSQL's plan, or the batched join, above the table's
// scan). Counted once per execution, at the executor's start, from the plan alone, while statistics
// are on; EXPLAIN without ANALYZE is not counted.
#pragma once

namespace picoroute::pg::fdw {

// Chains the ExecutorStart hook (from _PG_init, when preloaded).
void install_plan_work_hook();

}  // namespace picoroute::pg::fdw
