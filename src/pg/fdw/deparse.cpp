// Building the remote SQL text of the picoroute FDW (plain C style: see fdw_internal.h).
//
// Shipped to Picodata: columns of the foreign table, constants, parameters, comparisons
// (= <> < <= > >=), LIKE / NOT LIKE, + - *, IN / NOT IN lists (= ANY / <> ALL over a constant array
// or an ARRAY[...] of constants and parameters), IS [NOT] NULL, AND / OR / NOT, for the types
// Picodata knows (integers, double precision, numeric, text, varchar, boolean, uuid, timestamptz).
// Integers, finite numbers, booleans and strings are written as literals; other constants and all
// parameters are sent as text parameters ($n) and typed by the server from their context.
extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "access/sysattr.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

#include "pg/fdw/fdw_internal.h"

#include <cstring>

namespace picoroute::pg::fdw {

namespace {

bool shippable_type(Oid type) {
    switch (type) {
        case BOOLOID:
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case FLOAT4OID:
        case FLOAT8OID:
        case NUMERICOID:
        case TEXTOID:
        case VARCHAROID:
        case UUIDOID:
        case TIMESTAMPTZOID:
            return true;
        default:
            return false;
    }
}

// The remote spelling of a builtin operator, or nullptr when it is not shipped.
const char *remote_operator(Oid opno, int nargs) {
    if (opno >= FirstGenbkiObjectId)
        return nullptr;
    HeapTuple tuple = SearchSysCache1(OPEROID, ObjectIdGetDatum(opno));
    if (!HeapTupleIsValid(tuple))
        return nullptr;
    const char *name = NameStr(((Form_pg_operator)GETSTRUCT(tuple))->oprname);
    const char *out = nullptr;
    if (nargs == 2) {
        static const char *const binary[] = {"=", "<>", "<", "<=", ">", ">=", "+", "-", "*"};
        for (const char *op : binary)
            if (strcmp(name, op) == 0)
                out = op;
        if (strcmp(name, "~~") == 0)
            out = "LIKE";
        else if (strcmp(name, "!~~") == 0)
            out = "NOT LIKE";
    } else if (nargs == 1 && strcmp(name, "-") == 0) {
        out = "-";
    }
    ReleaseSysCache(tuple);
    return out;
}

bool shippable(Node *node, RelOptInfo *rel) {
    if (node == nullptr)
        return false;
    switch (nodeTag(node)) {
        case T_Var: {
            Var *var = reinterpret_cast<Var *>(node);
            return static_cast<Index>(var->varno) == rel->relid && var->varlevelsup == 0 &&
                   var->varattno > 0 && shippable_type(var->vartype);
        }
        case T_Const:
            return shippable_type(reinterpret_cast<Const *>(node)->consttype);
        case T_Param: {
            Param *p = reinterpret_cast<Param *>(node);
            return (p->paramkind == PARAM_EXTERN || p->paramkind == PARAM_EXEC) &&
                   shippable_type(p->paramtype);
        }
        case T_RelabelType:
            return shippable(reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(node)->arg),
                             rel);
        case T_OpExpr: {
            OpExpr *op = reinterpret_cast<OpExpr *>(node);
            int nargs = list_length(op->args);
            if (remote_operator(op->opno, nargs) == nullptr)
                return false;
            if (op->opresulttype != BOOLOID && !shippable_type(op->opresulttype))
                return false;
            ListCell *lc;
            foreach (lc, op->args)
                if (!shippable(static_cast<Node *>(lfirst(lc)), rel))
                    return false;
            return true;
        }
        case T_ScalarArrayOpExpr: {
            ScalarArrayOpExpr *sa = reinterpret_cast<ScalarArrayOpExpr *>(node);
            const char *op = remote_operator(sa->opno, 2);
            if (op == nullptr || (sa->useOr ? strcmp(op, "=") : strcmp(op, "<>")) != 0)
                return false;
            if (!shippable(static_cast<Node *>(linitial(sa->args)), rel))
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
                ListCell *lc;
                foreach (lc, a->elements)
                    if (!shippable(static_cast<Node *>(lfirst(lc)), rel))
                        return false;
                return true;
            }
            return false;
        }
        case T_BoolExpr: {
            ListCell *lc;
            foreach (lc, reinterpret_cast<BoolExpr *>(node)->args)
                if (!shippable(static_cast<Node *>(lfirst(lc)), rel))
                    return false;
            return true;
        }
        case T_NullTest: {
            NullTest *nt = reinterpret_cast<NullTest *>(node);
            return !nt->argisrow && shippable(reinterpret_cast<Node *>(nt->arg), rel);
        }
        default:
            return false;
    }
}

struct Context {
    StringInfo buf;
    Oid relid;
    List **params;
};

void deparse_node(Node *node, Context *cx);

void add_param(Node *expr, Context *cx) {
    int index = 1;
    ListCell *lc;
    foreach (lc, *cx->params) {
        if (equal(lfirst(lc), expr)) {
            appendStringInfo(cx->buf, "$%d", index);
            return;
        }
        index++;
    }
    *cx->params = lappend(*cx->params, expr);
    appendStringInfo(cx->buf, "$%d", list_length(*cx->params));
}

void append_string_literal(StringInfo buf, const char *value) {
    appendStringInfoChar(buf, '\'');
    for (const char *p = value; *p; p++) {
        if (*p == '\'')
            appendStringInfoChar(buf, '\'');
        appendStringInfoChar(buf, *p);
    }
    appendStringInfoChar(buf, '\'');
}

void deparse_const(Const *c, Context *cx) {
    if (c->constisnull) {
        appendStringInfoString(cx->buf, "NULL");
        return;
    }
    Oid out;
    bool varlena;
    getTypeOutputInfo(c->consttype, &out, &varlena);
    switch (c->consttype) {
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case NUMERICOID:
        case FLOAT4OID:
        case FLOAT8OID: {
            char *text = OidOutputFunctionCall(out, c->constvalue);
            if (strspn(text, "-+0123456789.eE") != strlen(text)) {
                add_param(reinterpret_cast<Node *>(c), cx);  // NaN, Infinity
            } else if (text[0] == '-') {
                appendStringInfo(cx->buf, "(%s)", text);
            } else {
                appendStringInfoString(cx->buf, text);
            }
            return;
        }
        case BOOLOID:
            appendStringInfoString(cx->buf, DatumGetBool(c->constvalue) ? "true" : "false");
            return;
        case TEXTOID:
        case VARCHAROID:
            append_string_literal(cx->buf, OidOutputFunctionCall(out, c->constvalue));
            return;
        default:
            add_param(reinterpret_cast<Node *>(c), cx);
            return;
    }
}

void deparse_list(List *items, const char *separator, Context *cx) {
    bool first = true;
    ListCell *lc;
    foreach (lc, items) {
        if (!first)
            appendStringInfoString(cx->buf, separator);
        first = false;
        deparse_node(static_cast<Node *>(lfirst(lc)), cx);
    }
}

void deparse_array_elements(Node *array, Context *cx) {
    if (IsA(array, ArrayExpr)) {
        deparse_list(reinterpret_cast<ArrayExpr *>(array)->elements, ", ", cx);
        return;
    }
    Const *c = reinterpret_cast<Const *>(array);
    ArrayType *arr = DatumGetArrayTypeP(c->constvalue);
    Oid elemtype = ARR_ELEMTYPE(arr);
    int16 typlen;
    bool typbyval;
    char typalign;
    get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
    Datum *values;
    bool *nulls;
    int n;
    deconstruct_array(arr, elemtype, typlen, typbyval, typalign, &values, &nulls, &n);
    if (n == 0) {
        appendStringInfoString(cx->buf, "NULL");  // x IN (NULL): no row, like = ANY('{}')
        return;
    }
    for (int i = 0; i < n; i++) {
        if (i > 0)
            appendStringInfoString(cx->buf, ", ");
        Const *elem =
            makeConst(elemtype, -1, c->constcollid, typlen, values[i], nulls[i], typbyval);
        deparse_const(elem, cx);
    }
}

void deparse_node(Node *node, Context *cx) {
    switch (nodeTag(node)) {
        case T_Var: {
            Var *var = reinterpret_cast<Var *>(node);
            char *name = get_attname(cx->relid, var->varattno, false);
            appendStringInfoString(cx->buf, quote_remote_identifier(name));
            return;
        }
        case T_Const:
            deparse_const(reinterpret_cast<Const *>(node), cx);
            return;
        case T_Param:
            add_param(node, cx);
            return;
        case T_RelabelType:
            deparse_node(reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(node)->arg), cx);
            return;
        case T_OpExpr: {
            OpExpr *op = reinterpret_cast<OpExpr *>(node);
            const char *name = remote_operator(op->opno, list_length(op->args));
            appendStringInfoChar(cx->buf, '(');
            if (list_length(op->args) == 1) {
                appendStringInfo(cx->buf, "%s ", name);
                deparse_node(static_cast<Node *>(linitial(op->args)), cx);
            } else {
                deparse_node(static_cast<Node *>(linitial(op->args)), cx);
                appendStringInfo(cx->buf, " %s ", name);
                deparse_node(static_cast<Node *>(lsecond(op->args)), cx);
            }
            appendStringInfoChar(cx->buf, ')');
            return;
        }
        case T_ScalarArrayOpExpr: {
            ScalarArrayOpExpr *sa = reinterpret_cast<ScalarArrayOpExpr *>(node);
            appendStringInfoChar(cx->buf, '(');
            deparse_node(static_cast<Node *>(linitial(sa->args)), cx);
            appendStringInfoString(cx->buf, sa->useOr ? " IN (" : " NOT IN (");
            deparse_array_elements(static_cast<Node *>(lsecond(sa->args)), cx);
            appendStringInfoString(cx->buf, "))");
            return;
        }
        case T_BoolExpr: {
            BoolExpr *b = reinterpret_cast<BoolExpr *>(node);
            appendStringInfoChar(cx->buf, '(');
            if (b->boolop == NOT_EXPR) {
                appendStringInfoString(cx->buf, "NOT ");
                deparse_node(static_cast<Node *>(linitial(b->args)), cx);
            } else {
                deparse_list(b->args, b->boolop == AND_EXPR ? " AND " : " OR ", cx);
            }
            appendStringInfoChar(cx->buf, ')');
            return;
        }
        case T_NullTest: {
            NullTest *nt = reinterpret_cast<NullTest *>(node);
            appendStringInfoChar(cx->buf, '(');
            deparse_node(reinterpret_cast<Node *>(nt->arg), cx);
            appendStringInfoString(cx->buf,
                                   nt->nulltesttype == IS_NULL ? " IS NULL)" : " IS NOT NULL)");
            return;
        }
        default:
            elog(ERROR, "picoroute: cannot deparse node type %d", static_cast<int>(nodeTag(node)));
    }
}

bool deparse_where(List *conds, Context *cx) {
    if (conds == NIL)
        return false;
    appendStringInfoString(cx->buf, " WHERE ");
    bool first = true;
    ListCell *lc;
    foreach (lc, conds) {
        Node *cond = static_cast<Node *>(lfirst(lc));
        if (IsA(cond, RestrictInfo))
            cond = reinterpret_cast<Node *>(reinterpret_cast<RestrictInfo *>(cond)->clause);
        if (!first)
            appendStringInfoString(cx->buf, " AND ");
        first = false;
        deparse_node(cond, cx);
    }
    return true;
}

}  // namespace

const char *quote_remote_identifier(const char *name) {
    return quote_identifier(name);
}

bool is_foreign_expr(PlannerInfo *, RelOptInfo *rel, Expr *expr) {
    return shippable(reinterpret_cast<Node *>(expr), rel);
}

void deparse_select(StringInfo buf, PlannerInfo *, RelOptInfo *, Relation relation,
                    TableInfo *table, Bitmapset *attrs_used, List *remote_conds,
                    List **retrieved_attrs, List **params, bool *has_where) {
    TupleDesc desc = RelationGetDescr(relation);
    bool whole_row = bms_is_member(0 - FirstLowInvalidHeapAttributeNumber, attrs_used);
    appendStringInfoString(buf, "SELECT ");
    *retrieved_attrs = NIL;
    bool first = true;
    int first_live = 0;
    for (int i = 1; i <= desc->natts; i++) {
        Form_pg_attribute attr = TupleDescAttr(desc, i - 1);
        if (attr->attisdropped)
            continue;
        if (first_live == 0)
            first_live = i;
        if (!whole_row && !bms_is_member(i - FirstLowInvalidHeapAttributeNumber, attrs_used))
            continue;
        if (!first)
            appendStringInfoString(buf, ", ");
        first = false;
        appendStringInfoString(buf, quote_remote_identifier(NameStr(attr->attname)));
        *retrieved_attrs = lappend_int(*retrieved_attrs, i);
    }
    if (first) {
        // No column is needed (count(*)): fetch one anyway, and ignore it.
        appendStringInfoString(buf, first_live ? quote_remote_identifier(NameStr(
                                                     TupleDescAttr(desc, first_live - 1)->attname))
                                               : "NULL");
    }
    appendStringInfo(buf, " FROM %s", quote_remote_identifier(table->remote_table));
    Context cx{buf, RelationGetRelid(relation), params};
    *has_where = deparse_where(remote_conds, &cx);
}

void deparse_update(StringInfo buf, PlannerInfo *, RelOptInfo *, Relation relation,
                    TableInfo *table, List *target_attrs, List *target_exprs, List *remote_conds,
                    List **params, bool *has_where) {
    appendStringInfo(buf, "UPDATE %s SET ", quote_remote_identifier(table->remote_table));
    Context cx{buf, RelationGetRelid(relation), params};
    ListCell *la, *le;
    bool first = true;
    forboth(la, target_attrs, le, target_exprs) {
        AttrNumber attnum = lfirst_int(la);
        if (!first)
            appendStringInfoString(buf, ", ");
        first = false;
        appendStringInfo(
            buf, "%s = ",
            quote_remote_identifier(get_attname(RelationGetRelid(relation), attnum, false)));
        deparse_node(static_cast<Node *>(lfirst(le)), &cx);
    }
    *has_where = deparse_where(remote_conds, &cx);
}

void deparse_delete(StringInfo buf, PlannerInfo *, RelOptInfo *, Relation relation,
                    TableInfo *table, List *remote_conds, List **params, bool *has_where) {
    appendStringInfo(buf, "DELETE FROM %s", quote_remote_identifier(table->remote_table));
    Context cx{buf, RelationGetRelid(relation), params};
    *has_where = deparse_where(remote_conds, &cx);
}

void deparse_insert(StringInfo buf, Relation relation, TableInfo *table, List *target_attrs,
                    int nrows) {
    TupleDesc desc = RelationGetDescr(relation);
    appendStringInfo(buf, "INSERT INTO %s (", quote_remote_identifier(table->remote_table));
    ListCell *lc;
    bool first = true;
    foreach (lc, target_attrs) {
        Form_pg_attribute attr = TupleDescAttr(desc, lfirst_int(lc) - 1);
        if (!first)
            appendStringInfoString(buf, ", ");
        first = false;
        appendStringInfoString(buf, quote_remote_identifier(NameStr(attr->attname)));
    }
    appendStringInfoString(buf, ") VALUES ");
    int n = 1;
    for (int r = 0; r < nrows; r++) {
        appendStringInfoString(buf, r == 0 ? "(" : ", (");
        for (int c = 0; c < list_length(target_attrs); c++)
            appendStringInfo(buf, c == 0 ? "$%d" : ", $%d", n++);
        appendStringInfoChar(buf, ')');
    }
}

}  // namespace picoroute::pg::fdw
