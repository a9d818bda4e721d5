// Upper-relation pushdown (upper.cpp): aggregates, ORDER BY, LIMIT.
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"
}

namespace picoroute::pg::fdw {

// GetForeignUpperPaths, and the plan of the ForeignScans (scanrelid 0) it creates.
void get_foreign_upper_paths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
                             RelOptInfo *output_rel, void *extra);
ForeignScan *upper_plan(PlannerInfo *root, RelOptInfo *rel, List *tlist, Plan *outer_plan);

}  // namespace picoroute::pg::fdw
