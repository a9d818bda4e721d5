// Upper-relation pushdown of the picoroute FDW: aggregates with GROUP BY and HAVING, ORDER BY and
// LIMIT run in Picodata, which sends back the groups or the first rows instead of the whole table
// (plain C style at plan time: see plan_private.h).
//
// A query over one foreign table whose WHERE clauses all go to Picodata, or over a join pushed to
// Picodata (join.cpp), can push, in this order:
//   - grouping (UPPERREL_GROUP_AGG): the grouping expressions must be shippable and every
//     aggregate one Picodata implements (see shippable_aggregate in shippable.cpp); HAVING goes
//     too, or nothing is pushed. The select list carries the grouping expressions and the bare
//     aggregates; expressions over them are computed locally, and every value Picodata returns
//     is read into the local result type (count is an integer there, sum of integers and avg
//     decimals);
//   - ORDER BY (UPPERREL_ORDERED), over the table or a pushed grouping: every sort key a shippable
//     column, grouping expression or aggregate of the select list, with its type's default
//     ordering, text only under a byte-order collation (as Picodata compares bytes); NULLS
//     FIRST/LAST is always written;
//   - LIMIT (UPPERREL_FINAL), a constant: LIMIT n OFFSET m is sent as LIMIT n + m (Picodata has
//     no OFFSET) and the first m rows are skipped here.
// The statement goes to the owner of the bucket when the WHERE clause fixes the whole sharding
// key to one value (with the bucket filter before GROUP BY), else to one coordinator; a list of
// keys (key IN (...)) is not pushed (the scan routes its rows from each owner). A table
// whose server scatters to the masters (scatter 'masters') keeps all of this local, as does
// server or table option pushdown_aggregates 'off'.
//
// This file plans; pushed_scan.cpp executes the ForeignScans planned here and those of pushed
// joins.
extern "C" {
#include "postgres.h"

#include "access/stratnum.h"
#include "catalog/pg_am.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/planmain.h"
#include "optimizer/paths.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/selfuncs.h"
}

#include "core/capabilities.h"
#include "pg/fdw/deparse.h"
#include "pg/fdw/dialect.h"
#include "pg/fdw/join.h"
#include "pg/fdw/keys.h"
#include "pg/fdw/options.h"
#include "pg/fdw/plan_private.h"
#include "pg/fdw/scan.h"
#include "pg/fdw/shippable.h"
#include "pg/fdw/upper.h"

#include <cstring>

namespace picoroute::pg::fdw {

namespace {

// Planner-side state of an upper relation pushed to Picodata (output_rel->fdw_private).
struct UpperInfo {
    RelOptInfo *base;  // the foreign table's relation
    RelInfo *info;
    List *tlist;        // TargetEntries: the remote select list, also fdw_scan_tlist
    List *group_exprs;  // GROUP BY expressions (NIL: no GROUP BY)
    List *having;       // HAVING conditions (all shipped)
    bool grouped;
    List *order_exprs;  // ORDER BY expressions
    List *order_flags;  // per expression: kOrderDesc | kOrderNullsFirst
    List *pathkeys;
    bool has_limit;
    int64 limit;   // rows fetched: LIMIT n + m
    int64 offset;  // rows skipped here
    // Over a table read without a key under a row bound (keyless_row_bound): the same rows
    // computed here, sorted and limited over a scan of the table, which reads in chunks over the
    // bound; the ForeignScan runs it when Picodata answers that its statement exceeds the bound.
    Path *fallback;
    double rows;
    Cost startup;
    Cost total;
};

constexpr int kOrderDesc = 1;
constexpr int kOrderNullsFirst = 2;

// Per-row transfer cost, as the scan estimates it (get_foreign_paths in scan.cpp).
constexpr double kRowTransfer = 10;

UpperInfo *copy_info(UpperInfo *from) {
    UpperInfo *u = static_cast<UpperInfo *>(palloc0(sizeof(UpperInfo)));
    *u = *from;
    return u;
}

// The foreign table alone, with every WHERE clause sent to Picodata, or a join pushed to
// Picodata (join.cpp) whose tables both allow it.
bool base_is_pushable(PlannerInfo *root, RelOptInfo *base, RelInfo *info) {
    Query *parse = root->parse;
    if (parse->commandType != CMD_SELECT || parse->rowMarks != NIL || parse->hasTargetSRFs)
        return false;
    if (IS_JOIN_REL(base))
        return upper_over_join_ok(base);
    if (info == nullptr || !info->table->push_upper || info->local_conds != NIL)
        return false;
    // A table scattered to the masters keeps its scatter: each master sends its own rows, and
    // partial aggregates or per-master LIMITs are not combined here.
    if (static_cast<Scatter>(info->table->scatter) == Scatter::Masters)
        return false;
    ListCell *lc;
    foreach (lc, base->baserestrictinfo)
        if (lfirst_node(RestrictInfo, lc)->pseudoconstant)
            return false;
    // A list of keys (key IN (...)): the scan routes the few rows from each owner, which also
    // works where instances do not forward (forward=off); one owner's aggregate would miss the
    // others' rows, and a coordinator would have to forward.
    List *key_exprs = NIL;
    foreach (lc, analyze_key_clauses(info->table, base->relid, info->remote_conds, &key_exprs))
        if (lfirst_int(lc) == KEY_ARRAY)
            return false;
    return true;
}

// The columns a target needs, as a flat select list; false when one cannot be fetched.
bool column_tlist(RelOptInfo *base, PathTarget *target, List **tlist) {
    List *vars = pull_var_clause(reinterpret_cast<Node *>(target->exprs), PVC_RECURSE_PLACEHOLDERS);
    ListCell *lc;
    foreach (lc, vars) {
        Node *var = static_cast<Node *>(lfirst(lc));
        if (!is_foreign_expr(nullptr, base, reinterpret_cast<Expr *>(var)))
            return false;
    }
    if (vars == NIL)
        return false;
    *tlist = add_to_flat_tlist(NIL, vars);
    return true;
}

// The row bound of a read of `u`'s table without a key (keyless_row_bound), 0 when none applies:
// a pushed join, or a WHERE clause that fixes the sharding key (one bucket, no coordinator).
int64 keyless_bound(UpperInfo *u) {
    if (IS_JOIN_REL(u->base))
        return 0;
    List *key_exprs = NIL;
    if (analyze_key_clauses(u->info->table, u->base->relid, u->info->remote_conds, &key_exprs) !=
        NIL)
        return 0;
    return keyless_row_bound(u->info->table);
}

// The scan of the table alone (the cheapest, read in chunks over the bound) projected to the
// remote select list, which the ForeignScan's rows follow column by column.
Path *fallback_input(PlannerInfo *root, UpperInfo *u) {
    Path *scan = u->base->cheapest_total_path;
    if (scan == nullptr || scan->param_info != nullptr)
        return nullptr;
    PathTarget *target = make_pathtarget_from_tlist(u->tlist);
    return reinterpret_cast<Path *>(create_projection_path(root, u->base, scan, target));
}

// ---- GROUP BY / HAVING ----------------------------------------------------------------------

void add_grouping_paths(PlannerInfo *root, RelOptInfo *base, RelInfo *info, RelOptInfo *output,
                        GroupPathExtraData *extra) {
    Query *parse = root->parse;
    if (extra->patype == PARTITIONWISE_AGGREGATE_PARTIAL || parse->groupingSets != NIL ||
        (!parse->hasAggs && parse->groupClause == NIL))
        return;
    PathTarget *target = root->upper_targets[UPPERREL_GROUP_AGG];
    List *tlist = NIL;
    int i = 0;
    ListCell *lc;
    foreach (lc, target->exprs) {
        Expr *expr = static_cast<Expr *>(lfirst(lc));
        Index ref = get_pathtarget_sortgroupref(target, i++);
        if (ref != 0 && get_sortgroupref_clause_noerr(ref, parse->groupClause) != nullptr) {
            // A grouping expression: Picodata groups by it (text needs a deterministic
            // collation, which shippable() already asks of every comparison).
            if (IsA(expr, Const) || contain_agg_clause(reinterpret_cast<Node *>(expr)) ||
                !is_foreign_expr(root, base, expr))
                return;
            TargetEntry *tle = makeTargetEntry(expr, list_length(tlist) + 1, nullptr, false);
            tle->ressortgroupref = ref;
            tlist = lappend(tlist, tle);
            continue;
        }
        // Anything else: its aggregates go to Picodata, what is computed over them stays here.
        List *items = pull_var_clause(reinterpret_cast<Node *>(expr),
                                      PVC_INCLUDE_AGGREGATES | PVC_RECURSE_PLACEHOLDERS);
        ListCell *ic;
        foreach (ic, items)
            if (!is_foreign_expr(root, base, static_cast<Expr *>(lfirst(ic))))
                return;
        tlist = add_to_flat_tlist(tlist, items);
    }
    List *having = NIL;
    foreach (lc, reinterpret_cast<List *>(extra->havingQual)) {
        Expr *cond = static_cast<Expr *>(lfirst(lc));
        if (!is_foreign_expr(root, base, cond))
            return;
        having = lappend(having, cond);
    }
    // Before 26.2.1-rc2 a scalar aggregate over an empty bucket set answers NULL for count
    // (pushed_scan.cpp reads it as 0): a HAVING over it would be judged on that NULL there.
    if (having != NIL && parse->groupClause == NIL &&
        !info->table->capabilities.has(caps::Capability::EmptySetAggregate))
        return;
    List *group_exprs = NIL;
    foreach (lc, parse->groupClause) {
        SortGroupClause *sgc = lfirst_node(SortGroupClause, lc);
        TargetEntry *tle = get_sortgroupref_tle(sgc->tleSortGroupRef, tlist);
        group_exprs = lappend(group_exprs, tle->expr);
    }
    if (tlist == NIL)
        return;
    UpperInfo *u = static_cast<UpperInfo *>(palloc0(sizeof(UpperInfo)));
    u->base = base;
    u->info = info;
    u->tlist = tlist;
    u->grouped = true;
    u->group_exprs = group_exprs;
    u->having = having;
    u->rows = group_exprs == NIL
                  ? 1
                  : estimate_num_groups(root, group_exprs, base->rows, nullptr, nullptr);
    if (having != NIL)
        u->rows = clamp_row_est(u->rows * 0.5);
    // Picodata reads the rows where they are and sends the groups: cheaper than fetching every
    // row (the scan's estimate) and aggregating here.
    u->startup = 10 + base->rows * cpu_operator_cost;
    u->total = u->startup + u->rows * cpu_tuple_cost * kRowTransfer;
    output->fdw_private = u;
    add_path(output, reinterpret_cast<Path *>(
                         create_foreign_upper_path(root, output, output->reltarget, u->rows,
                                                   u->startup, u->total, NIL, nullptr, NIL)));
}

// ---- ORDER BY -------------------------------------------------------------------------------

// The expression of `ec` Picodata can sort by, or null.
Expr *sort_expr(PlannerInfo *root, UpperInfo *u, EquivalenceClass *ec) {
    if (ec->ec_has_volatile)
        return nullptr;
    ListCell *lc;
    foreach (lc, ec->ec_members) {
        EquivalenceMember *em = static_cast<EquivalenceMember *>(lfirst(lc));
        if (em->em_is_const || em->em_is_child)
            continue;
        Expr *expr = em->em_expr;
        if (u->grouped) {
            // Only what the remote select list has (a grouping expression or an aggregate).
            bool listed = false;
            ListCell *tc;
            foreach (tc, u->tlist)
                if (equal(lfirst_node(TargetEntry, tc)->expr, expr))
                    listed = true;
            if (!listed)
                continue;
        } else if (contain_agg_clause(reinterpret_cast<Node *>(expr))) {
            continue;
        }
        if (is_foreign_expr(root, u->base, expr))
            return expr;
    }
    return nullptr;
}

bool order_ok(PathKey *pk, Expr *expr) {
    Oid type = exprType(reinterpret_cast<Node *>(expr));
    if (!(is_number_type(type) || is_text_type(type) || type == TIMESTAMPTZOID))
        return false;
    // Picodata compares strings by their bytes.
    Oid collation = pk->pk_eclass->ec_collation;
    if (is_text_type(type) && OidIsValid(collation) && !lc_collate_is_c(collation))
        return false;
    // Only the type's default ordering (what ASC/DESC means there).
    Oid opclass = GetDefaultOpClass(type, BTREE_AM_OID);
    if (!OidIsValid(opclass) || get_opclass_family(opclass) != pk->pk_opfamily)
        return false;
    return pk->pk_strategy == BTLessStrategyNumber || pk->pk_strategy == BTGreaterStrategyNumber;
}

void add_ordered_paths(PlannerInfo *root, RelOptInfo *base, RelInfo *info, UpperInfo *prev,
                       RelOptInfo *output) {
    if (root->sort_pathkeys == NIL || root->parse->hasWindowFuncs ||
        root->parse->distinctClause != NIL)
        return;
    UpperInfo *u;
    if (prev != nullptr) {
        if (prev->order_exprs != NIL || prev->has_limit)
            return;
        u = copy_info(prev);
    } else {
        u = static_cast<UpperInfo *>(palloc0(sizeof(UpperInfo)));
        u->base = base;
        u->info = info;
        if (!column_tlist(base, root->upper_targets[UPPERREL_ORDERED], &u->tlist))
            return;
        u->rows = base->rows;
        u->startup = 10;
        u->total = 10 + base->rows * cpu_tuple_cost * kRowTransfer;
    }
    List *exprs = NIL, *flags = NIL;
    ListCell *lc;
    foreach (lc, root->sort_pathkeys) {
        PathKey *pk = lfirst_node(PathKey, lc);
        Expr *expr = sort_expr(root, u, pk->pk_eclass);
        if (expr == nullptr || !order_ok(pk, expr))
            return;
        exprs = lappend(exprs, expr);
        flags = lappend_int(flags, (pk->pk_strategy == BTGreaterStrategyNumber ? kOrderDesc : 0) |
                                       (pk->pk_nulls_first ? kOrderNullsFirst : 0));
    }
    u->order_exprs = exprs;
    u->order_flags = flags;
    u->pathkeys = root->sort_pathkeys;
    // Picodata sorts before it sends the first row; cheaper than sorting here.
    Cost sort = u->rows * cpu_operator_cost;
    u->startup = u->total - u->rows * cpu_tuple_cost * kRowTransfer + sort;
    u->total += sort;
    int64 bound = u->grouped ? 0 : keyless_bound(u);
    Path *input = bound > 0 ? fallback_input(root, u) : nullptr;
    if (input != nullptr)
        u->fallback = reinterpret_cast<Path *>(
            create_sort_path(root, u->base, input, root->sort_pathkeys, -1.0));
    output->fdw_private = u;
    // Without a LIMIT every row travels either way: a table known (ANALYZE) to have more matching
    // rows than the bound is sorted here over its chunked scan rather than asked for first, in
    // vain. The LIMIT stage may still push ORDER BY ... LIMIT over this.
    if (bound > 0 && u->rows > static_cast<double>(bound))
        return;
    add_path(output, reinterpret_cast<Path *>(create_foreign_upper_path(
                         root, output, root->upper_targets[UPPERREL_ORDERED], u->rows, u->startup,
                         u->total, u->pathkeys, u->fallback, NIL)));
}

// ---- LIMIT ----------------------------------------------------------------------------------

// A LIMIT or OFFSET value known now: false for a parameter or an expression.
bool constant_count(Node *node, int64 *value) {
    *value = 0;
    if (node == nullptr)
        return true;
    if (!IsA(node, Const))
        return false;
    Const *c = reinterpret_cast<Const *>(node);
    if (c->constisnull || c->consttype != INT8OID)
        return false;
    *value = DatumGetInt64(c->constvalue);
    return *value >= 0;
}

// Under a keyless row bound: false when the LIMIT n + m asks for more rows than the bound (the
// statement could only fail: the query is computed here over the chunked scan); otherwise sets
// u->fallback to the same LIMIT over the local plan of what it limits (`fresh`: the table's
// rows, no ORDER BY), for an answer that still exceeds the bound (every storage's n + m rows
// gathered, or, where Picodata sorts only at the coordinator, every matching row).
bool limit_fallback(PlannerInfo *root, UpperInfo *u, bool fresh) {
    int64 bound = u->grouped ? 0 : keyless_bound(u);
    if (bound <= 0)
        return true;
    if (u->limit > bound)
        return false;
    Path *input = fresh ? fallback_input(root, u) : u->fallback;
    if (input == nullptr)
        return true;
    Node *count = reinterpret_cast<Node *>(makeConst(
        INT8OID, -1, InvalidOid, sizeof(int64), Int64GetDatum(u->limit), false, FLOAT8PASSBYVAL));
    u->fallback = reinterpret_cast<Path *>(
        create_limit_path(root, u->base, input, nullptr, count, LIMIT_OPTION_COUNT, 0, u->limit));
    return true;
}

void add_final_paths(PlannerInfo *root, RelOptInfo *base, RelInfo *info, UpperInfo *prev,
                     RelOptInfo *output, FinalPathExtraData *extra) {
    Query *parse = root->parse;
    if (!extra->limit_needed || parse->limitCount == nullptr ||
        parse->limitOption == LIMIT_OPTION_WITH_TIES)
        return;
    int64 count = 0, offset = 0;
    if (!constant_count(parse->limitCount, &count) || !constant_count(parse->limitOffset, &offset))
        return;
    if (count == 0 || count > PG_INT64_MAX - offset || offset > PG_INT32_MAX)
        return;
    UpperInfo *u;
    if (prev != nullptr) {
        if (prev->has_limit)
            return;
        u = copy_info(prev);
    } else {
        // LIMIT straight over the table (no ORDER BY, no grouping).
        if (parse->sortClause != NIL || parse->hasAggs || parse->groupClause != NIL ||
            parse->distinctClause != NIL || parse->hasWindowFuncs)
            return;
        u = static_cast<UpperInfo *>(palloc0(sizeof(UpperInfo)));
        u->base = base;
        u->info = info;
        if (!column_tlist(base, root->upper_targets[UPPERREL_FINAL], &u->tlist))
            return;
        u->rows = base->rows;
        u->startup = 10;
        u->total = 10 + base->rows * cpu_tuple_cost * kRowTransfer;
    }
    u->has_limit = true;
    u->limit = count + offset;
    u->offset = offset;
    if (!limit_fallback(root, u, prev == nullptr))
        return;
    double fetched = Min(u->rows, static_cast<double>(u->limit));
    u->rows = clamp_row_est(Max(fetched - static_cast<double>(offset), 1.0));
    // Picodata stops after n + m rows: only those travel.
    u->startup = u->startup * 0.5;
    u->total = u->startup + fetched * cpu_tuple_cost * kRowTransfer;
    output->fdw_private = u;
    add_path(output, reinterpret_cast<Path *>(create_foreign_upper_path(
                         root, output, root->upper_targets[UPPERREL_FINAL], u->rows, u->startup,
                         u->total, u->pathkeys, u->fallback, NIL)));
}

}  // namespace

void get_foreign_upper_paths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
                             RelOptInfo *output_rel, void *extra) {
    if (output_rel->fdw_private != nullptr)
        return;
    if (stage != UPPERREL_GROUP_AGG && stage != UPPERREL_ORDERED && stage != UPPERREL_FINAL)
        return;
    UpperInfo *prev = nullptr;
    RelOptInfo *base;
    if (input_rel->reloptkind == RELOPT_BASEREL ||
        (IS_JOIN_REL(input_rel) && input_rel->fdw_private != nullptr)) {
        base = input_rel;
    } else if (input_rel->reloptkind == RELOPT_UPPER_REL && input_rel->fdw_private != nullptr) {
        prev = static_cast<UpperInfo *>(input_rel->fdw_private);
        base = prev->base;
    } else {
        return;
    }
    RelInfo *info = IS_JOIN_REL(base) ? nullptr : static_cast<RelInfo *>(base->fdw_private);
    if (!base_is_pushable(root, base, info))
        return;
    switch (stage) {
        case UPPERREL_GROUP_AGG:
            if (prev == nullptr)
                add_grouping_paths(root, base, info, output_rel,
                                   static_cast<GroupPathExtraData *>(extra));
            break;
        case UPPERREL_ORDERED:
            add_ordered_paths(root, base, info, prev, output_rel);
            break;
        case UPPERREL_FINAL:
            add_final_paths(root, base, info, prev, output_rel,
                            static_cast<FinalPathExtraData *>(extra));
            break;
        default:
            break;
    }
}

namespace {

// One expression of the statement: a column is "name", or "r<n>"."name" over a pushed join.
void write_expr(StringInfo buf, PlannerInfo *root, UpperInfo *u, Node *expr, List **params) {
    if (IS_JOIN_REL(u->base))
        deparse_join_expr(buf, root, expr, params);
    else
        deparse_expr(buf, planner_rt_fetch(u->base->relid, root)->relid, expr, params);
}

// " FROM <table> [WHERE ...]" or the pushed join's FROM and WHERE; true when WHERE was written.
// Sets the routing: key kinds (NIL: a coordinator), key expressions and, for a join, the table
// that routes it.
bool write_from(StringInfo buf, PlannerInfo *root, UpperInfo *u, List **params, List **key_kinds,
                List **key_exprs, Index *anchor) {
    if (IS_JOIN_REL(u->base)) {
        *key_kinds = join_routing(u->base, key_exprs, anchor);
        return deparse_join_from(buf, root, u->base, params);
    }
    TableInfo *table = u->info->table;
    appendStringInfo(buf, " FROM %s", quote_remote_identifier(table->remote_table));
    List *conds = u->info->remote_conds;
    ListCell *lc;
    foreach (lc, conds) {
        appendStringInfoString(buf, lc == list_head(conds) ? " WHERE " : " AND ");
        write_expr(buf, root, u, reinterpret_cast<Node *>(lfirst_node(RestrictInfo, lc)->clause),
                   params);
    }
    // Routed to the owner when the key is fixed to a single value (lists of keys are not
    // pushed: see base_is_pushable).
    *key_kinds = analyze_key_clauses(table, u->base->relid, conds, key_exprs);
    return conds != NIL;
}

}  // namespace

ForeignScan *upper_plan(PlannerInfo *root, RelOptInfo *rel, List *tlist, Plan *outer_plan) {
    UpperInfo *u = static_cast<UpperInfo *>(rel->fdw_private);
    List *params = NIL, *key_kinds = NIL, *key_exprs = NIL;
    Index anchor = 0;
    StringInfoData sql, tail;
    initStringInfo(&sql);
    initStringInfo(&tail);
    int nestlevel = set_transmission_modes();
    appendStringInfoString(&sql, "SELECT ");
    ListCell *lc;
    foreach (lc, u->tlist) {
        if (lc != list_head(u->tlist))
            appendStringInfoString(&sql, ", ");
        write_expr(&sql, root, u, reinterpret_cast<Node *>(lfirst_node(TargetEntry, lc)->expr),
                   &params);
    }
    bool has_where = write_from(&sql, root, u, &params, &key_kinds, &key_exprs, &anchor);
    foreach (lc, u->group_exprs) {
        appendStringInfoString(&tail, lc == list_head(u->group_exprs) ? " GROUP BY " : ", ");
        write_expr(&tail, root, u, static_cast<Node *>(lfirst(lc)), &params);
    }
    foreach (lc, u->having) {
        appendStringInfoString(&tail, lc == list_head(u->having) ? " HAVING " : " AND ");
        write_expr(&tail, root, u, static_cast<Node *>(lfirst(lc)), &params);
    }
    ListCell *fc;
    forboth(lc, u->order_exprs, fc, u->order_flags) {
        appendStringInfoString(&tail, lc == list_head(u->order_exprs) ? " ORDER BY " : ", ");
        write_expr(&tail, root, u, static_cast<Node *>(lfirst(lc)), &params);
        int flags = lfirst_int(fc);
        appendStringInfoString(&tail, (flags & kOrderDesc) ? " DESC" : " ASC");
        appendStringInfoString(&tail, (flags & kOrderNullsFirst) ? " NULLS FIRST" : " NULLS LAST");
    }
    if (u->has_limit)
        appendStringInfo(&tail, " LIMIT " INT64_FORMAT, u->limit);
    reset_transmission_modes(nestlevel);
    List *fdw_exprs = list_concat(list_copy(params), key_exprs);
    PushedScanPlan plan;
    plan.kind = PlanKind::Upper;
    plan.statement.sql = sql.data;
    plan.statement.has_where = has_where;
    plan.statement.nparams = list_length(params);
    plan.statement.key_kinds = key_kinds;
    plan.tail = tail.data;
    plan.offset = u->offset;
    plan.anchor = anchor;
    plan.work = (u->grouped ? kPushedAggregate : 0) | (u->order_exprs != NIL ? kPushedSort : 0);
    return make_foreignscan(tlist, NIL, 0, fdw_exprs, encode(plan), u->tlist, NIL, outer_plan);
}

}  // namespace picoroute::pg::fdw
