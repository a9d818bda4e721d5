// The picoroute foreign data wrapper: handler, scan planning and execution, EXPLAIN, and the
// routed execution shared with direct modifications.
//
// A scan sends one statement per target instance: the pushed-down WHERE clause plus, when the
// clauses fix every sharding-key column, "bucket_id = N" / "bucket_id IN (...)" as a literal. The
// bucket is computed at execution time from constants and parameter values (so a prepared
// statement follows the map of the moment it runs). Without a fixed key the statement goes to one
// coordinator, or to every master of the tier in parallel (scatter 'masters').
extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/sysattr.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "foreign/foreign.h"
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
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

#include "core/capabilities.h"
#include "core/statement_route.h"
#include "pg/fdw/fdw_internal.h"
#include "pg/fdw/stream.h"
#include "pg/guard.h"
#include "pg/map_store.h"

#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;
using namespace picoroute::pg::fdw;

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
    char **values;
    const char **row;  // the current row's retrieved values (streaming)
    MemoryContext tuple_cxt;
};

// Evaluated sharding-key values of one execution.
struct KeyValues {
    int n;
    Datum *values;
    bool *nulls;
    Oid type;
};

Node *strip_relabel(Node *node) {
    while (node != nullptr && IsA(node, RelabelType))
        node = reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(node)->arg);
    return node;
}

bool is_key_var(Node *node, Index relid, AttrNumber attnum) {
    node = strip_relabel(node);
    if (node == nullptr || !IsA(node, Var))
        return false;
    Var *var = reinterpret_cast<Var *>(node);
    return static_cast<Index>(var->varno) == relid && var->varlevelsup == 0 &&
           var->varattno == attnum;
}

// A constant, a parameter, or a value of the outer row (a join clause of a parameterized scan).
bool is_value(Node *node, Index relid) {
    node = strip_relabel(node);
    return node != nullptr && (IsA(node, Const) || IsA(node, Param) || is_outer_value(node, relid));
}

bool is_equality(Oid opno) {
    if (opno >= FirstGenbkiObjectId)
        return false;
    char *name = get_opname(opno);
    return name != nullptr && strcmp(name, "=") == 0;
}

Oid array_element_type(Node *array) {
    if (IsA(array, ArrayExpr))
        return reinterpret_cast<ArrayExpr *>(array)->element_typeid;
    return get_element_type(exprType(array));
}

bool array_of_values(Node *array, Index relid) {
    if (IsA(array, Const) || IsA(array, Param) || is_outer_value(array, relid))
        return true;
    if (!IsA(array, ArrayExpr) || reinterpret_cast<ArrayExpr *>(array)->multidims)
        return false;
    ListCell *lc;
    foreach (lc, reinterpret_cast<ArrayExpr *>(array)->elements)
        if (!is_value(static_cast<Node *>(lfirst(lc)), relid))
            return false;
    return true;
}

void cleanup_results(void *arg) {
    release_results(static_cast<RoutedStatement *>(arg));
}

// Evaluates the key expressions (plain: may ereport).
KeyValues *evaluate_keys(RoutedStatement *st, ExprContext *econtext) {
    if (st->key_kinds == NIL)
        return nullptr;
    int nkeys = list_length(st->key_kinds);
    KeyValues *keys = static_cast<KeyValues *>(palloc0(sizeof(KeyValues) * nkeys));
    ListCell *expr_cell = list_head(st->key_states);
    for (int i = 0; i < nkeys; i++) {
        int kind = list_nth_int(st->key_kinds, i);
        KeyValues *k = &keys[i];
        if (kind == KEY_NULL) {
            k->n = 1;
            k->values = static_cast<Datum *>(palloc0(sizeof(Datum)));
            k->nulls = static_cast<bool *>(palloc(sizeof(bool)));
            k->nulls[0] = true;
            k->type = st->key_types[i];
            continue;
        }
        ExprState *es = static_cast<ExprState *>(lfirst(expr_cell));
        expr_cell = lnext(st->key_states, expr_cell);
        bool isnull = false;
        Datum value = ExecEvalExpr(es, econtext, &isnull);
        Oid type = exprType(strip_relabel(reinterpret_cast<Node *>(es->expr)));
        // Hashed as the column stores it: a numeric with the column's scale (1 -> 1.00).
        int32 typmod = st->key_typmods[i];
        if (kind == KEY_SCALAR) {
            k->n = isnull ? 0 : 1;  // key = NULL: no row can match
            k->values = static_cast<Datum *>(palloc(sizeof(Datum)));
            k->nulls = static_cast<bool *>(palloc(sizeof(bool)));
            k->values[0] = !isnull && type == NUMERICOID ? numeric_to_typmod(value, typmod) : value;
            k->nulls[0] = isnull;
            k->type = type;
            continue;
        }
        k->type = get_element_type(type);
        if (isnull) {
            k->n = 0;  // = ANY(NULL): no row can match
            continue;
        }
        ArrayType *array = DatumGetArrayTypeP(value);
        int16 typlen;
        bool typbyval;
        char typalign;
        get_typlenbyvalalign(ARR_ELEMTYPE(array), &typlen, &typbyval, &typalign);
        deconstruct_array(array, ARR_ELEMTYPE(array), typlen, typbyval, typalign, &k->values,
                          &k->nulls, &k->n);
        k->type = ARR_ELEMTYPE(array);
        if (k->type == NUMERICOID)
            for (int v = 0; v < k->n; v++)
                if (!k->nulls[v])
                    k->values[v] = numeric_to_typmod(k->values[v], typmod);
    }
    return keys;
}

// Text values of the $n parameters, written in Picodata's format whatever the session's
// DateStyle or extra_float_digits (plain: may ereport). The values are computed first, under the
// session's settings (an InitPlan may run here), and only their output uses the fixed ones.
const char **evaluate_params(RoutedStatement *st, ExprContext *econtext) {
    const char **values = static_cast<const char **>(palloc0(sizeof(char *) * (st->nparams + 1)));
    Datum *datums = static_cast<Datum *>(palloc0(sizeof(Datum) * (st->nparams + 1)));
    bool *nulls = static_cast<bool *>(palloc0(sizeof(bool) * (st->nparams + 1)));
    int n = 0;
    ListCell *lc;
    foreach (lc, st->param_states) {
        ExprState *es = static_cast<ExprState *>(lfirst(lc));
        datums[n] = ExecEvalExpr(es, econtext, &nulls[n]);
        if (!nulls[n] && st->param_typmods[n] >= 0)
            datums[n] = numeric_to_typmod(datums[n], st->param_typmods[n]);
        n++;
    }
    if (n == 0)
        return values;
    int nestlevel = set_transmission_modes();
    for (int i = 0; i < n; i++)
        values[i] = nulls[i] ? nullptr : OutputFunctionCall(&st->param_out[i], datums[i]);
    reset_transmission_modes(nestlevel);
    return values;
}

// The sharding-key values of one execution as the core's decision takes them: each value is
// converted (add_key_datum) only when the decision hashes it.
route::KeyValues core_key_values(RoutedStatement *st, KeyValues *keys) {
    route::KeyValues out;
    int nkeys = list_length(st->key_kinds);
    for (int i = 0; i < nkeys; i++)
        out.counts.push_back(static_cast<size_t>(keys[i].n));
    out.encode = [keys](size_t column, size_t index) {
        KeyEncoder encoder;
        add_key_datum(encoder, keys[column].type, keys[column].values[index],
                      keys[column].nulls[index]);
        return encoder.bytes();
    };
    return out;
}

// The routing decision (core/statement_route.h): targets, retry policy and a description (C++:
// inside guarded()). *keyless tells whether the statement goes out without a sharding key
// (scatter, global table).
std::vector<Target> decide_targets(RoutedStatement *st, KeyValues *keys, int32_t *tier_out,
                                   Retry *retry, std::string *description, bool *keyless) {
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    TableInfo *t = st->table;
    int32_t tier = require_tier(view, map.generation, t->tier);
    *tier_out = tier;
    route::StatementInfo info;
    info.global = t->global;
    info.write = st->is_write;
    info.read_pref = static_cast<ReadPref>(t->read_pref);
    info.scatter_masters = static_cast<Scatter>(t->scatter) == Scatter::Masters;
    info.prune_by_bucket_id = caps::has(t->picodata_version, caps::Capability::PruneByBucketId);
    info.tier = t->tier;
    info.bucket_count = view.tier(tier).bucket_count;
    if (keys != nullptr)
        info.keys = core_key_values(st, keys);
    route::StatementLookups lookups;
    lookups.spread = [&](ReadPref pref, bool write) {
        return spread_target(view, tier, pref, write);
    };
    lookups.masters = [&] { return master_targets(view, tier); };
    lookups.group = [&](const std::set<uint32_t> &buckets, ReadPref pref) {
        return group_buckets(view, tier, buckets, pref);
    };
    route::StatementRoute route = route::route_statement(info, lookups);
    *retry = route.retry == route::RetryRule::Never   ? Retry::Never
             : route.retry == route::RetryRule::Write ? Retry::Write
                                                      : Retry::Read;
    *keyless = route.keyless;
    *description = std::move(route.description);
    return std::move(route.targets);
}

// The statement as sent to `target`: the bucket filter, then the OPTION clause (always last).
// With `bucket_param` > 0, a single bucket is the parameter $bucket_param instead of a literal, so
// that one text, prepared once per connection, serves every bucket (EXPLAIN shows the literal).
std::string statement_for(RoutedStatement *st, const Target &target, bool keyless,
                          int bucket_param = 0) {
    const char *column = st->bucket_column ? st->bucket_column : "bucket_id";
    std::string sql = bucket_param > 0 && target.buckets.size() == 1 && target.ranges.empty()
                          ? std::string(st->sql) + (st->has_where ? " AND " : " WHERE ") + column +
                                " = $" + std::to_string(bucket_param)
                          : with_bucket_filter(st->sql, st->has_where, target, column);
    return sql + (st->tail ? st->tail : "") + option_clause(st->table, keyless);
}

void save_description(RoutedStatement *st, const std::string &description) {
    MemoryContext cxt = GetMemoryChunkContext(st);
    pg_call([&] {
        if (st->routing != nullptr)  // a rescan's previous decision
            pfree(st->routing);
        st->routing = MemoryContextStrdup(cxt, description.c_str());
    });
}

// ---- planner callbacks --------------------------------------------------------------------

// The jobs of one execution: the routing decision (saved for EXPLAIN ANALYZE and errors), each
// target's statement as sent and the parameter values (C++: inside guarded()). Shared by
// execute_routed and stream_routed.
std::vector<Job> routed_jobs(RoutedStatement *st, KeyValues *keys, const char **values,
                             int32_t *tier, Retry *retry) {
    std::string description;
    bool keyless = true;
    std::vector<Target> targets = decide_targets(st, keys, tier, retry, &description, &keyless);
    save_description(st, description);
    std::vector<Job> jobs(targets.size());
    for (size_t i = 0; i < targets.size(); i++) {
        jobs[i].target = targets[i];
        jobs[i].sql = statement_for(st, targets[i], keyless, st->nparams + 1);
        jobs[i].values.assign(values, values + st->nparams);
        if (targets[i].buckets.size() == 1 && targets[i].ranges.empty()) {
            jobs[i].shown = statement_for(st, targets[i], keyless);
            // The bucket's text lives as long as the parameter values (the query's context).
            std::string bucket = std::to_string(targets[i].buckets[0]);
            char *copy = nullptr;
            pg_call(
                [&] { copy = MemoryContextStrdup(GetMemoryChunkContext(values), bucket.c_str()); });
            jobs[i].values.push_back(copy);
        }
    }
    return jobs;
}

void picoGetForeignRelSize(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid) {
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

void picoGetForeignPaths(PlannerInfo *root, RelOptInfo *baserel, Oid) {
    Cost total = kStatementCost + baserel->rows * row_cost();
    add_path(baserel, reinterpret_cast<Path *>(create_foreignscan_path(
                          root, baserel, nullptr, baserel->rows, kStatementCost, total, NIL,
                          baserel->lateral_relids, nullptr, NIL)));
    add_parameterized_paths(root, baserel);
}

ForeignScan *picoGetForeignPlan(PlannerInfo *root, RelOptInfo *baserel, Oid, ForeignPath *path,
                                List *tlist, List *scan_clauses, Plan *outer_plan) {
    if (IS_UPPER_REL(baserel))
        return upper_foreign_plan(root, baserel, tlist, outer_plan);
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
    RangeTblEntry *rte = planner_rt_fetch(baserel->relid, root);
    Relation rel = table_open(rte->relid, NoLock);
    StringInfoData sql;
    initStringInfo(&sql);
    List *retrieved = NIL, *params = NIL;
    bool has_where = false;
    deparse_select(&sql, root, baserel, rel, info->table, info->attrs_used, remote_conds,
                   &retrieved, &params, &has_where);
    table_close(rel, NoLock);

    // Route by every clause, pushed down or not: the remote side returns the rows of the chosen
    // buckets and local filters still apply.
    List *all_clauses = list_concat(list_copy(remote_exprs), local_exprs);
    List *key_exprs = NIL;
    List *key_kinds = analyze_key_clauses(info->table, baserel->relid, all_clauses, &key_exprs);
    List *fdw_exprs = list_concat(list_copy(params), key_exprs);
    // A lookup per outer row (a parameterized path that fixes the key) reads its few rows whole.
    bool lookup = path->path.param_info != nullptr && key_kinds != NIL;
    List *fdw_private =
        list_make5(makeString(sql.data), retrieved, makeInteger(list_length(params)), key_kinds,
                   makeBoolean(has_where));
    fdw_private = lappend(fdw_private, makeBoolean(lookup));
    return make_foreignscan(tlist, local_exprs, baserel->relid, fdw_exprs, fdw_private, NIL, NIL,
                            outer_plan);
}

// ---- executor callbacks -------------------------------------------------------------------

// A ForeignScan of an upper relation (aggregates, ORDER BY, LIMIT pushed): see upper.cpp.
bool is_upper_scan(ForeignScanState *node) {
    return reinterpret_cast<ForeignScan *>(node->ss.ps.plan)->scan.scanrelid == 0;
}

void picoBeginForeignScan(ForeignScanState *node, int eflags) {
    if (is_upper_scan(node))
        return upper_begin(node, eflags);
    ForeignScan *plan = reinterpret_cast<ForeignScan *>(node->ss.ps.plan);
    Relation rel = node->ss.ss_currentRelation;
    TableInfo *table = get_table_info(RelationGetRelid(rel));
    EState *estate = node->ss.ps.state;
    // Through a view, the view owner's user mapping (as postgres_fdw does).
    Index rti = plan->scan.scanrelid > 0 ? plan->scan.scanrelid
                                         : static_cast<Index>(bms_next_member(plan->fs_relids, -1));
    RangeTblEntry *rte = exec_rt_fetch(rti, estate);
    Oid userid = OidIsValid(rte->checkAsUser) ? rte->checkAsUser : GetUserId();
    if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
        check_declaration_at_first_use(table, userid);
    ScanState *ss = static_cast<ScanState *>(palloc0(sizeof(ScanState)));
    List *priv = plan->fdw_private;
    ss->st = init_routed_statement(&node->ss.ps, table, rel, strVal(list_nth(priv, PRIV_SQL)),
                                   boolVal(list_nth(priv, PRIV_HAS_WHERE)), false, plan->fdw_exprs,
                                   intVal(list_nth(priv, PRIV_NPARAMS)),
                                   static_cast<List *>(list_nth(priv, PRIV_KEY_KINDS)));
    ss->st->userid = userid;
    ss->retrieved_attrs = static_cast<List *>(list_nth(priv, PRIV_RETRIEVED));
    ss->attinmeta = TupleDescGetAttInMetadata(RelationGetDescr(rel));
    ss->values = static_cast<char **>(palloc0(sizeof(char *) * (RelationGetDescr(rel)->natts + 1)));
    ss->tuple_cxt =
        AllocSetContextCreate(estate->es_query_cxt, "picoroute tuple", ALLOCSET_SMALL_SIZES);
    // A scan that will be rescanned unchanged (the inner side of a nested loop) keeps whole
    // answers to replay them; every other scan streams its rows.
    // A lookup per outer row of a parameterized path reads its few rows whole: a semi-join that
    // stops at the first row would otherwise close a connection whose answer is still coming.
    ss->streaming = (eflags & EXEC_FLAG_REWIND) == 0 &&
                    !(list_length(priv) > PRIV_LOOKUP && boolVal(list_nth(priv, PRIV_LOOKUP)));
    ss->row = static_cast<const char **>(
        palloc0(sizeof(char *) * (list_length(ss->retrieved_attrs) + 1)));
    node->fdw_state = ss;
}

TupleTableSlot *picoIterateForeignScan(ForeignScanState *node) {
    if (is_upper_scan(node))
        return upper_iterate(node);
    ScanState *ss = static_cast<ScanState *>(node->fdw_state);
    TupleTableSlot *slot = node->ss.ss_ScanTupleSlot;
    int expected = list_length(ss->retrieved_attrs);
    if (!ss->executed) {
        // Parameter and key values live for this execution only (a rescan makes new ones).
        ExprContext *econtext = node->ss.ps.ps_ExprContext;
        MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);
        if (ss->streaming)
            stream_routed(ss->st, econtext, expected);
        else
            execute_routed(ss->st, econtext);
        MemoryContextSwitchTo(old);
        ss->executed = true;
        ss->cur_result = 0;
        ss->cur_row = 0;
        for (int i = 0; i < ss->st->nresults; i++) {
            PGresult *res = ss->st->results[i];
            if (PQresultStatus(res) != PGRES_TUPLES_OK ||
                (expected > 0 && PQnfields(res) != expected))
                ereport(ERROR, (errcode(ERRCODE_FDW_ERROR),
                                errmsg("picoroute: the remote query returned %d columns, "
                                       "expected %d",
                                       PQnfields(res), expected),
                                errcontext("remote SQL: %s", ss->st->sql)));
        }
    }
    RoutedStatement *st = ss->st;
    if (ss->streaming) {
        if (!stream_next(st, ss->row))
            return ExecClearTuple(slot);
    } else {
        while (ss->cur_result < st->nresults &&
               ss->cur_row >= PQntuples(st->results[ss->cur_result])) {
            ss->cur_result++;
            ss->cur_row = 0;
        }
        if (ss->cur_result >= st->nresults)
            return ExecClearTuple(slot);
        PGresult *res = st->results[ss->cur_result];
        for (int col = 0; col < expected; col++)
            ss->row[col] =
                PQgetisnull(res, ss->cur_row, col) ? nullptr : PQgetvalue(res, ss->cur_row, col);
        ss->cur_row++;
    }
    int natts = RelationGetDescr(st->rel)->natts;
    for (int i = 0; i < natts; i++)
        ss->values[i] = nullptr;
    int col = 0;
    ListCell *lc;
    foreach (lc, ss->retrieved_attrs)
        ss->values[lfirst_int(lc) - 1] = const_cast<char *>(ss->row[col++]);
    // The values go straight into the slot as a virtual tuple (what BuildTupleFromCStrings does,
    // without its two palloc'd arrays and the heap tuple formed per row). They live in tuple_cxt
    // until the next row.
    ExecClearTuple(slot);
    MemoryContextReset(ss->tuple_cxt);
    MemoryContext old = MemoryContextSwitchTo(ss->tuple_cxt);
    TupleDesc desc = slot->tts_tupleDescriptor;
    AttInMetadata *meta = ss->attinmeta;
    for (int i = 0; i < natts; i++) {
        if (TupleDescAttr(desc, i)->attisdropped) {
            slot->tts_values[i] = (Datum)0;
            slot->tts_isnull[i] = true;
            continue;
        }
        slot->tts_values[i] = InputFunctionCall(&meta->attinfuncs[i], ss->values[i],
                                                meta->attioparams[i], meta->atttypmods[i]);
        slot->tts_isnull[i] = ss->values[i] == nullptr;
    }
    MemoryContextSwitchTo(old);
    ExecStoreVirtualTuple(slot);
    return slot;
}

void picoReScanForeignScan(ForeignScanState *node) {
    if (is_upper_scan(node))
        return upper_rescan(node);
    ScanState *ss = static_cast<ScanState *>(node->fdw_state);
    // A stream cannot be replayed: run the statement again.
    if (node->ss.ps.chgParam != nullptr || !ss->executed || ss->streaming) {
        release_results(ss->st);
        ss->executed = false;
    }
    ss->cur_result = 0;
    ss->cur_row = 0;
}

void picoEndForeignScan(ForeignScanState *node) {
    if (is_upper_scan(node))
        return upper_end(node);
    ScanState *ss = static_cast<ScanState *>(node->fdw_state);
    if (ss != nullptr)
        release_results(ss->st);
}

void picoExplainForeignScan(ForeignScanState *node, ExplainState *es) {
    if (is_upper_scan(node))
        return upper_explain(node, es);
    explain_remote(static_cast<ScanState *>(node->fdw_state)->st, node, es);
}

}  // namespace

namespace picoroute::pg::fdw {

List *analyze_key_clauses(TableInfo *table, Index relid, List *conds, List **key_exprs) {
    *key_exprs = NIL;
    if (table->global || table->nkeys == 0)
        return NIL;
    List *kinds = NIL, *exprs = NIL;
    for (int k = 0; k < table->nkeys; k++) {
        AttrNumber attnum = table->key_attnums[k];
        HashClass column_class = hash_class(get_atttype(table->relid, attnum));
        if (column_class == HashClass::None)
            return NIL;
        bool found = false;
        ListCell *lc;
        foreach (lc, conds) {
            Node *cond = static_cast<Node *>(lfirst(lc));
            if (IsA(cond, RestrictInfo))
                cond = reinterpret_cast<Node *>(reinterpret_cast<RestrictInfo *>(cond)->clause);
            if (IsA(cond, OpExpr)) {
                OpExpr *op = reinterpret_cast<OpExpr *>(cond);
                if (list_length(op->args) != 2 || !is_equality(op->opno))
                    continue;
                Node *l = static_cast<Node *>(linitial(op->args));
                Node *r = static_cast<Node *>(lsecond(op->args));
                Node *value = nullptr;
                if (is_key_var(l, relid, attnum) && is_value(r, relid))
                    value = r;
                else if (is_key_var(r, relid, attnum) && is_value(l, relid))
                    value = l;
                if (value == nullptr || hash_class(exprType(strip_relabel(value))) != column_class)
                    continue;
                kinds = lappend_int(kinds, KEY_SCALAR);
                exprs = lappend(exprs, strip_relabel(value));
                found = true;
            } else if (IsA(cond, ScalarArrayOpExpr)) {
                ScalarArrayOpExpr *sa = reinterpret_cast<ScalarArrayOpExpr *>(cond);
                if (!sa->useOr || !is_equality(sa->opno))
                    continue;
                Node *array = static_cast<Node *>(lsecond(sa->args));
                if (!is_key_var(static_cast<Node *>(linitial(sa->args)), relid, attnum) ||
                    !array_of_values(array, relid) ||
                    hash_class(array_element_type(array)) != column_class)
                    continue;
                kinds = lappend_int(kinds, KEY_ARRAY);
                exprs = lappend(exprs, array);
                found = true;
            } else if (IsA(cond, NullTest)) {
                NullTest *nt = reinterpret_cast<NullTest *>(cond);
                if (nt->nulltesttype != IS_NULL ||
                    !is_key_var(reinterpret_cast<Node *>(nt->arg), relid, attnum))
                    continue;
                kinds = lappend_int(kinds, KEY_NULL);
                found = true;
            }
            if (found)
                break;
        }
        if (!found)
            return NIL;
    }
    *key_exprs = exprs;
    return kinds;
}

RoutedStatement *init_routed_statement(PlanState *ps, TableInfo *table, Relation rel, char *sql,
                                       bool has_where, bool is_write, List *fdw_exprs, int nparams,
                                       List *key_kinds) {
    EState *estate = ps->state;
    MemoryContext cxt =
        AllocSetContextCreate(estate->es_query_cxt, "picoroute statement", ALLOCSET_SMALL_SIZES);
    RoutedStatement *st =
        static_cast<RoutedStatement *>(MemoryContextAllocZero(cxt, sizeof(RoutedStatement)));
    st->table = table;
    st->rel = rel;
    st->sql = sql;
    st->has_where = has_where;
    st->is_write = is_write;
    st->nparams = nparams;
    st->key_kinds = key_kinds;
    List *param_exprs = list_copy_head(fdw_exprs, nparams);
    List *key_exprs = list_copy_tail(fdw_exprs, nparams);
    st->param_states = ExecInitExprList(param_exprs, ps);
    st->key_states = ExecInitExprList(key_exprs, ps);
    st->param_out = static_cast<FmgrInfo *>(palloc0(sizeof(FmgrInfo) * (nparams + 1)));
    st->param_typmods = static_cast<int32 *>(palloc0(sizeof(int32) * (nparams + 1)));
    int i = 0;
    ListCell *lc;
    foreach (lc, param_exprs) {
        Node *expr = static_cast<Node *>(lfirst(lc));
        Oid out;
        bool varlena;
        getTypeOutputInfo(exprType(expr), &out, &varlena);
        // A parameter compared with a numeric(p,s) column is marked by the deparser (see
        // with_column_scale): its value gets the column's scale.
        st->param_typmods[i] = IsA(expr, RelabelType) && exprType(expr) == NUMERICOID
                                   ? reinterpret_cast<RelabelType *>(expr)->resulttypmod
                                   : -1;
        fmgr_info(out, &st->param_out[i++]);
    }
    int nkeys = list_length(key_kinds);
    st->key_types = static_cast<Oid *>(palloc0(sizeof(Oid) * (nkeys + 1)));
    st->key_typmods = static_cast<int32 *>(palloc0(sizeof(int32) * (nkeys + 1)));
    for (int k = 0; k < nkeys && k < table->nkeys; k++) {
        Oid type, collation;
        get_atttypetypmodcoll(table->relid, table->key_attnums[k], &type, &st->key_typmods[k],
                              &collation);
        st->key_types[k] = get_atttype(table->relid, table->key_attnums[k]);
    }
    st->cleanup.func = cleanup_results;
    st->cleanup.arg = st;
    MemoryContextRegisterResetCallback(cxt, &st->cleanup);
    return st;
}

void release_results(RoutedStatement *st) {
    for (int i = 0; i < st->nresults; i++) {
        if (st->results[i] != nullptr)
            PQclear(st->results[i]);
        st->results[i] = nullptr;
    }
    st->nresults = 0;
    delete st->stream;
    st->stream = nullptr;
}

void execute_routed(RoutedStatement *st, ExprContext *econtext) {
    release_results(st);
    const char **values = evaluate_params(st, econtext);
    KeyValues *keys = evaluate_keys(st, econtext);
    Oid userid = OidIsValid(st->userid) ? st->userid : GetUserId();
    if (st->is_write)
        before_remote_write(RelationGetRelationName(st->rel));
    guarded([&] {
        int32_t tier = kNone;
        Retry retry = Retry::Read;
        std::vector<Job> jobs = routed_jobs(st, keys, values, &tier, &retry);
        if (jobs.empty())
            return;
        WriteLog log;
        ReadPref pref =
            st->is_write ? ReadPref::Leader : static_cast<ReadPref>(st->table->read_pref);
        run_jobs(jobs, conn_params_for(st->table->serverid, userid), tier, pref, retry,
                 st->is_write ? &log : nullptr);
        PGresult **results = nullptr;
        MemoryContext cxt = GetMemoryChunkContext(st);
        pg_call([&] {
            if (st->results != nullptr) {  // a rescan: the previous execution's array
                pfree(st->results);
                st->results = nullptr;
            }
            results = static_cast<PGresult **>(
                MemoryContextAllocZero(cxt, sizeof(PGresult *) * jobs.size()));
        });
        st->results = results;
        for (size_t i = 0; i < jobs.size(); i++)
            st->results[i] = jobs[i].result.release();
        st->nresults = static_cast<int>(jobs.size());
    });
}

void stream_routed(RoutedStatement *st, ExprContext *econtext, int ncols) {
    release_results(st);
    const char **values = evaluate_params(st, econtext);
    KeyValues *keys = evaluate_keys(st, econtext);
    Oid userid = OidIsValid(st->userid) ? st->userid : GetUserId();
    guarded([&] {
        int32_t tier = kNone;
        Retry retry = Retry::Read;
        std::vector<Job> jobs = routed_jobs(st, keys, values, &tier, &retry);
        if (jobs.empty())
            return;
        auto stream = std::make_unique<RowStream>(
            std::move(jobs), conn_params_for(st->table->serverid, userid), tier,
            static_cast<ReadPref>(st->table->read_pref), retry, ncols);
        stream->start();
        st->stream = stream.release();
    });
}

bool stream_next(RoutedStatement *st, const char **values) {
    if (st->stream == nullptr)
        return false;
    return guarded([&] { return st->stream->next(values); });
}

namespace {

// True when `node` holds a parameter whose value EXPLAIN does not have: a PARAM_EXEC (set by an
// outer plan node or a subquery while the statement runs; an EXPLAIN without ANALYZE, or an
// auto_explain of a plan part that never ran, has no value for it, and its slot holds a Datum that
// was never computed), or an external parameter without a value.
bool unknown_param_walker(Node *node, void *context) {
    if (node == nullptr)
        return false;
    if (IsA(node, Param)) {
        Param *param = reinterpret_cast<Param *>(node);
        ExprContext *econtext = static_cast<ExprContext *>(context);
        if (param->paramkind != PARAM_EXTERN)
            return true;
        ParamListInfo params = econtext->ecxt_param_list_info;
        if (params == nullptr || param->paramid < 1 || param->paramid > params->numParams)
            return true;
        if (params->paramFetch != nullptr)
            return false;
        ParamExternData *prm = &params->params[param->paramid - 1];
        return !OidIsValid(prm->ptype) || prm->ptype != param->paramtype;
    }
    return expression_tree_walker(
        node, reinterpret_cast<bool (*)()>(reinterpret_cast<void *>(unknown_param_walker)),
        context);
}

}  // namespace

bool routing_params_unknown(RoutedStatement *st, ExprContext *econtext) {
    ListCell *lc;
    foreach (lc, st->key_states) {
        ExprState *state = static_cast<ExprState *>(lfirst(lc));
        if (unknown_param_walker(reinterpret_cast<Node *>(state->expr), econtext))
            return true;
    }
    return false;
}

void explain_remote(RoutedStatement *st, ForeignScanState *node, ExplainState *es) {
    // The statement as it is sent: with the owner's bucket filter when the routing resolves to a
    // single instance now (EXPLAIN ANALYZE, or keys given as constants).
    const char *sql = st->sql;
    const char *routing = st->routing;
    if (routing == nullptr) {
        ExprContext *econtext = node->ss.ps.ps_ExprContext;
        explain_routing(st, econtext, routing_params_unknown(st, econtext), &routing, &sql);
    }
    ExplainPropertyText("Remote SQL", sql, es);
    ExplainPropertyText("Routing", routing, es);
}

void explain_routing(RoutedStatement *st, ExprContext *econtext, bool params_unknown,
                     const char **routing, const char **sql) {
    if (params_unknown && st->key_kinds != NIL) {
        *routing = pstrdup("depends on run-time values: by sharding key, computed at execution");
        return;
    }
    KeyValues *keys = evaluate_keys(st, econtext);
    guarded([&] {
        int32_t tier = kNone;
        Retry retry = Retry::Read;
        std::string description;
        bool keyless = true;
        std::vector<Target> targets =
            decide_targets(st, keys, &tier, &retry, &description, &keyless);
        std::string routed = targets.size() == 1 ? statement_for(st, targets[0], keyless) : "";
        pg_call([&] {
            *routing = pstrdup(description.c_str());
            if (!routed.empty())
                *sql = pstrdup(routed.c_str());
        });
    });
}

}  // namespace picoroute::pg::fdw

// Every use of a picoroute foreign table asks for this routine first: without the library
// preloaded there is no shared map to route by, and the check fails clearly here.
PICOROUTE_SQL_FUNCTION(picoroute_fdw_handler) {
    FdwRoutine *routine = makeNode(FdwRoutine);
    routine->GetForeignRelSize = picoGetForeignRelSize;
    routine->GetForeignPaths = picoGetForeignPaths;
    routine->GetForeignPlan = picoGetForeignPlan;
    routine->BeginForeignScan = picoBeginForeignScan;
    routine->IterateForeignScan = picoIterateForeignScan;
    routine->ReScanForeignScan = picoReScanForeignScan;
    routine->EndForeignScan = picoEndForeignScan;
    routine->ExplainForeignScan = picoExplainForeignScan;
    routine->GetForeignUpperPaths = get_foreign_upper_paths;
    routine->ImportForeignSchema = [](ImportForeignSchemaStmt *stmt, Oid server) {
        return import_foreign_schema(stmt, server);
    };
    install_modify_callbacks(routine);
    install_join_callbacks(routine);
    routine->AnalyzeForeignTable = analyze_foreign_table;
    PG_RETURN_POINTER(routine);
}
