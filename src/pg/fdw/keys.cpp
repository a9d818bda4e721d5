// Key analysis: which clauses fix every sharding-key column of a table (at plan time, for scans,
// parameterized paths, joins, upper relations and direct modifications), and the key values they
// give at execution time (constants, parameters, values of an outer row), ready to be hashed.
extern "C" {
#include "postgres.h"

#include "access/transam.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
}

#include "pg/fdw/dialect.h"
#include "pg/fdw/keys.h"
#include "pg/fdw/options.h"
#include "pg/fdw/shippable.h"

#include <algorithm>
#include <cstring>

namespace picoroute::pg::fdw {

bool is_key_var(Node *node, Index relid, AttrNumber attnum) {
    node = strip_relabel(node);
    if (node == nullptr || !IsA(node, Var))
        return false;
    Var *var = reinterpret_cast<Var *>(node);
    return static_cast<Index>(var->varno) == relid && var->varlevelsup == 0 &&
           var->varattno == attnum;
}

namespace {

// A constant, a parameter, or a value of the outer row (a join clause of a parameterized scan).
bool is_value(Node *node, Index relid) {
    node = strip_relabel(node);
    return node != nullptr && (IsA(node, Const) || IsA(node, Param) || is_local_value(node, relid));
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
    if (IsA(array, Const) || IsA(array, Param) || is_local_value(array, relid))
        return true;
    if (!IsA(array, ArrayExpr) || reinterpret_cast<ArrayExpr *>(array)->multidims)
        return false;
    ListCell *lc;
    foreach (lc, reinterpret_cast<ArrayExpr *>(array)->elements)
        if (!is_value(static_cast<Node *>(lfirst(lc)), relid))
            return false;
    return true;
}

constexpr double kChainCap = 2147483647.0;

// The elements of an IN list's array when they are known at plan time, else 1.
double array_elements(Node *array) {
    array = strip_relabel(array);
    if (array != nullptr && IsA(array, Const) && !reinterpret_cast<Const *>(array)->constisnull) {
        ArrayType *a = DatumGetArrayTypeP(reinterpret_cast<Const *>(array)->constvalue);
        return std::max(1, ArrayGetNItems(ARR_NDIM(a), ARR_DIMS(a)));
    }
    if (array != nullptr && IsA(array, ArrayExpr))
        return std::max(1, list_length(reinterpret_cast<ArrayExpr *>(array)->elements));
    return 1;
}

// The chains of `node`, or of NOT `node` when `negated` (De Morgan: an OR under NOT is an AND).
double dnf_chains_of(Node *node, bool negated) {
    node = strip_relabel(node);
    if (node == nullptr)
        return 1;
    if (IsA(node, BoolExpr)) {
        BoolExpr *b = reinterpret_cast<BoolExpr *>(node);
        if (b->boolop == NOT_EXPR)
            return dnf_chains_of(static_cast<Node *>(linitial(b->args)), !negated);
        bool ored = (b->boolop == OR_EXPR) != negated;
        double n = ored ? 0 : 1;
        ListCell *lc;
        foreach (lc, b->args) {
            double c = dnf_chains_of(static_cast<Node *>(lfirst(lc)), negated);
            n = ored ? n + c : n * c;
        }
        return std::min(n, kChainCap);
    }
    if (IsA(node, ScalarArrayOpExpr)) {
        ScalarArrayOpExpr *sa = reinterpret_cast<ScalarArrayOpExpr *>(node);
        // x IN (a, b) is a OR of equalities; NOT IN, an AND of inequalities (and the reverse
        // under NOT).
        if (sa->useOr != negated)
            return array_elements(static_cast<Node *>(lsecond(sa->args)));
    }
    return 1;
}

}  // namespace

int where_dnf_chains(List *exprs) {
    double n = 1;
    ListCell *lc;
    foreach (lc, exprs)
        n = std::min(n * dnf_chains_of(static_cast<Node *>(lfirst(lc)), false), kChainCap);
    return static_cast<int>(n);
}

Node *strip_relabel(Node *node) {
    while (node != nullptr && IsA(node, RelabelType))
        node = reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(node)->arg);
    return node;
}

namespace {

// The value `cond` (column = value) gives key column `attnum`, or nullptr.
Node *equality_value(Node *cond, Index relid, AttrNumber attnum, HashClass column_class) {
    if (!IsA(cond, OpExpr))
        return nullptr;
    OpExpr *op = reinterpret_cast<OpExpr *>(cond);
    if (list_length(op->args) != 2 || !is_equality(op->opno))
        return nullptr;
    Node *l = static_cast<Node *>(linitial(op->args));
    Node *r = static_cast<Node *>(lsecond(op->args));
    Node *value = nullptr;
    if (is_key_var(l, relid, attnum) && is_value(r, relid))
        value = r;
    else if (is_key_var(r, relid, attnum) && is_value(l, relid))
        value = l;
    if (value == nullptr || hash_class(exprType(strip_relabel(value))) != column_class)
        return nullptr;
    return strip_relabel(value);
}

// Appends to *values the values of `cond` when it is an OR of equalities of key column `attnum`
// (nested ORs included); false when an arm is anything else.
bool or_values(Node *cond, Index relid, AttrNumber attnum, HashClass column_class, List **values) {
    if (IsA(cond, BoolExpr) && reinterpret_cast<BoolExpr *>(cond)->boolop == OR_EXPR) {
        ListCell *lc;
        foreach (lc, reinterpret_cast<BoolExpr *>(cond)->args)
            if (!or_values(static_cast<Node *>(lfirst(lc)), relid, attnum, column_class, values))
                return false;
        return true;
    }
    Node *value = equality_value(cond, relid, attnum, column_class);
    if (value == nullptr)
        return false;
    *values = lappend(*values, value);
    return true;
}

// `k = a OR k = b` as the key list k IN (a, b) (an ARRAY[a, b] of the values' common type), so
// that it routes like the IN list it means; nullptr when it is not one.
Node *or_as_key_array(Node *cond, Index relid, AttrNumber attnum, HashClass column_class) {
    if (!IsA(cond, BoolExpr) || reinterpret_cast<BoolExpr *>(cond)->boolop != OR_EXPR)
        return nullptr;
    List *values = NIL;
    if (!or_values(cond, relid, attnum, column_class, &values))
        return nullptr;
    Oid type = exprType(static_cast<Node *>(linitial(values)));
    ListCell *lc;
    foreach (lc, values)
        if (exprType(static_cast<Node *>(lfirst(lc))) != type)
            return nullptr;  // 1 OR 10000000000: an integer and a bigint
    Oid array_type = get_array_type(type);
    if (!OidIsValid(array_type))
        return nullptr;
    ArrayExpr *array = makeNode(ArrayExpr);
    array->array_typeid = array_type;
    array->array_collid = exprCollation(static_cast<Node *>(linitial(values)));
    array->element_typeid = type;
    array->elements = values;
    array->multidims = false;
    array->location = -1;
    return reinterpret_cast<Node *>(array);
}

// The KeyKind `cond` gives key column `attnum` (0: none) and its value expression.
int key_kind_of(Node *cond, Index relid, AttrNumber attnum, HashClass column_class, Node **expr) {
    *expr = equality_value(cond, relid, attnum, column_class);
    if (*expr != nullptr)
        return KEY_SCALAR;
    *expr = or_as_key_array(cond, relid, attnum, column_class);
    if (*expr != nullptr)
        return KEY_ARRAY;
    if (IsA(cond, ScalarArrayOpExpr)) {
        ScalarArrayOpExpr *sa = reinterpret_cast<ScalarArrayOpExpr *>(cond);
        if (!sa->useOr || !is_equality(sa->opno))
            return 0;
        Node *array = static_cast<Node *>(lsecond(sa->args));
        if (!is_key_var(static_cast<Node *>(linitial(sa->args)), relid, attnum) ||
            !array_of_values(array, relid) || hash_class(array_element_type(array)) != column_class)
            return 0;
        *expr = array;
        return KEY_ARRAY;
    }
    if (IsA(cond, NullTest)) {
        NullTest *nt = reinterpret_cast<NullTest *>(cond);
        if (nt->nulltesttype == IS_NULL &&
            is_key_var(reinterpret_cast<Node *>(nt->arg), relid, attnum))
            return KEY_NULL;
    }
    return 0;
}

}  // namespace

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
        int kind = 0;
        ListCell *lc;
        foreach (lc, conds) {
            Node *cond = static_cast<Node *>(lfirst(lc));
            if (IsA(cond, RestrictInfo))
                cond = reinterpret_cast<Node *>(reinterpret_cast<RestrictInfo *>(cond)->clause);
            Node *expr = nullptr;
            kind = key_kind_of(cond, relid, attnum, column_class, &expr);
            if (kind == 0)
                continue;
            kinds = lappend_int(kinds, kind);
            if (expr != nullptr)
                exprs = lappend(exprs, expr);
            break;
        }
        if (kind == 0)
            return NIL;
    }
    *key_exprs = exprs;
    return kinds;
}

// Evaluates the key expressions (plain: may ereport).
KeyValues *evaluate_keys(const RoutedKeys &routed, List *key_kinds, ExprContext *econtext) {
    if (key_kinds == NIL)
        return nullptr;
    int nkeys = list_length(key_kinds);
    KeyValues *keys = static_cast<KeyValues *>(palloc0(sizeof(KeyValues) * nkeys));
    ListCell *expr_cell = list_head(routed.states);
    for (int i = 0; i < nkeys; i++) {
        int kind = list_nth_int(key_kinds, i);
        KeyValues *k = &keys[i];
        if (kind == KEY_NULL) {
            k->n = 1;
            k->values = static_cast<Datum *>(palloc0(sizeof(Datum)));
            k->nulls = static_cast<bool *>(palloc(sizeof(bool)));
            k->nulls[0] = true;
            k->type = routed.types[i];
            continue;
        }
        ExprState *es = static_cast<ExprState *>(lfirst(expr_cell));
        expr_cell = lnext(routed.states, expr_cell);
        bool isnull = false;
        Datum value = ExecEvalExpr(es, econtext, &isnull);
        Oid type = exprType(strip_relabel(reinterpret_cast<Node *>(es->expr)));
        // Hashed as the column stores it: a numeric with the column's scale (1 -> 1.00).
        int32 typmod = routed.typmods[i];
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

bool batchable_type(Oid type) {
    switch (type) {
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case TEXTOID:
        case VARCHAROID:
        case UUIDOID:
            return true;
        default:
            return false;
    }
}

}  // namespace picoroute::pg::fdw
