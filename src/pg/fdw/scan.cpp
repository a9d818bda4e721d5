// Scans of one foreign table (a base relation): planning (the remote and local clauses, the
// cost model, parameterized paths for a routed lookup per outer row) and execution (rows read as
// they arrive, or whole answers kept for a rescan). The statement is routed by routed.cpp; pushed
// joins and upper relations are join.cpp and upper.cpp; handler.cpp dispatches between them.
extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/paths.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

#include "pg/fdw/array_key.h"
#include "pg/fdw/declcheck.h"
#include "pg/fdw/deparse.h"
#include "pg/fdw/keys.h"
#include "pg/fdw/options.h"
#include "pg/fdw/plan_private.h"
#include "pg/fdw/routed.h"
#include "pg/fdw/scan.h"
#include "pg/fdw/shippable.h"
#include "pg/fdw/table_cache.h"
#include "pg/stats/stats.h"

namespace picoroute::pg::fdw {

namespace {

// Executor-side state of a scan.
struct ScanState {
    RoutedStatement *st;
    AttInMetadata *attinmeta;
    List *retrieved_attrs;
    bool executed;
    bool streaming;  // rows read as they arrive; else whole answers, kept for rescans
    int cur_result;
    int cur_row;
    const char **row;  // the current row's retrieved values
    int nretrieved;
    int *retrieved_att;  // the attribute index (from 0) of each retrieved column
    // Attributes not retrieved whose input function runs for a NULL too (not strict: a domain's,
    // which checks its constraints); every other one not retrieved is NULL without a call.
    int nnull_inputs;
    int *null_inputs;
    MemoryContext tuple_cxt;
    ArrayKey *array_key;  // the key compared with an array computed at execution, or nullptr
};

// Maps the retrieved columns to attributes once, for store_row.
void prepare_columns(ScanState *ss, TupleDesc desc) {
    ss->nretrieved = list_length(ss->retrieved_attrs);
    ss->retrieved_att = static_cast<int *>(palloc0(sizeof(int) * (ss->nretrieved + 1)));
    bool *retrieved = static_cast<bool *>(palloc0(sizeof(bool) * (desc->natts + 1)));
    int col = 0;
    ListCell *lc;
    foreach (lc, ss->retrieved_attrs) {
        ss->retrieved_att[col++] = lfirst_int(lc) - 1;
        retrieved[lfirst_int(lc) - 1] = true;
    }
    ss->null_inputs = static_cast<int *>(palloc0(sizeof(int) * (desc->natts + 1)));
    ss->nnull_inputs = 0;
    for (int i = 0; i < desc->natts; i++)
        if (!retrieved[i] && !TupleDescAttr(desc, i)->attisdropped &&
            !ss->attinmeta->attinfuncs[i].fn_strict)
            ss->null_inputs[ss->nnull_inputs++] = i;
    pfree(retrieved);
}

// Converts the row in ss->row into the slot as a virtual tuple (what BuildTupleFromCStrings does,
// without its two palloc'd arrays, the heap tuple formed per row and the input function calls for
// NULLs of strict types). The values live in tuple_cxt until the next row.
void store_row(ScanState *ss, TupleTableSlot *slot) {
    ExecClearTuple(slot);
    MemoryContextReset(ss->tuple_cxt);
    MemoryContext old = MemoryContextSwitchTo(ss->tuple_cxt);
    int natts = slot->tts_tupleDescriptor->natts;
    for (int i = 0; i < natts; i++) {
        slot->tts_values[i] = (Datum)0;
        slot->tts_isnull[i] = true;
    }
    AttInMetadata *meta = ss->attinmeta;
    for (int k = 0; k < ss->nnull_inputs; k++) {
        int i = ss->null_inputs[k];
        slot->tts_values[i] = InputFunctionCall(&meta->attinfuncs[i], nullptr, meta->attioparams[i],
                                                meta->atttypmods[i]);
    }
    for (int col = 0; col < ss->nretrieved; col++) {
        int i = ss->retrieved_att[col];
        char *value = const_cast<char *>(ss->row[col]);
        slot->tts_values[i] = InputFunctionCall(&meta->attinfuncs[i], value, meta->attioparams[i],
                                                meta->atttypmods[i]);
        slot->tts_isnull[i] = value == nullptr;
    }
    MemoryContextSwitchTo(old);
}

// The cost model: one remote statement costs as much as fetching 100 rows (a round trip against
// the transfer and conversion of a row), so a parameterized scan (one statement per outer row)
// wins over one scan of the table when the outer side has fewer rows than about 1% of the table.
constexpr Cost kStatementCost = 10;
Cost row_cost() {
    return cpu_tuple_cost * 10;
}

// Whether a parameterized scan under `ppi` would fix every sharding-key column (a routed point
// lookup per outer row): only those are offered; anything else would scan the cluster per row.
bool ppi_fixes_key(RelOptInfo *baserel, ParamPathInfo *ppi) {
    RelInfo *info = static_cast<RelInfo *>(baserel->fdw_private);
    List *conds = list_concat(list_copy(baserel->baserestrictinfo), ppi->ppi_clauses);
    List *key_exprs = NIL;
    return analyze_key_clauses(info->table, baserel->relid, conds, &key_exprs) != NIL;
}

// Collects in *ppis the parameterizations that a join clause movable to `baserel` asks for.
void add_ppi_of(PlannerInfo *root, RelOptInfo *baserel, RestrictInfo *ri, List **ppis) {
    if (!join_clause_is_movable_to(ri, baserel) || !is_foreign_expr(root, baserel, ri->clause))
        return;
    Relids outer =
        bms_del_member(bms_union(ri->clause_relids, baserel->lateral_relids), baserel->relid);
    if (bms_is_empty(outer))
        return;
    ParamPathInfo *ppi = get_baserel_parampathinfo(root, baserel, outer);
    if (ppi_fixes_key(baserel, ppi))
        *ppis = list_append_unique_ptr(*ppis, ppi);
}

// An equivalence-class member that is the sharding-key column `arg` (a Var) of the relation.
bool ec_member_is_key(PlannerInfo *, RelOptInfo *, EquivalenceClass *, EquivalenceMember *em,
                      void *arg) {
    return equal(strip_relabel(reinterpret_cast<Node *>(em->em_expr)), arg);
}

// Parameterized paths, as postgres_fdw makes them: for each outer relation set that join clauses
// on the sharding key (ordinary ones, and those an equivalence class implies) need, a path whose
// scan is a routed lookup per outer row.
void add_parameterized_paths(PlannerInfo *root, RelOptInfo *baserel) {
    RelInfo *info = static_cast<RelInfo *>(baserel->fdw_private);
    TableInfo *table = info->table;
    if (table->global || table->nkeys == 0)
        return;
    List *ppis = NIL;
    ListCell *lc;
    foreach (lc, baserel->joininfo)
        add_ppi_of(root, baserel, lfirst_node(RestrictInfo, lc), &ppis);
    for (int k = 0; k < table->nkeys && baserel->has_eclass_joins; k++) {
        Oid type, collation;
        int32 typmod;
        get_atttypetypmodcoll(table->relid, table->key_attnums[k], &type, &typmod, &collation);
        Var *key = makeVar(baserel->relid, table->key_attnums[k], type, typmod, collation, 0);
        List *clauses = generate_implied_equalities_for_column(root, baserel, ec_member_is_key, key,
                                                               baserel->lateral_referencers);
        foreach (lc, clauses)
            add_ppi_of(root, baserel, lfirst_node(RestrictInfo, lc), &ppis);
    }
    foreach (lc, ppis) {
        ParamPathInfo *ppi = static_cast<ParamPathInfo *>(lfirst(lc));
        Cost total = kStatementCost + ppi->ppi_rows * row_cost();
        add_path(baserel, reinterpret_cast<Path *>(create_foreignscan_path(
                              root, baserel, nullptr, ppi->ppi_rows, kStatementCost, total, NIL,
                              ppi->ppi_req_outer, nullptr, NIL)));
    }
}

}  // namespace

// ---- planner callbacks --------------------------------------------------------------------

void get_foreign_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid) {
    RelInfo *info = static_cast<RelInfo *>(palloc0(sizeof(RelInfo)));
    info->table = get_table_info(foreigntableid);
    ListCell *lc;
    foreach (lc, baserel->baserestrictinfo) {
        RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
        if (is_foreign_expr(root, baserel, ri->clause))
            info->remote_conds = lappend(info->remote_conds, ri);
        else
            info->local_conds = lappend(info->local_conds, ri);
    }
    pull_varattnos(reinterpret_cast<Node *>(baserel->reltarget->exprs), baserel->relid,
                   &info->attrs_used);
    foreach (lc, info->local_conds) {
        RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
        pull_varattnos(reinterpret_cast<Node *>(ri->clause), baserel->relid, &info->attrs_used);
    }
    baserel->fdw_private = info;
    // reltuples is the cluster's row count after ANALYZE (analyze.cpp), -1 before: then assume
    // 1000 rows. The column statistics ANALYZE gathered drive the selectivity of every clause.
    if (baserel->tuples < 0)
        baserel->tuples = 1000;
    Selectivity sel = clauselist_selectivity(root, baserel->baserestrictinfo, baserel->relid,
                                             JOIN_INNER, nullptr);
    baserel->rows = clamp_row_est(baserel->tuples * sel);
}

void get_foreign_paths(PlannerInfo *root, RelOptInfo *baserel, Oid) {
    Cost startup = kStatementCost;
    // The target of an UPDATE or DELETE with a condition evaluated here is written row by row,
    // one remote statement per row (row_modify.cpp): in a prepared statement's generic plan (an
    // array parameter), this cost sends the plan cache back to custom plans, whose constant array
    // goes to Picodata as one statement.
    RelInfo *info = static_cast<RelInfo *>(baserel->fdw_private);
    CmdType cmd = root->parse->commandType;
    if ((cmd == CMD_UPDATE || cmd == CMD_DELETE) &&
        static_cast<int>(baserel->relid) == root->parse->resultRelation && info->local_conds != NIL)
        startup += disable_cost;
    Cost total = startup + baserel->rows * row_cost();
    add_path(baserel, reinterpret_cast<Path *>(create_foreignscan_path(
                          root, baserel, nullptr, baserel->rows, startup, total, NIL,
                          baserel->lateral_relids, nullptr, NIL)));
    add_parameterized_paths(root, baserel);
}

namespace {

// The rows the query can use of this scan when it reads this table alone under a constant LIMIT n
// [OFFSET m] and nothing is filtered, sorted, grouped or joined here: n + m. Each statement of the
// scan then carries that LIMIT: a read spread over several statements (scatter 'masters') stops
// each of them early instead of streaming whole buckets the query will never read. 0: no bound.
int64 scan_row_limit(PlannerInfo *root, RelOptInfo *baserel, ForeignPath *path, List *local_exprs,
                     const TableInfo *table) {
    Query *parse = root->parse;
    if (!table->push_upper || parse->commandType != CMD_SELECT || parse->rowMarks != NIL ||
        parse->sortClause != NIL || local_exprs != NIL || path->path.param_info != nullptr)
        return 0;
    // grouping_planner leaves limit_tuples at -1 under grouping, aggregates, DISTINCT, window
    // functions and set-returning functions in the select list.
    if (root->limit_tuples < 1 || root->limit_tuples > static_cast<double>(PG_INT32_MAX))
        return 0;
    if (baserel->reloptkind != RELOPT_BASEREL ||
        bms_membership(root->all_baserels) != BMS_SINGLETON)
        return 0;
    return static_cast<int64>(root->limit_tuples);
}

}  // namespace

ForeignScan *scan_plan(PlannerInfo *root, RelOptInfo *baserel, ForeignPath *path, List *tlist,
                       List *scan_clauses, Plan *outer_plan) {
    RelInfo *info = static_cast<RelInfo *>(baserel->fdw_private);
    List *remote_exprs = NIL, *local_exprs = NIL, *remote_conds = NIL;
    ListCell *lc;
    foreach (lc, scan_clauses) {
        RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
        if (ri->pseudoconstant)
            continue;
        if (list_member_ptr(info->remote_conds, ri)) {
            remote_conds = lappend(remote_conds, ri);
            remote_exprs = lappend(remote_exprs, ri->clause);
        } else if (list_member_ptr(info->local_conds, ri)) {
            local_exprs = lappend(local_exprs, ri->clause);
        } else if (is_foreign_expr(root, baserel, ri->clause)) {
            remote_conds = lappend(remote_conds, ri);
            remote_exprs = lappend(remote_exprs, ri->clause);
        } else {
            local_exprs = lappend(local_exprs, ri->clause);
        }
    }
    // Route only by the clauses sent with the statement: no bucket filter goes with it, so a key
    // fixed by a local clause alone would have the owner answer for the whole cluster. Such a
    // statement goes out without a key, but for key = ANY(<an array known at execution>), sent
    // as key lists by owner.
    List *key_exprs = NIL;
    List *key_kinds = analyze_key_clauses(info->table, baserel->relid, remote_exprs, &key_exprs);
    Expr *array = key_kinds != NIL
                      ? nullptr
                      : take_array_key_clause(root, baserel, info->table, &local_exprs);
    RangeTblEntry *rte = planner_rt_fetch(baserel->relid, root);
    Relation rel = table_open(rte->relid, NoLock);
    StringInfoData sql;
    initStringInfo(&sql);
    List *retrieved = NIL, *params = NIL;
    bool has_where = false;
    int from_offset = 0;
    deparse_select(&sql, root, baserel, rel, info->table, info->attrs_used, remote_conds,
                   &retrieved, &params, &has_where, &from_offset);
    table_close(rel, NoLock);

    List *fdw_exprs = list_concat(list_copy(params), key_exprs);
    BaseScanPlan plan;
    plan.statement.sql = sql.data;
    plan.statement.has_where = has_where;
    plan.statement.nparams = list_length(params);
    plan.statement.key_kinds = key_kinds;
    plan.statement.where_chains = where_dnf_chains(remote_exprs);
    plan.retrieved_attrs = retrieved;
    // A lookup per outer row (a parameterized path that fixes the key) reads its few rows whole.
    plan.lookup = path->path.param_info != nullptr && key_kinds != NIL;
    plan.from_offset = from_offset;
    plan.row_limit = scan_row_limit(root, baserel, path, local_exprs, info->table);
    if (array != nullptr) {
        plan.array_column = pstrdup(
            quote_remote_identifier(get_attname(rte->relid, info->table->key_attnums[0], false)));
        plan.array_max_values = array_key_max_values(remote_exprs);
        fdw_exprs = lappend(fdw_exprs, array);
    }
    return make_foreignscan(tlist, local_exprs, baserel->relid, fdw_exprs, encode(plan), NIL, NIL,
                            outer_plan);
}

// ---- executor callbacks -------------------------------------------------------------------

void scan_begin(ForeignScanState *node, int eflags) {
    ForeignScan *plan_node = reinterpret_cast<ForeignScan *>(node->ss.ps.plan);
    Relation rel = node->ss.ss_currentRelation;
    TableInfo *table = get_table_info(RelationGetRelid(rel));
    EState *estate = node->ss.ps.state;
    // Through a view, the view owner's user mapping (as postgres_fdw does).
    Index rti = plan_node->scan.scanrelid > 0
                    ? plan_node->scan.scanrelid
                    : static_cast<Index>(bms_next_member(plan_node->fs_relids, -1));
    RangeTblEntry *rte = exec_rt_fetch(rti, estate);
    Oid userid = user_for_rte(rte);
    if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
        check_declaration_at_first_use(table, userid);
    if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
        stats::table_started(RelationGetRelid(rel), stats::TableStart::Scan);
    ScanState *ss = static_cast<ScanState *>(palloc0(sizeof(ScanState)));
    BaseScanPlan plan = decode_base_scan(plan_node->fdw_private);
    List *exprs = plan_node->fdw_exprs;
    RemoteStatement statement;
    statement.plan = plan.statement;
    statement.row_limit = plan.row_limit;
    statement.chunk_from = plan.from_offset;
    if (plan.array_max_values > 0) {
        ss->array_key = static_cast<ArrayKey *>(palloc0(sizeof(ArrayKey)));
        ss->array_key->column = plan.array_column;
        ss->array_key->max_values = plan.array_max_values;
        init_array_key(ss->array_key, static_cast<Expr *>(llast(exprs)),
                       TupleDescAttr(RelationGetDescr(rel), table->key_attnums[0] - 1)->atttypid,
                       &node->ss.ps);
        exprs = list_copy_head(exprs, list_length(exprs) - 1);
        statement.plan.key_kinds = list_make1_int(KEY_SCALAR);  // each value of the array
    }
    RoutedSetup setup;
    setup.table = table;
    setup.rel = rel;
    setup.userid = userid;
    ss->st = init_routed_statement(&node->ss.ps, setup, statement, exprs);
    ss->retrieved_attrs = plan.retrieved_attrs;
    ss->attinmeta = TupleDescGetAttInMetadata(RelationGetDescr(rel));
    ss->tuple_cxt =
        AllocSetContextCreate(estate->es_query_cxt, "picoroute tuple", ALLOCSET_SMALL_SIZES);
    // A scan that will be rescanned unchanged (the inner side of a nested loop) keeps whole
    // answers to replay them; every other scan streams its rows.
    // A lookup per outer row of a parameterized path reads its few rows whole: a semi-join that
    // stops at the first row would otherwise close a connection whose answer is still coming.
    ss->streaming = (eflags & EXEC_FLAG_REWIND) == 0 && ss->array_key == nullptr && !plan.lookup;
    ss->row = static_cast<const char **>(
        palloc0(sizeof(char *) * (list_length(ss->retrieved_attrs) + 1)));
    prepare_columns(ss, RelationGetDescr(rel));
    node->fdw_state = ss;
}

TupleTableSlot *scan_iterate(ForeignScanState *node) {
    ScanState *ss = static_cast<ScanState *>(node->fdw_state);
    TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
    int expected = list_length(ss->retrieved_attrs);
    if (!ss->executed) {
        // Parameter and key values live for this execution only (a rescan makes new ones).
        ExprContext *econtext = node->ss.ps.ps_ExprContext;
        MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
        if (ss->array_key != nullptr)
            execute_array_key(ss->st, ss->array_key, econtext);
        else if (ss->streaming)
            stream_routed(ss->st, econtext, expected);
        else
            execute_routed(ss->st, econtext);
        MemoryContextSwitchTo(old);
        ss->executed = true;
        ss->cur_result = 0;
        ss->cur_row = 0;
        for (int i = 0; i < ss->st->answers.nresults; i++) {
            PGresult *res = ss->st->answers.results[i];
            if (PQresultStatus(res) != PGRES_TUPLES_OK ||
                (expected > 0 && PQnfields(res) != expected))
                ereport(ERROR, (errcode(ERRCODE_FDW_ERROR),
                                errmsg("picoroute: the remote query returned %d columns, "
                                       "expected %d",
                                       PQnfields(res), expected),
                                errcontext("remote SQL: %s", ss->st->statement->plan.sql)));
        }
    }
    RoutedStatement *st = ss->st;
    if (ss->streaming) {
        if (!stream_next(st, ss->row))
            return ExecClearTuple(slot);
    } else {
        while (ss->cur_result < st->answers.nresults &&
               ss->cur_row >= PQntuples(st->answers.results[ss->cur_result])) {
            ss->cur_result++;
            ss->cur_row = 0;
        }
        if (ss->cur_result >= st->answers.nresults)
            return ExecClearTuple(slot);
        PGresult *res = st->answers.results[ss->cur_result];
        for (int col = 0; col < expected; col++)
            ss->row[col] =
                PQgetisnull(res, ss->cur_row, col) ? nullptr : PQgetvalue(res, ss->cur_row, col);
        ss->cur_row++;
    }
    store_row(ss, slot);
    if (ss->streaming)
        stream_row_done(st);
    ExecStoreVirtualTuple(slot);
    return slot;
}

void scan_rescan(ForeignScanState *node) {
    ScanState *ss = static_cast<ScanState *>(node->fdw_state);
    // A stream cannot be replayed: run the statement again.
    if (node->ss.ps.chgParam != nullptr || !ss->executed || ss->streaming) {
        release_results(ss->st);
        ss->executed = false;
    }
    ss->cur_result = 0;
    ss->cur_row = 0;
}

void scan_end(ForeignScanState *node) {
    ScanState *ss = static_cast<ScanState *>(node->fdw_state);
    if (ss != nullptr)
        release_results(ss->st);
}

void scan_explain(ForeignScanState *node, ExplainState *es) {
    ScanState *ss = static_cast<ScanState *>(node->fdw_state);
    RoutedStatement *st = ss->st;
    if (ss->array_key != nullptr) {
        explain_array_key(st, ss->array_key, es);
        return;
    }
    explain_remote(
        st, node, es,
        st->statement->row_limit > 0
            ? psprintf("%s LIMIT " INT64_FORMAT, st->statement->plan.sql, st->statement->row_limit)
            : nullptr);
}

}  // namespace picoroute::pg::fdw
