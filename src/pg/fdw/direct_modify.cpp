// Direct modification of picoroute foreign tables: an UPDATE or DELETE runs remotely as one
// statement, routed like a scan (routed.cpp) when its WHERE clause fixes the sharding key, else
// through a coordinator or over every master. Picodata commits it on its own: a local ROLLBACK
// does not undo it.
extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/sysattr.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

#include "pg/fdw/declcheck.h"
#include "pg/fdw/deparse.h"
#include "pg/fdw/direct_modify.h"
#include "pg/fdw/keys.h"
#include "pg/fdw/modify.h"
#include "pg/fdw/options.h"
#include "pg/fdw/plan_private.h"
#include "pg/fdw/routed.h"
#include "pg/fdw/scan.h"
#include "pg/fdw/shippable.h"
#include "pg/fdw/table_cache.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/stats/stats.h"

#include <cstring>
#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;
using namespace picoroute::pg::fdw;
namespace {

// Executor state of a direct UPDATE / DELETE.
struct DirectState {
    RoutedStatement *st;
    bool set_processed;
    bool executed;
    uint64 processed;
};

bool plan_direct_modify(PlannerInfo *root, ModifyTable *plan, Index resultRelation,
                        int subplan_index) {
    CmdType op = plan->operation;
    if (op != CMD_UPDATE && op != CMD_DELETE)
        return false;
    RangeTblEntry *rte = planner_rt_fetch(resultRelation, root);
    TableInfo *table = get_table_info(rte->relid);
    List *processed_tlist = NIL, *target_attrs = NIL;
    if (op == CMD_UPDATE) {
        get_translated_update_targetlist(root, resultRelation, &processed_tlist, &target_attrs);
        refuse_key_update(table, target_attrs);
    }
    if (list_length(plan->resultRelations) > 1 || plan->returningLists != NIL)
        return false;
    Plan *subplan = outerPlan(plan);
    if (subplan == nullptr || !IsA(subplan, ForeignScan))
        return false;
    ForeignScan *fscan = reinterpret_cast<ForeignScan *>(subplan);
    if (!bms_is_member(resultRelation, fscan->fs_relids) || fscan->scan.plan.qual != NIL)
        return false;
    (void)subplan_index;
    RelOptInfo *foreignrel = root->simple_rel_array[resultRelation];
    RelInfo *info = static_cast<RelInfo *>(foreignrel->fdw_private);
    // The statement carries the remote conditions only: every condition must be one of them (a
    // scan may evaluate a condition in another way than as a local filter, array_key.cpp).
    if (info == nullptr || info->local_conds != NIL)
        return false;
    List *target_exprs = NIL;
    ListCell *lc, *la;
    // The first entries of the processed tlist are the new values, one per target_attrs entry;
    // junk entries (wholerow) follow.
    forboth(lc, processed_tlist, la, target_attrs) {
        TargetEntry *tle = lfirst_node(TargetEntry, lc);
        if (!is_foreign_expr(root, foreignrel, tle->expr))
            return false;
        target_exprs = lappend(target_exprs, tle->expr);
    }
    Relation rel = table_open(rte->relid, NoLock);
    StringInfoData sql;
    initStringInfo(&sql);
    List *params = NIL;
    bool has_where = false;
    if (op == CMD_UPDATE)
        deparse_update(&sql, root, foreignrel, rel, table, target_attrs, target_exprs,
                       info->remote_conds, &params, &has_where);
    else
        deparse_delete(&sql, root, foreignrel, rel, table, info->remote_conds, &params, &has_where);
    table_close(rel, NoLock);
    List *clauses = NIL;
    foreach (lc, info->remote_conds)
        clauses = lappend(clauses, lfirst_node(RestrictInfo, lc)->clause);
    List *key_exprs = NIL;
    List *key_kinds = analyze_key_clauses(table, resultRelation, clauses, &key_exprs);
    fscan->operation = op;
    fscan->resultRelation = resultRelation;
    fscan->fdw_exprs = list_concat(list_copy(params), key_exprs);
    DirectModifyPlan direct;
    direct.statement.sql = sql.data;
    direct.statement.has_where = has_where;
    direct.statement.nparams = list_length(params);
    direct.statement.key_kinds = key_kinds;
    direct.statement.where_chains = where_dnf_chains(clauses);
    direct.set_processed = plan->canSetTag;
    fscan->fdw_private = encode(direct);
    fscan->scan.plan.async_capable = false;
    return true;
}

void begin_direct_modify(ForeignScanState *node, int eflags) {
    ForeignScan *plan = reinterpret_cast<ForeignScan *>(node->ss.ps.plan);
    EState *estate = node->ss.ps.state;
    Relation rel = node->ss.ss_currentRelation;
    if (plan->scan.scanrelid == 0)
        rel = ExecOpenScanRelation(estate, node->resultRelInfo->ri_RangeTableIndex, 0);
    TableInfo *table = get_table_info(RelationGetRelid(rel));
    Oid userid = user_for_rte(exec_rt_fetch(node->resultRelInfo->ri_RangeTableIndex, estate));
    if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
        check_declaration_at_first_use(table, userid);
    if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
        stats::table_started(RelationGetRelid(rel), stats::TableStart::DirectModify);
    DirectModifyPlan direct = decode_direct_modify(plan->fdw_private);
    DirectState *ds = static_cast<DirectState *>(palloc0(sizeof(DirectState)));
    RemoteStatement statement;
    statement.plan = direct.statement;
    statement.is_write = true;
    RoutedSetup setup;
    setup.table = table;
    setup.rel = rel;
    setup.userid = userid;
    ds->st = init_routed_statement(&node->ss.ps, setup, statement, plan->fdw_exprs);
    ds->set_processed = direct.set_processed;
    node->fdw_state = ds;
}

TupleTableSlot *iterate_direct_modify(ForeignScanState *node) {
    DirectState *ds = static_cast<DirectState *>(node->fdw_state);
    EState *estate = node->ss.ps.state;
    if (!ds->executed) {
        execute_routed(ds->st, node->ss.ps.ps_ExprContext);
        ds->executed = true;
        uint64 total = 0;
        for (int i = 0; i < ds->st->answers.nresults; i++) {
            const char *n = PQcmdTuples(ds->st->answers.results[i]);
            if (n != nullptr && n[0] != '\0')
                total += strtoull(n, nullptr, 10);
        }
        release_results(ds->st);
        ds->processed = total;
        if (ds->set_processed)
            estate->es_processed += total;
        if (node->ss.ps.instrument)
            node->ss.ps.instrument->tuplecount += total;
    }
    return ExecClearTuple(node->ss.ss_ScanTupleSlot);
}

void end_direct_modify(ForeignScanState *node) {
    DirectState *ds = static_cast<DirectState *>(node->fdw_state);
    if (ds != nullptr)
        release_results(ds->st);
}

void explain_direct_modify(ForeignScanState *node, ExplainState *es) {
    explain_remote(static_cast<DirectState *>(node->fdw_state)->st, node, es);
}

}  // namespace

namespace picoroute::pg::fdw {

void install_direct_modify_callbacks(FdwRoutine *routine) {
    routine->PlanDirectModify = plan_direct_modify;
    routine->BeginDirectModify = begin_direct_modify;
    routine->IterateDirectModify = iterate_direct_modify;
    routine->EndDirectModify = end_direct_modify;
    routine->ExplainDirectModify = explain_direct_modify;
}

}  // namespace picoroute::pg::fdw
