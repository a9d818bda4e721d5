// Writing the remote SQL text of the picoroute FDW in Picodata's dialect (plain C style: see
// plan_private.h; the facts are in the README, "Picodata SQL compatibility"): expressions that
// shippable.cpp accepted, and the SELECT, UPDATE, DELETE and INSERT statements.
//
// Every name is double-quoted (Picodata keywords such as "option" or "set" are plain names in
// PostgreSQL). Constants are written so that Picodata types them as PostgreSQL does: integers
// as integers, doubles with an exponent (1.5e0), numerics with their scale (2.50, or
// CAST(1 AS decimal) for an integral value), and a numeric compared with a numeric(p,s) column is
// first given the column's scale, because Picodata hashes a decimal with its scale. Other
// constants and all parameters are sent as text parameters ($n), written with fixed settings
// (set_transmission_modes) and typed by the server from their context: so a parameter is only
// shipped where something fixes its type (a column or constant it is compared with or added to);
// "$1 IS NULL", "$1 = $2", "$1 + $2" and "$1 IN (...)" stay local. The values of an outer row (a
// join clause of a parameterized scan, a lateral reference) are parameters too, computed here.
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

#include "pg/fdw/deparse.h"
#include "pg/fdw/dialect.h"
#include "pg/fdw/options.h"
#include "pg/fdw/shippable.h"

#include <cstring>
#include <utility>

namespace picoroute::pg::fdw {

namespace {

struct Context {
    StringInfo buf;
    Oid relid;
    List **params;
    PlannerInfo *join_root = nullptr;  // a pushed join: columns are "r<varno>"."name"
    Index varno = 0;  // the scanned relation's range-table index; 0: no outer values
};

// A value sent as $n: a parameter, or a value computed here for each outer row.
bool sent_as_param(Node *node, Context *cx) {
    return IsA(node, Param) || is_local_coercion(node) ||
           (cx->varno != 0 && is_outer_value(node, cx->varno));
}

void deparse_node(Node *node, Context *cx);

// A column: "name", or "r<range table index>"."name" in a pushed join (of the join's table).
void deparse_var(Var *var, Context *cx) {
    Oid relid = cx->relid;
    if (cx->join_root != nullptr) {
        relid = planner_rt_fetch(var->varno, cx->join_root)->relid;
        appendStringInfo(cx->buf, "\"r%d\".", var->varno);
    }
    appendStringInfoString(cx->buf,
                           quote_remote_identifier(get_attname(relid, var->varattno, false)));
}

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

// A string literal as Picodata reads it: quotes doubled, backslashes plain.
void append_string_literal(StringInfo buf, const char *value) {
    appendStringInfoChar(buf, '\'');
    for (const char *p = value; *p; p++) {
        if (*p == '\'')
            appendStringInfoChar(buf, '\'');
        appendStringInfoChar(buf, *p);
    }
    appendStringInfoChar(buf, '\'');
}

bool is_numeric_spelling(const char *text) {
    return text[0] != '\0' && strspn(text, "-+0123456789.eE") == strlen(text);
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
        case INT8OID: {
            char *text = OidOutputFunctionCall(out, c->constvalue);
            appendStringInfo(cx->buf, text[0] == '-' ? "(%s)" : "%s", text);
            return;
        }
        case FLOAT8OID: {
            // Picodata types 1.5 as a decimal and hashes it as one: a double needs an exponent.
            // Every digit is kept (extra_float_digits 3), whoever calls.
            int nestlevel = set_transmission_modes();
            char *text = OidOutputFunctionCall(out, c->constvalue);
            reset_transmission_modes(nestlevel);
            if (!is_numeric_spelling(text)) {
                add_param(reinterpret_cast<Node *>(c), cx);  // NaN, Infinity
                return;
            }
            const char *exponent = strpbrk(text, "eE") ? "" : "e0";
            appendStringInfo(cx->buf, text[0] == '-' ? "(%s%s)" : "%s%s", text, exponent);
            return;
        }
        case NUMERICOID: {
            // A decimal keeps its scale as written: 2.50 stays 2.50; an integral value needs a
            // cast, or Picodata would read an integer.
            char *text = OidOutputFunctionCall(out, c->constvalue);
            if (!is_numeric_spelling(text)) {
                add_param(reinterpret_cast<Node *>(c), cx);  // NaN, Infinity
                return;
            }
            if (strchr(text, '.') == nullptr)
                appendStringInfo(cx->buf, "CAST(%s AS decimal)", text);
            else
                appendStringInfo(cx->buf, text[0] == '-' ? "(%s)" : "%s", text);
            return;
        }
        case BOOLOID:
            appendStringInfoString(cx->buf, DatumGetBool(c->constvalue) ? "true" : "false");
            return;
        case TEXTOID:
        case VARCHAROID:
        case BPCHAROID: {
            // A backslash reads differently under standard_conforming_strings = off on the
            // remote side: such a value goes as a parameter, which nothing reinterprets. A
            // character(n) value goes without its trailing blanks (shippable.cpp).
            char *text = OidOutputFunctionCall(out, c->constvalue);
            if (c->consttype == BPCHAROID)
                trim_trailing_blanks(text);
            if (strchr(text, '\\') != nullptr)
                add_param(reinterpret_cast<Node *>(c), cx);
            else
                append_string_literal(cx->buf, text);
            return;
        }
        default:
            add_param(reinterpret_cast<Node *>(c), cx);
            return;
    }
}

// The numeric(p,s) column `other` is compared with, or -1.
int32 numeric_column_typmod(Node *other) {
    while (other != nullptr && IsA(other, RelabelType))
        other = reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(other)->arg);
    if (other == nullptr || !IsA(other, Var))
        return -1;
    Var *var = reinterpret_cast<Var *>(other);
    return var->vartype == NUMERICOID ? var->vartypmod : -1;
}

// A value compared with a numeric(p,s) column, given the column's scale when that is exact: a
// constant is rescaled now; a parameter is marked (a RelabelType carrying the typmod) and
// rescaled when its value is known (see init_routed_statement).
Node *with_column_scale(Node *value, int32 typmod, bool param) {
    if (typmod < 0 || value == nullptr)
        return value;
    if (IsA(value, Const)) {
        Const *c = reinterpret_cast<Const *>(value);
        if (c->consttype != NUMERICOID || c->constisnull)
            return value;
        Const *copy = static_cast<Const *>(copyObjectImpl(c));
        copy->constvalue = numeric_to_typmod(c->constvalue, typmod);
        return reinterpret_cast<Node *>(copy);
    }
    if (param && exprType(value) == NUMERICOID)
        return reinterpret_cast<Node *>(makeRelabelType(reinterpret_cast<Expr *>(value), NUMERICOID,
                                                        typmod, InvalidOid, COERCE_IMPLICIT_CAST));
    return value;
}

void deparse_value(Node *value, int32 typmod, Context *cx) {
    bool param = sent_as_param(value, cx);
    value = with_column_scale(value, typmod, param);
    if (param)
        add_param(value, cx);
    else
        deparse_node(value, cx);
}

void deparse_list(List *items, const char *separator, Context *cx, int32 typmod = -1) {
    bool first = true;
    ListCell *lc;
    foreach (lc, items) {
        if (!first)
            appendStringInfoString(cx->buf, separator);
        first = false;
        deparse_value(static_cast<Node *>(lfirst(lc)), typmod, cx);
    }
}

void deparse_array_elements(Node *array, int32 typmod, Context *cx) {
    if (IsA(array, ArrayExpr)) {
        deparse_list(reinterpret_cast<ArrayExpr *>(array)->elements, ", ", cx, typmod);
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
        deparse_value(reinterpret_cast<Node *>(elem), typmod, cx);
    }
}

void deparse_opexpr(OpExpr *op, Context *cx) {
    RemoteOp rop = remote_operator(op->opno, list_length(op->args));
    if (rop.kind == OpKind::Negate) {
        // No prefix minus in Picodata's grammar.
        appendStringInfoString(cx->buf, "(0 - ");
        deparse_node(static_cast<Node *>(linitial(op->args)), cx);
        appendStringInfoChar(cx->buf, ')');
        return;
    }
    Node *l = static_cast<Node *>(linitial(op->args));
    Node *r = static_cast<Node *>(lsecond(op->args));
    if (rop.kind == OpKind::Compare && sent_as_param(l, cx) && !sent_as_param(r, cx))
        std::swap(l, r);  // "id" = $1 (= and <> are symmetric), as a reader expects
    bool negated = rop.kind == OpKind::NotLike || rop.kind == OpKind::NotILike;
    // Picodata's LIKE has no NOT flag. Every binary operator is written in parentheses, its
    // operands too when they are operators: nothing relies on Picodata's precedence, which differs
    // from PostgreSQL's (|| binds with * / % before 26.2.1-rc2, capability ConcatBelowAdditive).
    appendStringInfoString(cx->buf, negated ? "(NOT (" : "(");
    deparse_value(l, numeric_column_typmod(r), cx);
    appendStringInfo(cx->buf, " %s ", rop.spelling);
    deparse_value(r, numeric_column_typmod(l), cx);
    appendStringInfoString(cx->buf, negated ? "))" : ")");
}

void deparse_aggref(Aggref *agg, Context *cx) {
    appendStringInfo(cx->buf, "%s(", get_func_name(agg->aggfnoid));
    if (agg->aggstar) {
        appendStringInfoChar(cx->buf, '*');
    } else {
        if (agg->aggdistinct != NIL)
            appendStringInfoString(cx->buf, "DISTINCT ");
        deparse_node(reinterpret_cast<Node *>(linitial_node(TargetEntry, agg->args)->expr), cx);
    }
    appendStringInfoChar(cx->buf, ')');
}

void deparse_node(Node *node, Context *cx) {
    if (sent_as_param(node, cx)) {
        add_param(node, cx);
        return;
    }
    switch (nodeTag(node)) {
        case T_Var:
            deparse_var(reinterpret_cast<Var *>(node), cx);
            return;
        case T_Const:
            deparse_const(reinterpret_cast<Const *>(node), cx);
            return;
        case T_RelabelType:
            deparse_node(reinterpret_cast<Node *>(reinterpret_cast<RelabelType *>(node)->arg), cx);
            return;
        case T_OpExpr:
            deparse_opexpr(reinterpret_cast<OpExpr *>(node), cx);
            return;
        case T_ScalarArrayOpExpr: {
            ScalarArrayOpExpr *sa = reinterpret_cast<ScalarArrayOpExpr *>(node);
            Node *left = static_cast<Node *>(linitial(sa->args));
            appendStringInfoChar(cx->buf, '(');
            deparse_node(left, cx);
            appendStringInfoString(cx->buf, sa->useOr ? " IN (" : " NOT IN (");
            deparse_array_elements(static_cast<Node *>(lsecond(sa->args)),
                                   numeric_column_typmod(left), cx);
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
        case T_Aggref:
            deparse_aggref(reinterpret_cast<Aggref *>(node), cx);
            return;
        case T_CoalesceExpr:
            appendStringInfoString(cx->buf, "coalesce(");
            deparse_list(reinterpret_cast<CoalesceExpr *>(node)->args, ", ", cx);
            appendStringInfoChar(cx->buf, ')');
            return;
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
    // Always quoted: several Picodata keywords (option, set, by, begin, filter, over) are plain
    // names to PostgreSQL's quote_identifier.
    check_remote_name(name, "remote column or table");
    StringInfoData buf;
    initStringInfo(&buf);
    appendStringInfoChar(&buf, '"');
    appendStringInfoString(&buf, name);
    appendStringInfoChar(&buf, '"');
    return buf.data;
}

void deparse_expr(StringInfo buf, Oid relid, Node *expr, List **params) {
    Context cx{buf, relid, params};
    deparse_node(expr, &cx);
}

void deparse_join_expr(StringInfo buf, PlannerInfo *root, Node *expr, List **params) {
    Context cx{buf, InvalidOid, params, root};
    deparse_node(expr, &cx);
}

void deparse_select(StringInfo buf, PlannerInfo *, RelOptInfo *rel, Relation relation,
                    TableInfo *table, Bitmapset *attrs_used, List *remote_conds,
                    List **retrieved_attrs, List **params, bool *has_where, int *from_offset) {
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
    if (from_offset != nullptr)
        *from_offset = buf->len;
    appendStringInfo(buf, " FROM %s", quote_remote_identifier(table->remote_table));
    Context cx{buf, RelationGetRelid(relation), params, nullptr, rel->relid};
    // Only a double is written with settings of its own (deparse_const): every other constant
    // of a condition goes as an integer, a decimal or a string, or as a parameter.
    *has_where = deparse_where(remote_conds, &cx);
}

void deparse_update(StringInfo buf, PlannerInfo *, RelOptInfo *, Relation relation,
                    TableInfo *table, List *target_attrs, List *target_exprs, List *remote_conds,
                    List **params, bool *has_where) {
    appendStringInfo(buf, "UPDATE %s SET ", quote_remote_identifier(table->remote_table));
    Context cx{buf, RelationGetRelid(relation), params};
    int nestlevel = set_transmission_modes();
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
        deparse_value(static_cast<Node *>(lfirst(le)),
                      TupleDescAttr(RelationGetDescr(relation), attnum - 1)->atttypid == NUMERICOID
                          ? TupleDescAttr(RelationGetDescr(relation), attnum - 1)->atttypmod
                          : -1,
                      &cx);
    }
    *has_where = deparse_where(remote_conds, &cx);
    reset_transmission_modes(nestlevel);
}

void deparse_delete(StringInfo buf, PlannerInfo *, RelOptInfo *, Relation relation,
                    TableInfo *table, List *remote_conds, List **params, bool *has_where) {
    appendStringInfo(buf, "DELETE FROM %s", quote_remote_identifier(table->remote_table));
    Context cx{buf, RelationGetRelid(relation), params};
    int nestlevel = set_transmission_modes();
    *has_where = deparse_where(remote_conds, &cx);
    reset_transmission_modes(nestlevel);
}

void deparse_constant(StringInfo buf, Oid relid, Const *constant, List **params) {
    Context cx{buf, relid, params};
    deparse_const(constant, &cx);
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
