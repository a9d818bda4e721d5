// Join pushdown (join.cpp): two tables of one server joined where Picodata needs no motion.
#pragma once

extern "C" {
#include "postgres.h"

#include "lib/stringinfo.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"
}

namespace picoroute::pg::fdw {

// GetForeignJoinPaths, and the plan of a pushed join: a ForeignScan (scanrelid 0) that
// pushed_begin and the following callbacks run.
void get_foreign_join_paths(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
                            RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra);
ForeignScan *join_plan(PlannerInfo *root, RelOptInfo *rel, List *tlist, Plan *outer_plan);
// For aggregates, ORDER BY and LIMIT over a pushed join (upper.cpp): whether `rel` is a pushed join
// whose tables both allow it (pushdown_aggregates); its " FROM ... JOIN ... ON ... [WHERE ...]"
// (true when WHERE was written); its routing: the key kinds of the table that routes it (NIL: a
// coordinator), the key expressions, and that table's range-table index.
bool upper_over_join_ok(RelOptInfo *rel);
bool deparse_join_from(StringInfo buf, PlannerInfo *root, RelOptInfo *joinrel, List **params);
List *join_routing(RelOptInfo *joinrel, List **key_exprs, Index *anchor);

}  // namespace picoroute::pg::fdw
