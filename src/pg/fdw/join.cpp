// Join pushdown of the picoroute FDW: a join of two foreign tables of one server runs in Picodata
// as one statement when Picodata can run it without moving a table between instances (plain C
// style at plan time: see plan_private.h).
//
// Pushed: an INNER or LEFT join of two tables of the same server (so the same tier and user
// mapping) where
//   - both are sharded and the join equates their whole sharding keys, column by column in
//     hashing order, with columns of the same type (and typmod): matching rows live in the same
//     bucket, so every storage joins its own rows (a co-located join); or
//   - one of them is a global table (every instance holds all of it): for a LEFT join the global
//     table must be the inner (nullable) side, since a global table left-joined to a sharded one
//     would need the sharded rows gathered in one place;
// and every WHERE clause of both tables, every join clause and every column of the result can be
// evaluated by Picodata (shippable() in deparse.cpp). A table scattered to the masters is not
// pushed. The statement is
//   SELECT "r1"."a", "r2"."b" FROM "t1" AS "r1" [LEFT] JOIN "t2" AS "r2" ON ... [WHERE ...]
// (every name quoted, each table aliased "r<range table index>"); for a co-located join the key
// equalities come first in ON, so Picodata sees them even when PostgreSQL derived them. It goes to
// the owner of the bucket when the WHERE clause fixes a routing table's whole sharding key to one
// value (then both keys of a co-located join hold that value), with "r<n>"."bucket_id" = $n; else
// to one coordinator. upper.cpp's executor runs it, and upper.cpp pushes aggregates, ORDER BY and
// LIMIT over it as over one table.
extern "C" {
#include "postgres.h"

#include "foreign/fdwapi.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/planmain.h"
#include "optimizer/tlist.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/typcache.h"
}

#include "pg/fdw/deparse.h"
#include "pg/fdw/dialect.h"
#include "pg/fdw/join.h"
#include "pg/fdw/keys.h"
#include "pg/fdw/options.h"
#include "pg/fdw/plan_private.h"
#include "pg/fdw/scan.h"
#include "pg/fdw/shippable.h"

#include <cstring>
#include <utility>

namespace picoroute::pg::fdw {

namespace {

// Planner-side state of a join pushed to Picodata (joinrel->fdw_private).
struct JoinInfo {
    RelOptInfo *outer;
    RelOptInfo *inner;
    Relids relids;       // both tables
    JoinType type;       // JOIN_INNER or JOIN_LEFT
    List *key_pairs;     // co-located: per key column, the list (outer Var, inner Var)
    List *key_clauses;   // join clauses that only say what key_pairs says (not written twice)
    List *on_conds;      // other RestrictInfos of ON
    List *where_conds;   // RestrictInfos applied after a LEFT join (WHERE)
    RelOptInfo *anchor;  // the table whose sharding key routes the statement
    List *tlist;         // TargetEntries: the remote select list, also fdw_scan_tlist
};

// Per-row transfer cost, as the scan estimates it (get_foreign_paths in scan.cpp).
constexpr double kRowTransfer = 10;

RelInfo *rel_info(RelOptInfo *rel) {
    return static_cast<RelInfo *>(rel->fdw_private);
}

TableInfo *table_of(RelOptInfo *rel) {
    return rel_info(rel)->table;
}

// A foreign table read as it is: every WHERE clause goes to Picodata, and one coordinator
// answers for the whole table.
bool side_is_pushable(RelOptInfo *rel) {
    if (rel->reloptkind != RELOPT_BASEREL || rel->fdw_private == nullptr)
        return false;
    RelInfo *info = rel_info(rel);
    if (info->local_conds != NIL || static_cast<Scatter>(info->table->scatter) == Scatter::Masters)
        return false;
    ListCell *lc;
    foreach (lc, rel->baserestrictinfo)
        if (lfirst_node(RestrictInfo, lc)->pseudoconstant)
            return false;
    return true;
}

bool is_column(Node *node, Var *column) {
    while (node != nullptr && IsA(node, RelabelType))
        node = reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(node)->arg);
    if (node == nullptr || !IsA(node, Var))
        return false;
    Var *var = reinterpret_cast<Var *>(node);
    return var->varno == column->varno && var->varattno == column->varattno &&
           var->varlevelsup == 0;
}

Var *key_var(RelOptInfo *rel, int k) {
    TableInfo *table = table_of(rel);
    Oid type, collation;
    int32 typmod;
    get_atttypetypmodcoll(table->relid, table->key_attnums[k], &type, &typmod, &collation);
    return makeVar(rel->relid, table->key_attnums[k], type, typmod, collation, 0);
}

// The join clause `ri` is "a = b" with the type's own equality.
bool equates(RestrictInfo *ri, Var *a, Var *b) {
    if (!IsA(ri->clause, OpExpr))
        return false;
    OpExpr *op = reinterpret_cast<OpExpr *>(ri->clause);
    if (list_length(op->args) != 2 ||
        op->opno != lookup_type_cache(a->vartype, TYPECACHE_EQ_OPR)->eq_opr)
        return false;
    Node *l = static_cast<Node *>(linitial(op->args));
    Node *r = static_cast<Node *>(lsecond(op->args));
    return (is_column(l, a) && is_column(r, b)) || (is_column(l, b) && is_column(r, a));
}

// Both columns are members of one equivalence class: an inner join's clauses (or a constant both
// are equal to) make them equal in every joined row.
bool same_class(PlannerInfo *root, Var *a, Var *b) {
    ListCell *lc;
    foreach (lc, root->eq_classes) {
        EquivalenceClass *ec = static_cast<EquivalenceClass *>(lfirst(lc));
        if (ec->ec_has_volatile)
            continue;
        bool has_a = false, has_b = false;
        ListCell *mc;
        foreach (mc, ec->ec_members) {
            Node *expr =
                reinterpret_cast<Node *>(static_cast<EquivalenceMember *>(lfirst(mc))->em_expr);
            has_a = has_a || is_column(expr, a);
            has_b = has_b || is_column(expr, b);
        }
        if (has_a && has_b)
            return true;
    }
    return false;
}

bool deterministic(Oid collation) {
    return !OidIsValid(collation) || get_collation_isdeterministic(collation);
}

// Co-located: the join equates the two whole sharding keys, column by column, same types.
bool colocated(PlannerInfo *root, JoinInfo *j, List *restrictlist) {
    TableInfo *o = table_of(j->outer), *i = table_of(j->inner);
    if (o->nkeys == 0 || o->nkeys != i->nkeys || strcmp(o->tier, i->tier) != 0)
        return false;
    for (int k = 0; k < o->nkeys; k++) {
        Var *a = key_var(j->outer, k), *b = key_var(j->inner, k);
        if (a->vartype != b->vartype || a->vartypmod != b->vartypmod ||
            !deterministic(a->varcollid) || !deterministic(b->varcollid))
            return false;
        bool found = j->type == JOIN_INNER && same_class(root, a, b);
        ListCell *lc;
        foreach (lc, restrictlist) {
            RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
            bool on = j->type == JOIN_INNER || !RINFO_IS_PUSHED_DOWN(ri, j->relids);
            if (on && equates(ri, a, b)) {
                j->key_clauses = lappend(j->key_clauses, ri);
                found = true;
            }
        }
        if (!found)
            return false;
        j->key_pairs = lappend(j->key_pairs, list_make2(a, b));
    }
    return true;
}

// Picodata runs the join where the rows are: co-located, or with a global table (the inner side
// of a LEFT join).
bool runs_in_place(PlannerInfo *root, JoinInfo *j, List *restrictlist) {
    bool outer_global = table_of(j->outer)->global, inner_global = table_of(j->inner)->global;
    if (inner_global || (outer_global && j->type == JOIN_INNER))
        return true;
    return !outer_global && colocated(root, j, restrictlist);
}

// Sorts the join clauses into ON and WHERE; false when one cannot be sent.
bool place_clauses(PlannerInfo *root, RelOptInfo *joinrel, JoinInfo *j, List *restrictlist) {
    ListCell *lc;
    foreach (lc, restrictlist) {
        RestrictInfo *ri = lfirst_node(RestrictInfo, lc);
        if (ri->pseudoconstant || !is_foreign_expr(root, joinrel, ri->clause))
            return false;
        if (list_member_ptr(j->key_clauses, ri))
            continue;
        if (j->type == JOIN_LEFT && RINFO_IS_PUSHED_DOWN(ri, j->relids))
            j->where_conds = lappend(j->where_conds, ri);
        else
            j->on_conds = lappend(j->on_conds, ri);
    }
    return true;
}

// The columns the join returns, as the remote select list; false when one cannot be fetched (a
// placeholder, a whole row, a system column, a type Picodata does not have).
bool join_tlist(PlannerInfo *root, RelOptInfo *joinrel, JoinInfo *j) {
    List *vars = pull_var_clause(reinterpret_cast<Node *>(joinrel->reltarget->exprs),
                                 PVC_INCLUDE_PLACEHOLDERS);
    ListCell *lc;
    foreach (lc, vars)
        if (!IsA(lfirst(lc), Var) ||
            !is_foreign_expr(root, joinrel, static_cast<Expr *>(lfirst(lc))))
            return false;
    // Nothing needed (count(*) over the join): fetch a key column anyway, and ignore it.
    if (vars == NIL) {
        TableInfo *t = table_of(j->anchor);
        AttrNumber attnum = t->nkeys > 0 ? t->key_attnums[0] : 1;
        Oid type, collation;
        int32 typmod;
        get_atttypetypmodcoll(t->relid, attnum, &type, &typmod, &collation);
        Var *var = makeVar(j->anchor->relid, attnum, type, typmod, collation, 0);
        if (!is_foreign_expr(root, joinrel, reinterpret_cast<Expr *>(var)))
            return false;
        vars = list_make1(var);
    }
    j->tlist = add_to_flat_tlist(NIL, vars);
    return true;
}

// The one sharding-key value the WHERE clauses of `rel` fix, if any (key kinds, NIL otherwise).
List *single_key(RelOptInfo *rel, List **key_exprs) {
    *key_exprs = NIL;
    if (table_of(rel)->global)
        return NIL;
    List *kinds =
        analyze_key_clauses(table_of(rel), rel->relid, rel_info(rel)->remote_conds, key_exprs);
    ListCell *lc;
    foreach (lc, kinds)
        if (lfirst_int(lc) == KEY_ARRAY)
            return NIL;  // a list of keys: one coordinator joins them all
    return kinds;
}

// The table that routes the statement: a sharded one whose key is fixed, else a sharded one (to
// a coordinator), else the outer global table. A LEFT join routes by its outer table only (the
// inner one's conditions are in ON and do not restrict the result).
RelOptInfo *pick_anchor(JoinInfo *j) {
    List *exprs = NIL;
    if (j->type == JOIN_INNER && !table_of(j->inner)->global &&
        single_key(j->inner, &exprs) != NIL &&
        (table_of(j->outer)->global || single_key(j->outer, &exprs) == NIL))
        return j->inner;
    if (j->type == JOIN_INNER && table_of(j->outer)->global && !table_of(j->inner)->global)
        return j->inner;
    return j->outer;
}

// Writes `cond` (a RestrictInfo or an expression) after " AND " unless it is the first.
void append_cond(StringInfo buf, PlannerInfo *root, Node *cond, bool *first, List **params) {
    if (IsA(cond, RestrictInfo))
        cond = reinterpret_cast<Node *>(reinterpret_cast<RestrictInfo *>(cond)->clause);
    if (!*first)
        appendStringInfoString(buf, " AND ");
    *first = false;
    deparse_join_expr(buf, root, cond, params);
}

void append_conds(StringInfo buf, PlannerInfo *root, List *conds, bool *first, List **params) {
    ListCell *lc;
    foreach (lc, conds)
        append_cond(buf, root, static_cast<Node *>(lfirst(lc)), first, params);
}

// FROM ... JOIN ... ON ... [WHERE ...]; true when a WHERE clause was written.
bool deparse_from_where(StringInfo buf, PlannerInfo *root, JoinInfo *j, List **params) {
    appendStringInfo(buf, " FROM %s AS \"r%u\" %s %s AS \"r%u\" ON ",
                     quote_remote_identifier(table_of(j->outer)->remote_table), j->outer->relid,
                     j->type == JOIN_LEFT ? "LEFT JOIN" : "JOIN",
                     quote_remote_identifier(table_of(j->inner)->remote_table), j->inner->relid);
    bool first = true;
    ListCell *lc;
    foreach (lc, j->key_pairs) {
        // The key equalities, written even when PostgreSQL derived them from constants: they
        // tell Picodata that the join is co-located.
        List *pair = static_cast<List *>(lfirst(lc));
        appendStringInfoString(buf, first ? "(" : " AND (");
        first = false;
        deparse_join_expr(buf, root, static_cast<Node *>(linitial(pair)), params);
        appendStringInfoString(buf, " = ");
        deparse_join_expr(buf, root, static_cast<Node *>(lsecond(pair)), params);
        appendStringInfoChar(buf, ')');
    }
    append_conds(buf, root, j->on_conds, &first, params);
    // The inner table's own conditions: in ON for a LEFT join (they do not remove outer rows).
    if (j->type == JOIN_LEFT)
        append_conds(buf, root, rel_info(j->inner)->remote_conds, &first, params);
    if (first)
        appendStringInfoString(buf, "true");
    StringInfoData where;
    initStringInfo(&where);
    bool none = true;
    append_conds(&where, root, rel_info(j->outer)->remote_conds, &none, params);
    if (j->type == JOIN_INNER)
        append_conds(&where, root, rel_info(j->inner)->remote_conds, &none, params);
    append_conds(&where, root, j->where_conds, &none, params);
    if (!none)
        appendStringInfo(buf, " WHERE %s", where.data);
    return !none;
}

}  // namespace

void get_foreign_join_paths(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
                            RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra) {
    if (joinrel->fdw_private != nullptr || !bms_is_empty(joinrel->lateral_relids))
        return;
    // Row locks and modifications re-check joined rows locally (EvalPlanQual): not pushed.
    if (root->parse->commandType != CMD_SELECT || root->rowMarks != NIL)
        return;
    if (jointype == JOIN_RIGHT) {
        std::swap(outerrel, innerrel);
        jointype = JOIN_LEFT;
    }
    if ((jointype != JOIN_INNER && jointype != JOIN_LEFT) || !side_is_pushable(outerrel) ||
        !side_is_pushable(innerrel))
        return;
    JoinInfo *j = static_cast<JoinInfo *>(palloc0(sizeof(JoinInfo)));
    j->outer = outerrel;
    j->inner = innerrel;
    j->relids = joinrel->relids;
    j->type = jointype;
    if (!runs_in_place(root, j, extra->restrictlist) ||
        !place_clauses(root, joinrel, j, extra->restrictlist))
        return;
    j->anchor = pick_anchor(j);
    if (!join_tlist(root, joinrel, j))
        return;
    // Picodata joins where the rows are and only the joined rows travel. A join on a sharding
    // key (by default the primary key) or with a small global table matches a row at most once
    // or a few times; without statistics the planner's estimate of such a join is several times
    // too high, so the rows that travel are counted as at most both tables'.
    double inputs = outerrel->rows + innerrel->rows;
    double fetched = Min(joinrel->rows, inputs);
    Cost startup = 10;
    Cost total = startup + inputs * cpu_operator_cost + fetched * cpu_tuple_cost * kRowTransfer;
    joinrel->fdw_private = j;
    add_path(joinrel, reinterpret_cast<Path *>(
                          create_foreign_join_path(root, joinrel, nullptr, joinrel->rows, startup,
                                                   total, NIL, nullptr, nullptr, NIL)));
}

ForeignScan *join_plan(PlannerInfo *root, RelOptInfo *rel, List *tlist, Plan *outer_plan) {
    JoinInfo *j = static_cast<JoinInfo *>(rel->fdw_private);
    List *params = NIL;
    StringInfoData sql;
    initStringInfo(&sql);
    int nestlevel = set_transmission_modes();
    appendStringInfoString(&sql, "SELECT ");
    ListCell *lc;
    foreach (lc, j->tlist) {
        if (lc != list_head(j->tlist))
            appendStringInfoString(&sql, ", ");
        deparse_join_expr(&sql, root, reinterpret_cast<Node *>(lfirst_node(TargetEntry, lc)->expr),
                          &params);
    }
    bool has_where = deparse_from_where(&sql, root, j, &params);
    reset_transmission_modes(nestlevel);
    // To the owner when the routing table's key is fixed to one value (see pick_anchor).
    List *key_exprs = NIL;
    Index anchor = 0;
    List *key_kinds = join_routing(rel, &key_exprs, &anchor);
    List *fdw_exprs = list_concat(list_copy(params), key_exprs);
    PushedScanPlan plan;
    plan.kind = PlanKind::Join;
    plan.statement.sql = sql.data;
    plan.statement.has_where = has_where;
    plan.statement.nparams = list_length(params);
    plan.statement.key_kinds = key_kinds;
    plan.tail = pstrdup("");
    plan.anchor = anchor;
    plan.work = kPushedJoin;
    return make_foreignscan(tlist, NIL, 0, fdw_exprs, encode(plan), j->tlist, NIL, outer_plan);
}

bool upper_over_join_ok(RelOptInfo *rel) {
    if (!IS_JOIN_REL(rel) || rel->fdw_private == nullptr)
        return false;
    JoinInfo *j = static_cast<JoinInfo *>(rel->fdw_private);
    return table_of(j->outer)->push_upper && table_of(j->inner)->push_upper;
}

bool deparse_join_from(StringInfo buf, PlannerInfo *root, RelOptInfo *joinrel, List **params) {
    return deparse_from_where(buf, root, static_cast<JoinInfo *>(joinrel->fdw_private), params);
}

List *join_routing(RelOptInfo *joinrel, List **key_exprs, Index *anchor) {
    JoinInfo *j = static_cast<JoinInfo *>(joinrel->fdw_private);
    *anchor = j->anchor->relid;
    return single_key(j->anchor, key_exprs);
}

}  // namespace picoroute::pg::fdw
