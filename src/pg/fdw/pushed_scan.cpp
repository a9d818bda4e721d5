// Executing a ForeignScan pushed to Picodata with scanrelid 0: aggregates, ORDER BY and LIMIT
// over one table or over a join (planned by upper.cpp), and pushed joins (planned by join.cpp).
// The statement is routed like a scan's (routed.cpp), its answers read whole; values come back
// into the local result types, and OFFSET, which Picodata's grammar lacks, is skipped here.
extern "C" {
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
}

#include "pg/fdw/declcheck.h"
#include "pg/fdw/options.h"
#include "pg/fdw/plan_private.h"
#include "pg/fdw/pushed_scan.h"
#include "pg/fdw/routed.h"
#include "pg/fdw/table_cache.h"
#include "pg/stats/stats.h"

#include <cstring>

namespace picoroute::pg::fdw {

namespace {

struct PushedState {
    RoutedStatement *st;
    int64 offset;
    bool executed;
    int cur_result;
    int cur_row;
    int64 skipped;
    int natts;
    FmgrInfo *in;
    Oid *ioparams;
    Oid *types;
    int32 *typmods;
    bool *zero_if_null;  // a count of a scalar aggregate (count_columns)
    MemoryContext tuple_cxt;
    // Picodata's answer exceeded the row bound: the rows come from the local plan below
    // (outerPlanState), planned by upper.cpp for this case.
    bool fallback;
    bool fallback_used;  // by some execution (EXPLAIN ANALYZE)
};

// The columns of a scalar aggregate (no GROUP BY: every column an aggregate) that are counts.
// Before 26.2.1-rc2 a scalar aggregate over an empty bucket set (key conditions that contradict
// each other) answers NULL, not 0: the reduce stage sums the answers of no storage
// (test/int/sql/eliminate_motion.sql:671@26.1.6 and :839@26.2.1-rc1 expect null, :836@26.2.1-rc2
// expects 0; capability EmptySetAggregate). PostgreSQL's count is never NULL, so such a NULL is
// read as 0 on every version (the master builds 26.3.0 to 26.3.0-113 answer NULL too, and the
// capability rule gives them the fix). sum, avg, min and max over no row are NULL in both.
bool *count_columns(ForeignScan *plan, int natts) {
    bool *out = static_cast<bool *>(palloc0(sizeof(bool) * (natts + 1)));
    if (list_length(plan->fdw_scan_tlist) != natts)
        return out;
    ListCell *lc;
    foreach (lc, plan->fdw_scan_tlist)
        if (!IsA(lfirst_node(TargetEntry, lc)->expr, Aggref))
            return out;
    int i = 0;
    foreach (lc, plan->fdw_scan_tlist) {
        Aggref *agg = reinterpret_cast<Aggref *>(lfirst_node(TargetEntry, lc)->expr);
        char *name = get_func_name(agg->aggfnoid);
        out[i++] = name != nullptr && strcmp(name, "count") == 0;
    }
    return out;
}

// The next row of the local plan, copied into the scan slot (its first natts columns are the
// remote select list; a sort key computed there may follow).
TupleTableSlot *fallback_next(ForeignScanState *node, PushedState *us) {
    TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
    for (;;) {
        // The executor calls IterateForeignScan in the per-tuple context, reset for each row: the
        // plan below runs in the query's context, as any node (its Sort keeps its state there).
        MemoryContext old = MemoryContextSwitchTo(node->ss.ps.state->es_query_cxt);
        TupleTableSlot *row = ExecProcNode(outerPlanState(node));
        MemoryContextSwitchTo(old);
        if (TupIsNull(row))
            return ExecClearTuple(slot);
        if (us->skipped < us->offset) {
            us->skipped++;
            continue;
        }
        slot_getsomeattrs(row, us->natts);
        ExecClearTuple(slot);
        for (int i = 0; i < us->natts; i++) {
            slot->tts_values[i] = row->tts_values[i];
            slot->tts_isnull[i] = row->tts_isnull[i];
        }
        return ExecStoreVirtualTuple(slot);
    }
}

// A value Picodata returned, in the local result type. Integers may come back as decimals
// (sum of integers is a decimal in Picodata): those go through numeric.
Datum read_value(PushedState *us, int i, char *text) {
    Oid type = us->types[i];
    if ((type == INT2OID || type == INT4OID || type == INT8OID) &&
        strpbrk(text, ".eE") != nullptr) {
        Datum n = DirectFunctionCall3(numeric_in, CStringGetDatum(text),
                                      ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
        if (type == INT8OID)
            return DirectFunctionCall1(numeric_int8, n);
        if (type == INT4OID)
            return DirectFunctionCall1(numeric_int4, n);
        return DirectFunctionCall1(numeric_int2, n);
    }
    return InputFunctionCall(&us->in[i], text, us->ioparams[i], us->typmods[i]);
}

}  // namespace

void pushed_begin(ForeignScanState *node, int eflags) {
    ForeignScan *plan = reinterpret_cast<ForeignScan *>(node->ss.ps.plan);
    EState *estate = node->ss.ps.state;
    PushedScanPlan pushed = decode_pushed_scan(plan->fdw_private);
    // A join names the table that routes it (join.cpp); an upper relation has only one.
    Index rtindex = pushed.anchor > 0 ? pushed.anchor
                                      : static_cast<Index>(bms_next_member(plan->fs_relids, -1));
    Relation rel = ExecGetRangeTableRelation(estate, rtindex);
    TableInfo *table = get_table_info(RelationGetRelid(rel));
    // One statement, one answer: never scattered to the masters (such tables are not pushed).
    table->scatter = static_cast<int>(Scatter::Coordinator);
    // Through a view, the view owner's user mapping (as for scans).
    RangeTblEntry *rte = exec_rt_fetch(rtindex, estate);
    Oid userid = OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
    if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY)) {
        // Every table of a join is checked against the cluster at its first use; the join is a
        // leader read when one of them is unlogged.
        for (int m = bms_next_member(plan->fs_relids, -1); m >= 0;
             m = bms_next_member(plan->fs_relids, m)) {
            TableInfo *member = m == static_cast<int>(rtindex)
                                    ? table
                                    : get_table_info(exec_rt_fetch(m, estate)->relid);
            check_declaration_at_first_use(member, userid);
            table->unlogged = table->unlogged || member->unlogged;
        }
        for (int m = bms_next_member(plan->fs_relids, -1); m >= 0;
             m = bms_next_member(plan->fs_relids, m))
            stats::table_started(exec_rt_fetch(m, estate)->relid, stats::TableStart::PushedScan);
    }
    PushedState *us = static_cast<PushedState *>(palloc0(sizeof(PushedState)));
    RemoteStatement statement;
    statement.plan = pushed.statement;
    statement.tail = pushed.tail;
    if (pushed.anchor > 0)
        statement.bucket_column = psprintf("\"r%u\".\"bucket_id\"", rtindex);
    RoutedSetup setup;
    setup.table = table;
    setup.rel = rel;
    setup.userid = userid;
    setup.row_limit_fallback = outerPlanState(node) != nullptr;
    us->st = init_routed_statement(&node->ss.ps, setup, statement, plan->fdw_exprs);
    us->offset = pushed.offset;
    TupleDesc desc = node->ss.ss_ScanTupleSlot->tts_tupleDescriptor;
    us->natts = desc->natts;
    us->in = static_cast<FmgrInfo *>(palloc0(sizeof(FmgrInfo) * (desc->natts + 1)));
    us->ioparams = static_cast<Oid *>(palloc0(sizeof(Oid) * (desc->natts + 1)));
    us->types = static_cast<Oid *>(palloc0(sizeof(Oid) * (desc->natts + 1)));
    us->typmods = static_cast<int32 *>(palloc0(sizeof(int32) * (desc->natts + 1)));
    for (int i = 0; i < desc->natts; i++) {
        Form_pg_attribute attr = TupleDescAttr(desc, i);
        Oid input;
        getTypeInputInfo(attr->atttypid, &input, &us->ioparams[i]);
        fmgr_info(input, &us->in[i]);
        us->types[i] = attr->atttypid;
        us->typmods[i] = attr->atttypmod;
    }
    us->zero_if_null = count_columns(plan, desc->natts);
    us->tuple_cxt =
        AllocSetContextCreate(estate->es_query_cxt, "picoroute upper tuple", ALLOCSET_SMALL_SIZES);
    node->fdw_state = us;
}

TupleTableSlot *pushed_iterate(ForeignScanState *node) {
    PushedState *us = static_cast<PushedState *>(node->fdw_state);
    TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
    RoutedStatement *st = us->st;
    if (!us->executed) {
        execute_routed(st, node->ss.ps.ps_ExprContext);
        us->executed = true;
        us->cur_result = 0;
        us->cur_row = 0;
        us->skipped = 0;
        us->fallback = st->last.row_limit_exceeded;
        us->fallback_used = us->fallback_used || us->fallback;
        for (int i = 0; i < st->answers.nresults; i++) {
            PGresult *res = st->answers.results[i];
            if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != us->natts)
                ereport(ERROR, (errcode(ERRCODE_FDW_ERROR),
                                errmsg("picoroute: the remote query returned %d columns, "
                                       "expected %d",
                                       PQnfields(res), us->natts),
                                errcontext("remote SQL: %s%s", st->statement->plan.sql,
                                           st->statement->tail)));
        }
    }
    if (us->fallback)
        return fallback_next(node, us);
    for (;;) {
        while (us->cur_result < st->answers.nresults &&
               us->cur_row >= PQntuples(st->answers.results[us->cur_result])) {
            us->cur_result++;
            us->cur_row = 0;
        }
        if (us->cur_result >= st->answers.nresults)
            return ExecClearTuple(slot);
        if (us->skipped >= us->offset)
            break;
        // OFFSET is not in Picodata's grammar: the statement asked for n + m rows.
        us->skipped++;
        us->cur_row++;
    }
    PGresult *res = st->answers.results[us->cur_result];
    ExecClearTuple(slot);
    MemoryContextReset(us->tuple_cxt);
    MemoryContext old = MemoryContextSwitchTo(us->tuple_cxt);
    for (int i = 0; i < us->natts; i++) {
        bool isnull = PQgetisnull(res, us->cur_row, i);
        if (isnull && us->zero_if_null[i]) {  // count over an empty bucket set: 0
            slot->tts_isnull[i] = false;
            slot->tts_values[i] = read_value(us, i, const_cast<char *>("0"));
            continue;
        }
        slot->tts_isnull[i] = isnull;
        slot->tts_values[i] =
            isnull ? (Datum)0 : read_value(us, i, PQgetvalue(res, us->cur_row, i));
    }
    MemoryContextSwitchTo(old);
    ExecStoreVirtualTuple(slot);
    us->cur_row++;
    return slot;
}

void pushed_rescan(ForeignScanState *node) {
    PushedState *us = static_cast<PushedState *>(node->fdw_state);
    if (node->ss.ps.chgParam != nullptr || !us->executed) {
        release_results(us->st);
        us->executed = false;
    }
    us->cur_result = 0;
    us->cur_row = 0;
    us->skipped = 0;
}

void pushed_end(ForeignScanState *node) {
    PushedState *us = static_cast<PushedState *>(node->fdw_state);
    if (us != nullptr)
        release_results(us->st);
}

void pushed_explain(ForeignScanState *node, ExplainState *es) {
    PushedState *us = static_cast<PushedState *>(node->fdw_state);
    RoutedStatement *st = us->st;
    explain_remote(st, node, es, psprintf("%s%s", st->statement->plan.sql, st->statement->tail));
    if (us->offset > 0)
        ExplainPropertyInteger("Rows Skipped Locally (OFFSET)", nullptr, us->offset, es);
    if (outerPlanState(node) != nullptr)
        ExplainPropertyText("Over the Row Bound",
                            us->fallback_used ? "computed here by the plan below (it was)"
                                              : "computed here by the plan below",
                            es);
}

}  // namespace picoroute::pg::fdw
