// What Picodata can evaluate (plain C style: see plan_private.h; the facts are in the README,
// "Picodata SQL compatibility"): is_foreign_expr, is_outer_value, and the operator allow-list
// that deparse.cpp writes.
//
// Shipped to Picodata, from an explicit list of what it implements with PostgreSQL's meaning:
// columns of the foreign table, constants, parameters, comparisons (= <> < <= > >=; on text the
// ordering ones only under a byte-order collation, as Picodata orders strings by bytes), LIKE,
// ILIKE (byte-order collation), NOT LIKE / NOT ILIKE written NOT (a LIKE b), + - * on numbers,
// / on integers and doubles, % on integers, || on text, COALESCE over one type (arith_ok),
// unary minus on integers and numerics written (0 - x), IN / NOT IN lists (= ANY / <> ALL over a
// constant array or an ARRAY[...] of constants and parameters), IS [NOT] NULL, AND / OR / NOT,
// for the types Picodata knows (integers, double precision, numeric, text, varchar, character,
// name, boolean, uuid, timestamptz; real columns, constants and parameters only as values and in
// comparisons with each other). Everything else (functions, casts, COLLATE, arithmetic on real,
// other types, a non-deterministic collation) is evaluated locally.
//
// character(n) values go without their trailing blanks (a constant written so, a parameter's and
// an inserted value's text trimmed: routed.cpp, modify.cpp), which is how PostgreSQL compares them
// and how picoroute hashes them (key_datum.cpp); LIKE on character(n) stays local (PostgreSQL
// matches the padded value).
//
// A length coercion of a value computed here ($1 assigned to a varchar(n), character(n),
// numeric(p,s) or timestamptz(p) column in a generic plan) is evaluated here and its result sent
// as a parameter (is_local_value): the same value and the same error as PostgreSQL's.
//
// A parameter is only shipped where something fixes its type (a column or constant it is compared
// with or added to): "$1 IS NULL", "$1 = $2", "$1 + $2" and "$1 IN (...)" stay local. The values
// of an outer row (a join clause of a parameterized scan, a lateral reference) are parameters too
// (is_outer_value).
extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/pg_aggregate.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/pg_locale.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

#include "pg/fdw/shippable.h"
#include "pg/key_datum.h"

#include <cstring>
#include <utility>

namespace picoroute::pg::fdw {

// The remote form of a builtin operator (the allow-list).
RemoteOp remote_operator(Oid opno, int nargs) {
    RemoteOp out;
    if (opno >= FirstGenbkiObjectId)
        return out;
    HeapTuple tuple = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
    if (!HeapTupleIsValid(tuple))
        return out;
    const char *name = NameStr(((Form_pg_operator)GETSTRUCT(tuple))->oprname);
    if (nargs == 2) {
        static const char *const compare[] = {"=", "<>"};
        static const char *const order[] = {"<", "<=", ">", ">="};
        // "/" and "%" only on some types, "||" only on text: shippable_opexpr checks them.
        static const char *const arith[] = {"+", "-", "*", "/", "%", "||"};
        for (const char *op : compare)
            if (strcmp(name, op) == 0)
                out = {OpKind::Compare, op};
        for (const char *op : order)
            if (strcmp(name, op) == 0)
                out = {OpKind::Order, op};
        for (const char *op : arith)
            if (strcmp(name, op) == 0)
                out = {OpKind::Arith, op};
        if (strcmp(name, "~~") == 0)
            out = {OpKind::Like, "LIKE"};
        else if (strcmp(name, "!~~") == 0)
            out = {OpKind::NotLike, "LIKE"};
        else if (strcmp(name, "~~*") == 0)
            out = {OpKind::ILike, "ILIKE"};
        else if (strcmp(name, "!~~*") == 0)
            out = {OpKind::NotILike, "ILIKE"};
    } else if (nargs == 1 && strcmp(name, "-") == 0) {
        out = {OpKind::Negate, "-"};
    }
    ReleaseSysCache(tuple);
    return out;
}

namespace {

// A collation under which PostgreSQL compares as Picodata does (bytes).
bool byte_order_collation(Oid collid) {
    return !OidIsValid(collid) || lc_collate_is_c(collid);
}

bool deterministic_collation(Oid collid) {
    return !OidIsValid(collid) || collid == DEFAULT_COLLATION_OID ||
           get_collation_isdeterministic(collid);
}

bool shippable(Node *node, RelOptInfo *rel);

bool shippable_args(List *args, RelOptInfo *rel) {
    ListCell *lc;
    foreach (lc, args)
        if (!shippable(static_cast<Node *>(lfirst(lc)), rel))
            return false;
    return true;
}

// An aggregate Picodata implements with PostgreSQL's meaning (upper-relation pushdown, see
// upper.cpp): count(*), count(x), count(DISTINCT x), sum and avg of numbers, min and max of
// numbers and of text under a byte-order collation; no FILTER, no ORDER BY inside, no other
// DISTINCT. Its result is read back into the local result type.
bool shippable_aggregate(Aggref *agg, RelOptInfo *rel) {
    if (agg->aggfnoid >= FirstGenbkiObjectId || agg->aggkind != AGGKIND_NORMAL ||
        agg->aggsplit != AGGSPLIT_SIMPLE || agg->aggorder != NIL || agg->aggfilter != nullptr ||
        agg->aggvariadic || agg->agglevelsup != 0 || agg->aggdirectargs != NIL)
        return false;
    const char *name = get_func_name(agg->aggfnoid);
    if (name == nullptr)
        return false;
    bool count = strcmp(name, "count") == 0;
    if (agg->aggstar)
        return count && agg->aggdistinct == NIL;
    if (list_length(agg->args) != 1 || (agg->aggdistinct != NIL && !count))
        return false;
    TargetEntry *tle = linitial_node(TargetEntry, agg->args);
    Node *arg = reinterpret_cast<Node *>(tle->expr);
    if (tle->resjunk || !shippable(arg, rel))
        return false;
    Oid type = exprType(arg);
    bool number = is_number_type(type);
    if (count)  // DISTINCT compares for equality: text needs a deterministic collation
        return agg->aggdistinct == NIL || !is_text_type(type) ||
               deterministic_collation(agg->inputcollid);
    if (strcmp(name, "sum") == 0 || strcmp(name, "avg") == 0)
        return number;
    if (strcmp(name, "min") == 0 || strcmp(name, "max") == 0)
        return number || (is_text_type(type) && byte_order_collation(agg->inputcollid));
    return false;
}

// What an expression refers to: columns of the scanned relation, columns of other relations of
// the same query level (values of an outer row), and anything a value computed here cannot hold.
struct Refs {
    Relids relids;  // the scanned relation (a base relation, or the tables of a pushed join)
    bool rel_var = false;
    bool outer_var = false;
    bool unfit = false;
};

bool refs_walker(Node *node, Refs *refs) {
    if (node == nullptr)
        return false;
    if (IsA(node, Var)) {
        Var *var = reinterpret_cast<Var *>(node);
        if (var->varlevelsup != 0)
            refs->unfit = true;
        else if (bms_is_member(var->varno, refs->relids))
            refs->rel_var = true;
        else
            refs->outer_var = true;
        return false;
    }
    if (IsA(node, PlaceHolderVar) || IsA(node, SubPlan) || IsA(node, SubLink) ||
        IsA(node, Aggref) || IsA(node, WindowFunc) || IsA(node, GroupingFunc)) {
        refs->unfit = true;
        return false;
    }
    return expression_tree_walker(
        node, reinterpret_cast<bool (*)()>(reinterpret_cast<void *>(refs_walker)), refs);
}

Refs refs_of(Node *node, Relids relids) {
    Refs refs;
    refs.relids = relids;
    refs_walker(node, &refs);
    return refs;
}

// A parameter, or a value computed here: Picodata gets it as $n, typed by what surrounds it.
bool param_like(Node *node, Index relid) {
    return IsA(node, Param) || is_local_value(node, relid);
}

// real: Picodata has only doubles, which hold what picoroute writes (a real's shortest text);
// two reals compare there as here, a real against a double or in arithmetic does not.
bool real_operands_fit(OpKind kind, Oid left, Oid right) {
    if (left != FLOAT4OID && right != FLOAT4OID)
        return true;
    return left == right && (kind == OpKind::Compare || kind == OpKind::Order);
}

// A column, constant or parameter of a type that is shipped as a value only (real).
bool value_only_type(Oid type) {
    return type == FLOAT4OID;
}

bool is_integer_type(Oid type) {
    return type == INT2OID || type == INT4OID || type == INT8OID;
}

// An arithmetic or concatenation operator whose result Picodata computes as PostgreSQL does (its
// storages evaluate expressions with Tarantool's SQL, src/box/sql/mem.c and util.c of the
// picodata-25.5 branch of Picodata's tarantool fork; the grammar has "+ - * / %" and "||" at every
// release, sql-planner/src/frontend/sql/query.pest:409-415@25.5.10 and :437-443@26.1.6,
// crates/sql-frontend/src/frontend/sql/ast/query.pest:463-469@26.2.1-rc2,
// sql-frontend/src/frontend/sql/ast/query.pest:461-467@26.3.0):
//   + - *  on numbers (as before);
//   /      on integers (both truncate toward zero: sql_div_int, util.c:959) and doubles (IEEE;
//          both refuse a division by zero: mem_div, mem.c:2311), not on numerics (Tarantool's
//          decimal_div keeps up to 38 digits where PostgreSQL chooses a scale);
//   %      on integers (the sign of the dividend, as C and PostgreSQL: sql_rem_int, util.c:998);
//   ||     on text (textcat: NULL when either side is NULL, as mem_concat, mem.c:1989), not the
//          anytextcat forms that turn a number into text. A parameter beside a text operand is
//          typed text there: text || text is the only overload up to 26.2.1-rc1
//          (sql-planner/src/frontend/sql/type_system.rs:459@25.5.10 and @26.1.6), the first of
//          the equally cheap ones from 26.2.1-rc2 (crates/sql-frontend/src/frontend/sql/
//          type_system.rs:408@26.2.1-rc2, all returning text). Its precedence differs from
//          PostgreSQL's up to 26.2.1-rc1 and at the development tag 26.3.0 (with * / %, above + -:
//          sql-planner/src/frontend/sql.rs:2788
//          @26.1.6, expression_parser.rs:118@26.2.1-rc1), as in PostgreSQL from 26.2.1-rc2
//          (below + -, crates/sql-frontend/.../expression_parser.rs:117@26.2.1-rc2): deparse.cpp
//          writes every operator in parentheses, so no version's precedence is relied on.
bool arith_ok(const char *spelling, OpExpr *op) {
    Oid left = exprType(static_cast<Node *>(linitial(op->args)));
    Oid right = exprType(static_cast<Node *>(lsecond(op->args)));
    if (strcmp(spelling, "||") == 0)
        return is_text_type(left) && is_text_type(right) && is_text_type(op->opresulttype);
    if (strcmp(spelling, "%") == 0)
        return is_integer_type(left) && is_integer_type(right);
    if (strcmp(spelling, "/") == 0)
        return (is_integer_type(left) && is_integer_type(right)) ||
               (left == FLOAT8OID && right == FLOAT8OID);
    return is_number_type(left);
}

// COALESCE (a function of Picodata's at every release: sql-planner/src/executor/engine.rs:130
// @25.5.10, :138@26.1.6, crates/sql-executor/src/executor/engine.rs:93@26.2.1-rc2,
// sql-executor/src/executor/engine.rs:93@26.3.0): the first value that is not NULL, over values
// of one type (PostgreSQL adds a cast where they differ, which is evaluated here).
bool shippable_coalesce(CoalesceExpr *c, RelOptInfo *rel) {
    if (!shippable_type(c->coalescetype) || !deterministic_collation(c->coalescecollid))
        return false;
    ListCell *lc;
    foreach (lc, c->args)
        if (exprType(static_cast<Node *>(lfirst(lc))) != c->coalescetype)
            return false;
    // Picodata types a parameter by what surrounds it: one argument must not be a parameter.
    bool typed = false;
    foreach (lc, c->args)
        typed = typed || !param_like(static_cast<Node *>(lfirst(lc)), rel->relid);
    return typed && shippable_args(c->args, rel);
}

// A binary operator (comparison, LIKE, arithmetic) Picodata can type: it needs one operand that
// is not a parameter (a "$1 = $2" or "$1 + $2" leaves both types open).
bool shippable_opexpr(OpExpr *op, RelOptInfo *rel) {
    int nargs = list_length(op->args);
    RemoteOp rop = remote_operator(op->opno, nargs);
    if (rop.kind == OpKind::None)
        return false;
    if (op->opresulttype != BOOLOID && !shippable_type(op->opresulttype))
        return false;
    if (!deterministic_collation(op->inputcollid))
        return false;
    Node *first = static_cast<Node *>(linitial(op->args));
    Oid argtype = exprType(first);
    if (!real_operands_fit(rop.kind, argtype,
                           nargs == 2 ? exprType(static_cast<Node *>(lsecond(op->args))) : argtype))
        return false;
    switch (rop.kind) {
        case OpKind::Order:
            // Picodata orders strings by their bytes.
            if (is_text_type(argtype) && !byte_order_collation(op->inputcollid))
                return false;
            break;
        case OpKind::Like:
        case OpKind::NotLike:
            // PostgreSQL matches a character(n) value with its padding.
            if (argtype == BPCHAROID)
                return false;
            break;
        case OpKind::ILike:
        case OpKind::NotILike:
            if (!byte_order_collation(op->inputcollid) || argtype == BPCHAROID)
                return false;
            break;
        case OpKind::Arith:
            if (!arith_ok(rop.spelling, op))
                return false;
            break;
        case OpKind::Negate:
            // Written (0 - x); -0.0 has no such form, so doubles stay local.
            if (!is_number_type(argtype) || argtype == FLOAT8OID)
                return false;
            break;
        default:
            break;
    }
    if (nargs == 2 && param_like(first, rel->relid) &&
        param_like(static_cast<Node *>(lsecond(op->args)), rel->relid))
        return false;
    return shippable_args(op->args, rel);
}

bool shippable_saop(ScalarArrayOpExpr *sa, RelOptInfo *rel) {
    RemoteOp rop = remote_operator(sa->opno, 2);
    if (rop.kind != OpKind::Compare || strcmp(rop.spelling, sa->useOr ? "=" : "<>") != 0 ||
        !deterministic_collation(sa->inputcollid))
        return false;
    Node *left = static_cast<Node *>(linitial(sa->args));
    if (param_like(left, rel->relid) || !shippable(left, rel))
        return false;
    Node *array = static_cast<Node *>(lsecond(sa->args));
    if (IsA(array, Const)) {
        Const *c = reinterpret_cast<Const *>(array);
        return !c->constisnull && shippable_type(get_element_type(c->consttype));
    }
    if (IsA(array, ArrayExpr)) {
        ArrayExpr *a = reinterpret_cast<ArrayExpr *>(array);
        if (a->multidims || a->elements == NIL)
            return false;
        return shippable_args(a->elements, rel);
    }
    return false;
}

bool shippable(Node *node, RelOptInfo *rel) {
    if (node == nullptr)
        return false;
    if (is_local_value(node, rel->relid))  // computed here: a parameter
        return shippable_type(exprType(node)) || value_only_type(exprType(node));
    switch (nodeTag(node)) {
        case T_Var: {
            Var *var = reinterpret_cast<Var *>(node);
            return bms_is_member(var->varno, rel->relids) && var->varlevelsup == 0 &&
                   var->varattno > 0 &&
                   (shippable_type(var->vartype) || value_only_type(var->vartype));
        }
        case T_Const: {
            Oid type = reinterpret_cast<Const *>(node)->consttype;
            return shippable_type(type) || value_only_type(type);
        }
        case T_Param: {
            Param *p = reinterpret_cast<Param *>(node);
            return (p->paramkind == PARAM_EXTERN || p->paramkind == PARAM_EXEC) &&
                   (shippable_type(p->paramtype) || value_only_type(p->paramtype));
        }
        case T_RelabelType: {
            RelabelType *r = reinterpret_cast<RelabelType *>(node);
            // A relabel that only changes varchar to text; no COLLATE (not in Picodata's grammar).
            return shippable_type(r->resulttype) &&
                   r->resultcollid == exprCollation(reinterpret_cast<Node *>(r->arg)) &&
                   shippable(reinterpret_cast<Node *>(r->arg), rel);
        }
        case T_OpExpr:
            return shippable_opexpr(reinterpret_cast<OpExpr *>(node), rel);
        case T_ScalarArrayOpExpr:
            return shippable_saop(reinterpret_cast<ScalarArrayOpExpr *>(node), rel);
        case T_BoolExpr:
            return shippable_args(reinterpret_cast<BoolExpr *>(node)->args, rel);
        case T_CoalesceExpr:
            return shippable_coalesce(reinterpret_cast<CoalesceExpr *>(node), rel);
        case T_NullTest: {
            // A test of a value alone ($1 IS NOT NULL) is decided here: nothing would type it.
            NullTest *nt = reinterpret_cast<NullTest *>(node);
            Node *arg = reinterpret_cast<Node *>(nt->arg);
            return !nt->argisrow && refs_of(arg, rel->relids).rel_var && shippable(arg, rel);
        }
        case T_Aggref:
            return shippable_aggregate(reinterpret_cast<Aggref *>(node), rel);
        default:
            return false;
    }
}

}  // namespace

bool is_foreign_expr(PlannerInfo *, RelOptInfo *rel, Expr *expr) {
    return shippable(reinterpret_cast<Node *>(expr), rel);
}

bool is_local_coercion(Node *node) {
    if (node == nullptr || !exprIsLengthCoercion(node, nullptr))
        return false;
    Refs refs = refs_of(node, nullptr);
    return !refs.rel_var && !refs.outer_var && !refs.unfit && !contain_volatile_functions(node);
}

bool is_local_value(Node *node, Index relid) {
    return is_local_coercion(node) || is_outer_value(node, relid);
}

bool is_outer_value(Node *node, Index relid) {
    if (relid == 0)  // a pushed join: no parameterized paths, no values of an outer row
        return false;
    Refs refs = refs_of(node, bms_make_singleton(static_cast<int>(relid)));
    return refs.outer_var && !refs.rel_var && !refs.unfit && !contain_volatile_functions(node);
}

}  // namespace picoroute::pg::fdw
