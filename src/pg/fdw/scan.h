// Scans of one foreign table (scan.cpp): the planner and executor callbacks of a base scan.
#pragma once

extern "C" {
#include "postgres.h"

#include "commands/explain.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"
}

#include "pg/fdw/options.h"

namespace picoroute::pg::fdw {

// Planner-side state of one foreign relation (baserel->fdw_private).
struct RelInfo {
    TableInfo *table;
    List *remote_conds;  // RestrictInfos
    List *local_conds;
    Bitmapset *attrs_used;
};

void get_foreign_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid);
void get_foreign_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid);
ForeignScan *scan_plan(PlannerInfo *root, RelOptInfo *baserel, ForeignPath *path, List *tlist,
                       List *scan_clauses, Plan *outer_plan);
void scan_begin(ForeignScanState *node, int eflags);
TupleTableSlot *scan_iterate(ForeignScanState *node);
void scan_rescan(ForeignScanState *node);
void scan_end(ForeignScanState *node);
void scan_explain(ForeignScanState *node, ExplainState *es);

}  // namespace picoroute::pg::fdw
