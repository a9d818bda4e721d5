// What the batched join's path and plan carry (CustomPath.custom_private and
// CustomScan.custom_private): one plain struct each, with one encode and one decode
// (plan_private.cpp, written with pg/private_list.h). Nothing else reads those lists.
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/nodes.h"
#include "nodes/pg_list.h"
#include "nodes/primnodes.h"
}

#include "pg/fdw/plan_private.h"

namespace picoroute::pg::batch_join {

// The path (planner.cpp): what its plan needs of the join the hook saw.
struct BatchedJoinPath {
    List *restrictlist = NIL;  // the join's RestrictInfos
    Var *outer_var = nullptr;  // the outer column the key equals
    Oid eq_op = InvalidOid;    // the key's equality operator
    Oid collation = InvalidOid;
    Index inner_relid = 0;  // the foreign table's relid
    JoinType jointype = JOIN_INNER;
};

// The plan (executor.cpp); its expressions are BatchedJoinExprs.
struct BatchedJoinPlan {
    // SELECT ... FROM t [WHERE <remote conditions>], its parameters and OR-of-AND chains; no key
    // kinds: each batch's keys are added as an IN list.
    fdw::StatementPlan statement;
    char *key_column = nullptr;   // the sharding-key column, quoted
    int batch_size = 0;           // outer rows per batch
    int max_keys = 0;             // keys per statement (within Picodata's OR-chain limit)
    List *retrieved_attrs = NIL;  // attnums in the select list's order
    // Per custom_scan_tlist entry: the outer plan's column (> 0) or -attnum of the table; the
    // table's range-table index is the varno of its entries (offset by setrefs).
    List *sources = NIL;
    int outer_key = 0;  // the outer plan's column that gives the key
    Oid eq_op = InvalidOid;
    Oid collation = InvalidOid;
    AttrNumber key_attno = 0;        // the sharding-key column of the table
    JoinType jointype = JOIN_INNER;  // JOIN_INNER, JOIN_LEFT, JOIN_SEMI or JOIN_ANTI
};

// The plan's expressions (CustomScan.custom_exprs, which setrefs adjusts as the plan's own): the
// parameters of the remote conditions (BatchedJoinPlan::statement.nparams of them), then the join's
// own clauses and the table's conditions evaluated here, each an implicitly AND-ed list.
struct BatchedJoinExprs {
    List *params = NIL;
    List *join_quals = NIL;
    List *inner_quals = NIL;
};

List *encode(const BatchedJoinPath &path);
BatchedJoinPath decode_path(List *custom_private);
List *encode(const BatchedJoinPlan &plan);
BatchedJoinPlan decode_plan(List *custom_private);
List *encode(const BatchedJoinExprs &exprs);
// `nparams`: the plan's statement.nparams; any other length is an internal error.
BatchedJoinExprs decode_exprs(List *custom_exprs, int nparams);

}  // namespace picoroute::pg::batch_join
