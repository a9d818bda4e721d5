// Batched joins with a foreign table: a planner hook and a CustomScan beside the FDW (a join of
// any outer relation with a picoroute foreign table, looked up by batches of keys). What the
// planning half (planner.cpp) and the executing half (executor.cpp) share. register_batched_join()
// runs from _PG_init.
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/extensible.h"
}

namespace picoroute::pg::batch_join {

// The CustomScan's name (EXPLAIN shows "Custom Scan (PicorouteBatchedJoin)").
inline constexpr const char *kBatchedJoinName = "PicorouteBatchedJoin";

extern CustomScanMethods batched_join_scan_methods;

// The oid of the foreign table a batched join looks up (in `rtable`, the statement's range table);
// InvalidOid when `plan` is another CustomScan.
Oid batched_join_table(CustomScan *plan, List *rtable);

// Installs the join path hook and registers the CustomScan (once per backend, at load).
void register_batched_join();
// The executing half's share of it (executor.cpp).
void register_batched_join_exec();

}  // namespace picoroute::pg::batch_join
