// Key analysis (keys.cpp): the clauses that fix a sharding key at plan time, and the key values
// of one execution.
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
}

#include "pg/fdw/options.h"

namespace picoroute::pg::fdw {

enum KeyKind { KEY_SCALAR = 1, KEY_ARRAY = 2, KEY_NULL = 3 };
// When the AND-ed `conds` fix every sharding-key column (=, = ANY, IS NULL with constants or
// parameters), returns one KeyKind per key column and appends the value expressions (one per
// scalar/array key; none for IS NULL) to *key_exprs. Otherwise NIL.
List *analyze_key_clauses(TableInfo *table, Index relid, List *conds, List **key_exprs);
// `node` without the RelabelTypes around it.
Node *strip_relabel(Node *node);
// Whether `node` (RelabelTypes aside) is column `attnum` of relation `relid` of this query level.
bool is_key_var(Node *node, Index relid, AttrNumber attnum);
// The OR-of-AND chains Picodata expands the AND-ed `exprs` into (an IN list of constants counts
// one chain per element, as Picodata rewrites it into ORs), capped at INT_MAX; 1 for none.
int where_dnf_chains(List *exprs);
// Key types whose equality is exact on both sides and has a hash function: the keys batched joins
// and array keys (array_key.cpp) send as lists.
bool batchable_type(Oid type);

// How the sharding-key values are evaluated (one entry per key kind of the plan).
struct RoutedKeys {
    List *states = NIL;  // ExprState per key expression
    Oid *types = nullptr;
    int32 *typmods = nullptr;  // per key column: its typmod (numeric scale before hashing)
};

// Evaluated sharding-key values of one execution.
struct KeyValues {
    int n;
    Datum *values;
    bool *nulls;
    Oid type;
};
// Evaluates the key expressions of `routed` (one KeyValues per entry of `key_kinds`; nullptr when
// there is none). Plain: may ereport.
KeyValues *evaluate_keys(const RoutedKeys &routed, List *key_kinds, ExprContext *econtext);

}  // namespace picoroute::pg::fdw
