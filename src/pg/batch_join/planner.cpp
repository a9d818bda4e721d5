// Batched joins with a foreign table, planning: an inner, left, semi or anti join of any outer
// relation with a picoroute foreign table (the inner side) whose join clauses fix its (single)
// sharding-key column with `outer column = key column` under the type's default equality gets a
// CustomScan path that reads the outer rows in batches of picoroute.join_batch_size and looks up
// each batch's distinct keys with one statement per owning instance (executor.cpp runs it).
// Beside the parameterized nested loop (a lookup per outer row) and the hash join over a full
// scan, the planner chooses by cost: a batch costs one statement.
//
// The local match must equal the remote one: both sides have the same type, one of a few whose
// equality is exact and hashable (integers, text and varchar under a deterministic collation,
// uuid), and every join clause is evaluated again locally on the joined rows.
extern "C" {
#include "postgres.h"

#include "access/table.h"
#include "foreign/fdwapi.h"
#include "catalog/pg_type.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/restrictinfo.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/typcache.h"
}

#include "core/capabilities.h"
#include "pg/batch_join/batch_join.h"
#include "pg/batch_join/plan_private.h"
#include "pg/fdw/deparse.h"
#include "pg/fdw/keys.h"
#include "pg/fdw/plan_private.h"
#include "pg/fdw/scan.h"
#include "pg/settings.h"

#include <algorithm>
#include <cmath>

namespace picoroute::pg::batch_join {

using namespace picoroute::pg::fdw;

namespace {

set_join_pathlist_hook_type prev_join_hook = nullptr;
CustomPathMethods path_methods;

// `outer column = key column` with the key type's default equality, same type on both sides:
// the outer Var, else nullptr.
Var *key_clause_outer(OpExpr *op, RelOptInfo *outerrel, Index inner_relid, AttrNumber key,
                      Oid key_type) {
    if (list_length(op->args) != 2)
        return nullptr;
    Node *l = static_cast<Node *>(linitial(op->args));
    Node *r = static_cast<Node *>(lsecond(op->args));
    Node *other = is_key_var(r, inner_relid, key)   ? l
                  : is_key_var(l, inner_relid, key) ? r
                                                    : nullptr;
    other = strip_relabel(other);
    if (other == nullptr || !IsA(other, Var))
        return nullptr;
    Var *var = reinterpret_cast<Var *>(other);
    if (var->varlevelsup != 0 || var->varattno <= 0 || !bms_is_member(var->varno, outerrel->relids))
        return nullptr;
    if (var->vartype != key_type || !batchable_type(key_type))
        return nullptr;
    if (lookup_type_cache(key_type, TYPECACHE_EQ_OPR)->eq_opr != op->opno)
        return nullptr;
    if (OidIsValid(op->inputcollid) && !get_collation_isdeterministic(op->inputcollid))
        return nullptr;
    RegProcedure lhs, rhs;
    if (!get_op_hash_functions(op->opno, &lhs, &rhs) || lhs != rhs)
        return nullptr;
    return var;
}

// Every column the join reads is a user column of the foreign table or a column of the outer
// relation (no placeholder, whole-row or system column), and no clause is a pseudoconstant.
bool columns_supported(RelOptInfo *joinrel, RelOptInfo *outerrel, Index inner_relid,
                       List *restrictlist) {
    List *exprs = list_copy(joinrel->reltarget->exprs);
    ListCell *lc;
    foreach (lc, restrictlist) {
        RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
        if (ri->pseudoconstant)
            return false;
        exprs = lappend(exprs, ri->clause);
    }
    List *vars = pull_var_clause(reinterpret_cast<Node *>(exprs), PVC_INCLUDE_PLACEHOLDERS);
    foreach (lc, vars) {
        Node *node = static_cast<Node *>(lfirst(lc));
        if (!IsA(node, Var))
            return false;
        Var *var = reinterpret_cast<Var *>(node);
        if (var->varattno <= 0)
            return false;
        if (static_cast<Index>(var->varno) != inner_relid &&
            !bms_is_member(var->varno, outerrel->relids))
            return false;
    }
    return true;
}

// The inner relation's scan state when it is a base picoroute foreign table batched lookups can
// serve (one sharding-key column, no lateral reference), else nullptr.
RelInfo *batchable_inner(RelOptInfo *innerrel) {
    if (innerrel->reloptkind != RELOPT_BASEREL || innerrel->rtekind != RTE_RELATION ||
        innerrel->fdwroutine == nullptr ||
        innerrel->fdwroutine->GetForeignRelSize != get_foreign_rel_size)
        return nullptr;
    RelInfo *info = static_cast<RelInfo *>(innerrel->fdw_private);
    if (info == nullptr || info->table->global || info->table->nkeys != 1 ||
        !bms_is_empty(innerrel->lateral_relids))
        return nullptr;
    return info;
}

// The cost: the outer side, one statement per batch, each key looked up, the rows fetched and the
// local match. A batch costs what a lookup per outer row costs once (scan.cpp's cost model); a key
// in its IN list costs ten fetched rows (the storage's index lookup and the list's evaluation:
// bench/join_bench.py measured about 17 us a key in batches of 256 against 0.75 us a row of a
// full scan). So for a few hundred outer rows this beats both a lookup per row and a scan of a
// large table, and for an outer side of more than about a tenth of the table's rows one scan and
// a hash join stay cheaper.
void set_cost(CustomPath *cp, Path *outer, double join_rows, int batch) {
    double outer_rows = std::max(outer->rows, 1.0);
    double batches = std::ceil(outer_rows / batch);
    constexpr Cost kStatementCost = 10;
    const Cost key_cost = cpu_tuple_cost * 100;
    cp->path.startup_cost = outer->startup_cost + kStatementCost;
    cp->path.total_cost = outer->total_cost + batches * kStatementCost + outer_rows * key_cost +
                          join_rows * cpu_tuple_cost * 11 + outer_rows * cpu_operator_cost * 4;
}

void add_batched_join_path(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
                           RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra) {
    if (prev_join_hook != nullptr)
        prev_join_hook(root, joinrel, outerrel, innerrel, jointype, extra);
    int batch = setting_join_batch_size;
    if (batch <= 0 || (jointype != JOIN_INNER && jointype != JOIN_LEFT && jointype != JOIN_SEMI &&
                       jointype != JOIN_ANTI))
        return;
    RelInfo *info = batchable_inner(innerrel);
    Path *outer = outerrel->cheapest_total_path;
    if (info == nullptr || outer == nullptr || outer->param_info != nullptr ||
        !bms_is_empty(PATH_REQ_OUTER(outer)) ||
        !columns_supported(joinrel, outerrel, innerrel->relid, extra->restrictlist))
        return;
    AttrNumber key = info->table->key_attnums[0];
    Oid key_type = get_atttype(info->table->relid, key);
    Var *outer_var = nullptr;
    OpExpr *key_op = nullptr;
    ListCell *lc;
    foreach (lc, extra->restrictlist) {
        RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
        Node *clause = reinterpret_cast<Node *>(ri->clause);
        // An outer join is keyed by its own clauses, not by a filter over its result.
        if (!IsA(clause, OpExpr) ||
            (IS_OUTER_JOIN(jointype) && RINFO_IS_PUSHED_DOWN(ri, joinrel->relids)))
            continue;
        OpExpr *op = reinterpret_cast<OpExpr *>(clause);
        outer_var = key_clause_outer(op, outerrel, innerrel->relid, key, key_type);
        if (outer_var != nullptr) {
            key_op = op;
            break;
        }
    }
    if (outer_var == nullptr)
        return;
    CustomPath *cp = makeNode(CustomPath);
    cp->path.pathtype = T_CustomScan;
    cp->path.parent = joinrel;
    cp->path.pathtarget = joinrel->reltarget;
    cp->path.rows = joinrel->rows;
    set_cost(cp, outer, joinrel->rows, batch);
    cp->custom_paths = list_make1(outer);
    BatchedJoinPath private_data;
    private_data.restrictlist = extra->restrictlist;
    private_data.outer_var = outer_var;
    private_data.eq_op = key_op->opno;
    private_data.collation = key_op->inputcollid;
    private_data.inner_relid = innerrel->relid;
    private_data.jointype = jointype;
    cp->custom_private = encode(private_data);
    cp->methods = &path_methods;
    add_path(joinrel, &cp->path);
}

// Where each column of the scan tuple comes from: the outer plan's column (> 0) or the foreign
// table's attribute (< 0).
List *column_sources(List *scan_tlist, Plan *outer_plan, Index inner_relid) {
    List *sources = NIL;
    ListCell *lc;
    foreach (lc, scan_tlist) {
        Var *var = reinterpret_cast<Var *>(lfirst_node(TargetEntry, lc)->expr);
        if (static_cast<Index>(var->varno) == inner_relid) {
            sources = lappend_int(sources, -var->varattno);
            continue;
        }
        TargetEntry *tle = tlist_member(reinterpret_cast<Expr *>(var), outer_plan->targetlist);
        if (tle == nullptr)
            elog(ERROR, "picoroute: a column of the batched join is not in its outer plan");
        sources = lappend_int(sources, tle->resno);
    }
    return sources;
}

Plan *plan_batched_join(PlannerInfo *root, RelOptInfo *joinrel, CustomPath *best_path, List *tlist,
                        List *, List *custom_plans) {
    Plan *outer_plan = static_cast<Plan *>(linitial(custom_plans));
    BatchedJoinPath path = decode_path(best_path->custom_private);
    Var *outer_var = path.outer_var;
    Index inner_relid = path.inner_relid;
    RelOptInfo *innerrel = find_base_rel(root, static_cast<int>(inner_relid));
    RelInfo *info = static_cast<RelInfo *>(innerrel->fdw_private);
    // As a nested loop splits them: an outer join's own clauses decide which inner rows match,
    // the others (pushed down from above) filter the joined rows; an inner or semi join has only
    // the former. The table's conditions evaluated here filter its rows before the join.
    JoinType jointype = path.jointype;
    List *restrictlist = path.restrictlist;
    List *join_quals = NIL, *other_quals = NIL;
    if (IS_OUTER_JOIN(jointype))
        extract_actual_join_clauses(restrictlist, joinrel->relids, &join_quals, &other_quals);
    else
        join_quals = extract_actual_clauses(restrictlist, false);
    List *inner_quals = extract_actual_clauses(info->local_conds, false);
    List *exprs = list_concat(list_copy(tlist), join_quals);
    exprs = list_concat(list_concat(exprs, other_quals), inner_quals);
    List *scan_tlist = add_to_flat_tlist(
        NIL, pull_var_clause(reinterpret_cast<Node *>(exprs), PVC_INCLUDE_PLACEHOLDERS));
    TargetEntry *key_tle =
        tlist_member(reinterpret_cast<Expr *>(outer_var), outer_plan->targetlist);
    if (key_tle == nullptr)
        elog(ERROR, "picoroute: the key of the batched join is not in its outer plan");

    RangeTblEntry *rte = planner_rt_fetch(inner_relid, root);
    AttrNumber key = info->table->key_attnums[0];
    Relation rel = table_open(rte->relid, NoLock);
    StringInfoData sql;
    initStringInfo(&sql);
    List *retrieved = NIL, *params = NIL;
    bool has_where = false;
    deparse_select(&sql, root, innerrel, rel, info->table, info->attrs_used, info->remote_conds,
                   &retrieved, &params, &has_where);
    table_close(rel, NoLock);
    if (!list_member_int(retrieved, key))
        elog(ERROR, "picoroute: the batched join does not read the sharding key");
    int chains = where_dnf_chains(extract_actual_clauses(info->remote_conds, false));
    int batch = std::max(1, setting_join_batch_size);
    int max_keys =
        std::max(1, std::min(batch, static_cast<int>(caps::kDnfMostChains) / std::max(1, chains)));

    CustomScan *cs = makeNode(CustomScan);
    cs->scan.plan.targetlist = tlist;
    cs->scan.plan.qual = other_quals;
    cs->scan.scanrelid = 0;
    cs->custom_plans = custom_plans;
    BatchedJoinExprs plan_exprs;
    plan_exprs.params = params;
    plan_exprs.join_quals = join_quals;
    plan_exprs.inner_quals = inner_quals;
    cs->custom_exprs = encode(plan_exprs);
    cs->custom_scan_tlist = scan_tlist;
    BatchedJoinPlan plan;
    plan.statement.sql = sql.data;
    plan.statement.has_where = has_where;
    plan.statement.nparams = list_length(params);
    plan.statement.where_chains = chains;
    plan.key_column =
        const_cast<char *>(quote_remote_identifier(get_attname(rte->relid, key, false)));
    plan.batch_size = batch;
    plan.max_keys = max_keys;
    plan.retrieved_attrs = retrieved;
    plan.sources = column_sources(scan_tlist, outer_plan, inner_relid);
    plan.outer_key = key_tle->resno;
    plan.eq_op = path.eq_op;
    plan.collation = path.collation;
    plan.key_attno = key;
    plan.jointype = jointype;
    cs->custom_private = encode(plan);
    cs->methods = &batched_join_scan_methods;
    return &cs->scan.plan;
}

}  // namespace

void register_batched_join() {
    path_methods.CustomName = kBatchedJoinName;
    path_methods.PlanCustomPath = plan_batched_join;
    register_batched_join_exec();
    prev_join_hook = set_join_pathlist_hook;
    set_join_pathlist_hook = add_batched_join_path;
}

}  // namespace picoroute::pg::batch_join
