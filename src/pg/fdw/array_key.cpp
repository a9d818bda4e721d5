// A scan whose sharding key is compared with an array known only at execution: "key = ANY($1)"
// with an array parameter of a generic plan, or "key = ANY(ARRAY(SELECT ...))" over a subquery.
// Picodata reads no arrays before 26.2.1-rc1 (query.pest gains ArrayLiteral there) and picoroute
// writes key lists as IN lists for every version, so such a clause cannot go with the statement
// as written; evaluated here it would make the scan read the whole table and search the array for
// every row. Instead the array is evaluated once per execution, its distinct values are routed by
// their buckets, and each owner gets the statement with "AND key IN ($n, ...)" over its own values
// (at most as many per statement as Picodata's OR-chain limit allows), as the batched join sends
// its keys (execute_batched). The clause is then not evaluated here: the key list is the same
// condition.
extern "C" {
#include "postgres.h"

#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/clauses.h"
#include "optimizer/optimizer.h"
#include "utils/array.h"
#include "utils/lsyscache.h"
}

#include "core/capabilities.h"
#include "pg/fdw/array_key.h"
#include "pg/fdw/dialect.h"
#include "pg/fdw/keys.h"
#include "pg/fdw/options.h"
#include "pg/fdw/routed.h"
#include "pg/fdw/shippable.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace picoroute::pg::fdw {

namespace {

// Whether every value of type `from` is a value of the key's type `to` with the same text.
bool converts_exactly(Oid from, Oid to) {
    return from == to || (to == INT8OID && (from == INT4OID || from == INT2OID)) ||
           (to == INT4OID && from == INT2OID);
}

// A value of the array as a value of the key's type.
Datum key_value(const ArrayKey *ak, Datum value) {
    if (ak->elem_type == ak->key_type)
        return value;
    int64 v = ak->elem_type == INT2OID ? DatumGetInt16(value) : DatumGetInt32(value);
    return ak->key_type == INT8OID ? Int64GetDatum(v) : Int32GetDatum(static_cast<int32>(v));
}

// "key = ANY(array)" with the array computed at execution: the array expression, else nullptr.
Expr *array_of_key_clause(PlannerInfo *root, RelOptInfo *baserel, const TableInfo *table,
                          Expr *clause) {
    if (!IsA(clause, ScalarArrayOpExpr))
        return nullptr;
    ScalarArrayOpExpr *saop = reinterpret_cast<ScalarArrayOpExpr *>(clause);
    if (!saop->useOr || list_length(saop->args) != 2)
        return nullptr;
    Node *left = static_cast<Node *>(linitial(saop->args));
    Expr *array = static_cast<Expr *>(lsecond(saop->args));
    if (!IsA(left, Var))
        return nullptr;
    Var *var = reinterpret_cast<Var *>(left);
    if (var->varno != static_cast<int>(baserel->relid) || var->varlevelsup != 0 ||
        var->varattno != table->key_attnums[0])
        return nullptr;
    // The values are hashed as the column's type: an array of another type is left alone, but
    // for a narrower integer (an int4 array against an int8 key), whose values convert exactly.
    Oid array_type = exprType(reinterpret_cast<Node *>(array));
    if (!batchable_type(var->vartype) ||
        !converts_exactly(get_element_type(array_type), var->vartype) || IsA(array, Const))
        return nullptr;
    if (OidIsValid(saop->inputcollid) && !get_collation_isdeterministic(saop->inputcollid))
        return nullptr;
    Node *node = reinterpret_cast<Node *>(array);
    if (contain_var_clause(node) || contain_volatile_functions(node) || contain_subplans(node))
        return nullptr;
    // The same clause over a constant array must be one Picodata evaluates as PostgreSQL does (the
    // column's equality, its collation).
    ScalarArrayOpExpr *probe = static_cast<ScalarArrayOpExpr *>(copyObjectImpl(saop));
    Const *empty = makeConst(array_type, -1, exprCollation(node), -1,
                             PointerGetDatum(construct_empty_array(get_element_type(array_type))),
                             false, false);
    probe->args = list_make2(left, empty);
    if (!is_foreign_expr(root, baserel, reinterpret_cast<Expr *>(probe)))
        return nullptr;
    return array;
}

struct ValueText {
    Datum value;
    char *text;
};

int compare_text(const void *a, const void *b) {
    return strcmp(static_cast<const ValueText *>(a)->text, static_cast<const ValueText *>(b)->text);
}

}  // namespace

Expr *take_array_key_clause(PlannerInfo *root, RelOptInfo *baserel, const TableInfo *table,
                            List **local_exprs) {
    // Reads only (a SELECT, the query of an INSERT): an UPDATE or DELETE sent as one statement
    // (direct_modify.cpp) carries the clauses Picodata evaluates and no others, and a row lock
    // needs the clause evaluated here.
    Query *parse = root->parse;
    if (*local_exprs == NIL || table->nkeys != 1 || table->global ||
        (parse->commandType != CMD_SELECT && parse->commandType != CMD_INSERT) ||
        parse->rowMarks != NIL || static_cast<int>(baserel->relid) == parse->resultRelation)
        return nullptr;
    ListCell *lc;
    foreach (lc, *local_exprs) {
        Expr *array = array_of_key_clause(root, baserel, table, static_cast<Expr *>(lfirst(lc)));
        if (array != nullptr) {
            *local_exprs = foreach_delete_current(*local_exprs, lc);
            return array;
        }
    }
    return nullptr;
}

int array_key_max_values(List *remote_exprs) {
    int chains = std::max(1, where_dnf_chains(remote_exprs));
    return std::max(1, static_cast<int>(caps::kDnfMostChains) / chains);
}

void init_array_key(ArrayKey *ak, Expr *array, Oid key_type, PlanState *ps) {
    ak->state = ExecInitExpr(array, ps);
    ak->key_type = key_type;
    Oid elem = get_element_type(exprType(reinterpret_cast<Node *>(array)));
    ak->elem_type = elem;
    get_typlenbyvalalign(elem, &ak->typlen, &ak->typbyval, &ak->typalign);
    Oid out;
    bool varlena;
    getTypeOutputInfo(elem, &out, &varlena);
    fmgr_info(out, &ak->out);
}

void execute_array_key(RoutedStatement *st, ArrayKey *ak, ExprContext *econtext) {
    bool isnull = false;
    Datum value = ExecEvalExpr(ak->state, econtext, &isnull);
    // key = ANY(NULL) and key = ANY('{}') match no row: nothing is sent.
    int nelems = 0;
    Datum *elems = nullptr;
    bool *nulls = nullptr;
    if (!isnull)
        deconstruct_array(DatumGetArrayTypeP(value), ak->elem_type, ak->typlen, ak->typbyval,
                          ak->typalign, &elems, &nulls, &nelems);
    // Distinct values by their text (a repeated value would only lengthen the list); a NULL
    // element matches no row. Plain C here: the output functions may raise an error.
    ValueText *all = static_cast<ValueText *>(palloc(sizeof(ValueText) * (nelems + 1)));
    int nall = 0;
    int nestlevel = set_transmission_modes();
    for (int i = 0; i < nelems; i++)
        if (!nulls[i])
            all[nall++] = ValueText{elems[i], OutputFunctionCall(&ak->out, elems[i])};
    reset_transmission_modes(nestlevel);
    qsort(all, nall, sizeof(ValueText), compare_text);
    KeyValues *keys = static_cast<KeyValues *>(palloc0(sizeof(KeyValues)));
    keys->type = ak->key_type;
    keys->values = static_cast<Datum *>(palloc(sizeof(Datum) * (nall + 1)));
    keys->nulls = static_cast<bool *>(palloc0(sizeof(bool) * (nall + 1)));
    const char **texts = static_cast<const char **>(palloc(sizeof(char *) * (nall + 1)));
    for (int i = 0; i < nall; i++) {
        if (i > 0 && strcmp(all[i].text, all[i - 1].text) == 0)
            continue;
        keys->values[keys->n] = key_value(ak, all[i].value);
        texts[keys->n++] = all[i].text;
    }
    BatchedLookup b{
        st->statement->plan.sql,     st->statement->plan.has_where,        ak->column,
        st->statement->plan.nparams, evaluate_routed_params(st, econtext), ak->max_values};
    execute_batched(st, b, keys, texts);
}

void explain_array_key(RoutedStatement *st, const ArrayKey *ak, ExplainState *es) {
    ExplainPropertyText("Remote SQL",
                        psprintf("%s%s%s IN ($%d, ...)", st->statement->plan.sql,
                                 st->statement->plan.has_where ? " AND " : " WHERE ", ak->column,
                                 st->statement->plan.nparams + 1),
                        es);
    ExplainPropertyText("Routing",
                        st->last.routing != nullptr
                            ? st->last.routing
                            : "by sharding key: the distinct values of the array, one statement "
                              "per instance that owns their buckets",
                        es);
    ExplainPropertyInteger("Keys per Statement", nullptr, ak->max_values, es);
}

}  // namespace picoroute::pg::fdw
