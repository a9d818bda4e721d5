// The work of a plan over picoroute's tables, counted at the executor's start (see plan_work.h).
// Plain C style (List, Bitmapset, no C++ objects): a PostgreSQL error may leave it at any point.
extern "C" {
#include "postgres.h"

#include "executor/executor.h"
#include "foreign/foreign.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
}

#include "pg/fdw/plan_work.h"

#include "pg/batch_join/batch_join.h"
#include "pg/fdw/plan_private.h"
#include "pg/stats/stats.h"

#include <cstring>

namespace picoroute::pg::fdw {

namespace {

ExecutorStart_hook_type prev_executor_start = nullptr;

// The last server asked about and its answer: a statement's scans are mostly of one server.
Oid last_server = InvalidOid;
bool last_server_ours = false;

bool is_picoroute_server(Oid server) {
    if (server != last_server) {
        ForeignServer *fs = GetForeignServer(server);
        ForeignDataWrapper *fdw = GetForeignDataWrapper(fs->fdwid);
        last_server_ours = strcmp(fdw->fdwname, "picoroute") == 0;
        last_server = server;
    }
    return last_server_ours;
}

void count_pushed(const ForeignScan *scan, List *oids) {
    if (scan->scan.scanrelid != 0)
        return;  // one table read: nothing computed beyond its rows
    PushedScanPlan plan = decode_pushed_scan(scan->fdw_private);
    ListCell *lc;
    foreach (lc, oids) {
        Oid relid = lfirst_oid(lc);
        if (plan.work & kPushedAggregate)
            stats::table_work(relid, stats::Work::Aggregate, true);
        if (plan.work & kPushedSort)
            stats::table_work(relid, stats::Work::Sort, true);
        if (plan.work & kPushedJoin)
            stats::table_work(relid, stats::Work::Join, true);
    }
}

// The oids of picoroute's tables a ForeignScan reads (with their pushed work counted).
List *scan_tables(const ForeignScan *scan, const PlannedStmt *stmt) {
    if (!is_picoroute_server(scan->fs_server))
        return NIL;
    List *oids = NIL;
    for (int m = bms_next_member(scan->fs_relids, -1); m >= 0;
         m = bms_next_member(scan->fs_relids, m))
        oids = lappend_oid(oids, rt_fetch(m, stmt->rtable)->relid);
    count_pushed(scan, oids);
    return oids;
}

List *walk(Plan *plan, const PlannedStmt *stmt);

List *walk_all(List *plans, const PlannedStmt *stmt) {
    List *oids = NIL;
    ListCell *lc;
    foreach (lc, plans)
        oids = list_concat(oids, walk(static_cast<Plan *>(lfirst(lc)), stmt));
    return oids;
}

// The plans under `plan` besides its outer and inner ones.
List *other_children(Plan *plan, const PlannedStmt *stmt) {
    switch (nodeTag(plan)) {
        case T_Append:
            return walk_all(reinterpret_cast<Append *>(plan)->appendplans, stmt);
        case T_MergeAppend:
            return walk_all(reinterpret_cast<MergeAppend *>(plan)->mergeplans, stmt);
        case T_SubqueryScan:
            return walk(reinterpret_cast<SubqueryScan *>(plan)->subplan, stmt);
        case T_CustomScan:
            return walk_all(reinterpret_cast<CustomScan *>(plan)->custom_plans, stmt);
        case T_BitmapAnd:
            return walk_all(reinterpret_cast<BitmapAnd *>(plan)->bitmapplans, stmt);
        case T_BitmapOr:
            return walk_all(reinterpret_cast<BitmapOr *>(plan)->bitmapplans, stmt);
        default:
            return NIL;
    }
}

// What a node computes here, if it is an aggregate, a sort or a join (the batched join included).
bool local_work(const Plan *plan, stats::Work *what) {
    switch (nodeTag(plan)) {
        case T_Agg:
            *what = stats::Work::Aggregate;
            return true;
        case T_Sort:
        case T_IncrementalSort:
            *what = stats::Work::Sort;
            return true;
        case T_NestLoop:
        case T_MergeJoin:
        case T_HashJoin:
            *what = stats::Work::Join;
            return true;
        default:
            return false;
    }
}

// The oids of picoroute's tables read under `plan`, counting on the way the work of each node
// over them: Picodata's (pushed ForeignScans) and this server's (Agg, Sort, joins).
List *walk(Plan *plan, const PlannedStmt *stmt) {
    if (plan == nullptr)
        return NIL;
    // A ForeignScan's own outer plan is the local fallback of a pushed read, run only when
    // Picodata refuses it over the row bound: not work this statement is known to do.
    if (IsA(plan, ForeignScan))
        return scan_tables(reinterpret_cast<ForeignScan *>(plan), stmt);
    List *oids = other_children(plan, stmt);
    stats::Work what = stats::Work::Join;
    bool local = local_work(plan, &what);
    if (IsA(plan, CustomScan)) {
        // The batched join: the table it looks up is read under no ForeignScan.
        Oid table =
            batch_join::batched_join_table(reinterpret_cast<CustomScan *>(plan), stmt->rtable);
        if (OidIsValid(table)) {
            oids = lappend_oid(oids, table);
            what = stats::Work::Join;
            local = true;
        }
    }
    oids = list_concat(oids, walk(outerPlan(plan), stmt));
    oids = list_concat(oids, walk(innerPlan(plan), stmt));
    if (local && oids != NIL) {
        ListCell *lc;
        foreach (lc, oids)
            stats::table_work(lfirst_oid(lc), what, false);
    }
    return oids;
}

void count_plan_work(QueryDesc *query, int eflags) {
    if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) || !stats::enabled())
        return;
    const PlannedStmt *stmt = query->plannedstmt;
    if (stmt == nullptr || stmt->commandType == CMD_UTILITY)
        return;
    (void)walk(stmt->planTree, stmt);
    ListCell *lc;
    foreach (lc, stmt->subplans)
        (void)walk(static_cast<Plan *>(lfirst(lc)), stmt);
}

extern "C" void plan_work_executor_start(QueryDesc *query, int eflags) {
    if (prev_executor_start != nullptr)
        prev_executor_start(query, eflags);
    else
        standard_ExecutorStart(query, eflags);
    count_plan_work(query, eflags);
}

}  // namespace

void install_plan_work_hook() {
    prev_executor_start = ExecutorStart_hook;
    ExecutorStart_hook = plan_work_executor_start;
}

}  // namespace picoroute::pg::fdw
