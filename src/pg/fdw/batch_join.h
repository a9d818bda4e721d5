// Batched joins with a foreign table: what the planning half (batch_plan.cpp) and the executing
// half (batch_exec.cpp) share. register_batched_join() runs from _PG_init.
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/extensible.h"
}

namespace picoroute::pg::fdw {

// The CustomScan's name (EXPLAIN shows "Custom Scan (PicorouteBatchedJoin)").
inline constexpr const char *kBatchedJoinName = "PicorouteBatchedJoin";

// Indexes into CustomScan.custom_private.
enum BatchPrivate {
    BP_BASE_SQL,   // SELECT ... FROM t [WHERE <remote conditions>]
    BP_HAS_WHERE,  // whether a WHERE was written
    BP_COLUMN,     // the sharding-key column, quoted
    BP_BATCH,      // outer rows per batch
    BP_MAX_KEYS,   // keys per statement (within Picodata's OR-chain limit)
    BP_RETRIEVED,  // attnums in the select list's order
    BP_SOURCES,    // per custom_scan_tlist entry: outer column (> 0) or -attnum of the table; the
                   // table's range-table index is the varno of its entries (offset by setrefs)
    BP_OUTER_KEY,  // the outer plan's column that gives the key
    BP_EQ_OP,      // the key's equality operator
    BP_COLLATION,  // its collation
    BP_KEY_ATTNO,  // the sharding-key column of the table
    BP_CHAINS,     // OR-of-AND chains of the remote conditions
    BP_JOINTYPE,   // JOIN_INNER, JOIN_LEFT, JOIN_SEMI or JOIN_ANTI
    BP_NCOND,      // parameters of the remote conditions: the head of custom_exprs
};

extern CustomScanMethods batched_join_scan_methods;

// Key types whose equality is exact on both sides and has a hash function: the keys batched joins
// and array keys (array_key.cpp) send as lists.
bool batchable_type(Oid type);

// Installs the join path hook and registers the CustomScan (once per backend, at load).
void register_batched_join();
// The executing half's share of it (batch_exec.cpp).
void register_batched_join_exec();

}  // namespace picoroute::pg::fdw
