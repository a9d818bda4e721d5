// A scan's sharding key compared with an array computed at execution (array_key.cpp): the array
// is evaluated once per execution and its distinct values sent as key lists, by owner.
#pragma once

extern "C" {
#include "postgres.h"

#include "commands/explain.h"
#include "nodes/pathnodes.h"
}

#include "pg/fdw/routed.h"

namespace picoroute::pg::fdw {

struct ArrayKey {
    ExprState *state;    // the array expression
    const char *column;  // the key column, quoted
    int max_values;      // values per statement (within Picodata's OR-chain limit)
    Oid elem_type;       // the array's element type
    Oid key_type;        // the key column's type (an integer may be wider than elem_type)
    int16 typlen;
    bool typbyval;
    char typalign;
    FmgrInfo out;
};
// Plan time: the array of a local clause "key = ANY(array)" that can go to Picodata as key lists
// (a single-column key of the array's element type or a wider integer, an array without columns,
// volatile functions or subplans, the equality shippable); the clause is taken out of *local_exprs.
// Else nullptr. For a scan whose clauses sent do not fix the key already.
Expr *take_array_key_clause(PlannerInfo *root, RelOptInfo *baserel, const TableInfo *table,
                            List **local_exprs);
// Values per statement for a statement whose other clauses are `remote_exprs`.
int array_key_max_values(List *remote_exprs);
void init_array_key(ArrayKey *ak, Expr *array, Oid key_type, PlanState *ps);
// Evaluates the array and runs the key lists (execute_batched): the answers in st->answers.
void execute_array_key(RoutedStatement *st, ArrayKey *ak, ExprContext *econtext);
void explain_array_key(RoutedStatement *st, const ArrayKey *ak, ExplainState *es);

}  // namespace picoroute::pg::fdw
