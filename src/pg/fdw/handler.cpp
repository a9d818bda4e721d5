// picoroute_fdw_handler: the FdwRoutine of the picoroute foreign data wrapper, and the one place
// where a foreign scan is dispatched by what it reads (PlanKind, plan_private.h): one foreign table
// (scan.cpp), a pushed join (join.cpp) or aggregates, ORDER BY and LIMIT pushed over either
// (upper.cpp); the last two run through pushed_scan.cpp. Modifications (modify.cpp,
// direct_modify.cpp), TRUNCATE (truncate.cpp), IMPORT FOREIGN SCHEMA (import.cpp) and ANALYZE
// (analyze.cpp) have callbacks of their own.
extern "C" {
#include "postgres.h"

#include "foreign/fdwapi.h"
#include "nodes/nodes.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"
#include "nodes/value.h"
}

#include "pg/fdw/analyze.h"
#include "pg/fdw/direct_modify.h"
#include "pg/fdw/import.h"
#include "pg/fdw/join.h"
#include "pg/fdw/modify.h"
#include "pg/fdw/plan_private.h"
#include "pg/fdw/pushed_scan.h"
#include "pg/fdw/scan.h"
#include "pg/fdw/truncate.h"
#include "pg/fdw/upper.h"
#include "pg/guard.h"
#include "pg/sql_common.h"

using namespace picoroute::pg::fdw;

namespace {

// GetForeignPlan for every relation picoroute offered a path for.
ForeignScan *get_foreign_plan(PlannerInfo *root, RelOptInfo *rel, Oid, ForeignPath *path,
                              List *tlist, List *scan_clauses, Plan *outer_plan) {
    if (IS_UPPER_REL(rel))
        return upper_plan(root, rel, tlist, outer_plan);
    if (IS_JOIN_REL(rel))
        return join_plan(root, rel, tlist, outer_plan);
    return scan_plan(root, rel, path, tlist, scan_clauses, outer_plan);
}

// Whether the ForeignScan of `node` reads one foreign table (its plan's kind).
bool reads_base_table(ForeignScanState *node) {
    ForeignScan *plan = reinterpret_cast<ForeignScan *>(node->ss.ps.plan);
    return plan_kind(plan->fdw_private) == PlanKind::BaseScan;
}

void begin_foreign_scan(ForeignScanState *node, int eflags) {
    if (reads_base_table(node))
        return scan_begin(node, eflags);
    return pushed_begin(node, eflags);
}

TupleTableSlot *iterate_foreign_scan(ForeignScanState *node) {
    if (reads_base_table(node))
        return scan_iterate(node);
    return pushed_iterate(node);
}

void rescan_foreign_scan(ForeignScanState *node) {
    if (reads_base_table(node))
        return scan_rescan(node);
    return pushed_rescan(node);
}

void end_foreign_scan(ForeignScanState *node) {
    if (reads_base_table(node))
        return scan_end(node);
    return pushed_end(node);
}

void explain_foreign_scan(ForeignScanState *node, ExplainState *es) {
    if (reads_base_table(node))
        return scan_explain(node, es);
    return pushed_explain(node, es);
}

}  // namespace

// Every use of a picoroute foreign table asks for this routine first: without the library
// preloaded there is no shared map to route by, and the check fails clearly here.
PICOROUTE_SQL_FUNCTION(picoroute_fdw_handler) {
    FdwRoutine *routine = makeNode(FdwRoutine);
    routine->GetForeignRelSize = get_foreign_rel_size;
    routine->GetForeignPaths = get_foreign_paths;
    routine->GetForeignJoinPaths = get_foreign_join_paths;
    routine->GetForeignUpperPaths = get_foreign_upper_paths;
    routine->GetForeignPlan = get_foreign_plan;
    routine->BeginForeignScan = begin_foreign_scan;
    routine->IterateForeignScan = iterate_foreign_scan;
    routine->ReScanForeignScan = rescan_foreign_scan;
    routine->EndForeignScan = end_foreign_scan;
    routine->ExplainForeignScan = explain_foreign_scan;
    routine->ImportForeignSchema = [](ImportForeignSchemaStmt *stmt, Oid server) {
        return import_foreign_schema(stmt, server);
    };
    install_modify_callbacks(routine);
    install_direct_modify_callbacks(routine);
    routine->ExecForeignTruncate = exec_foreign_truncate;
    routine->AnalyzeForeignTable = analyze_foreign_table;
    PG_RETURN_POINTER(routine);
}
