// The routed statement (routed.cpp; EXPLAIN's lines in routed_explain.cpp): what a plan node
// decided about its remote statement, its execution through the remote layer (whole answers, a
// stream, batches of keys), and EXPLAIN.
//
// Execution code runs inside guarded() and reaches PostgreSQL through pg_call.
#pragma once

extern "C" {
#include "postgres.h"

#include "commands/explain.h"
#include "nodes/execnodes.h"
#include "utils/rel.h"
}

#include "pg/fdw/keys.h"
#include "pg/fdw/options.h"
#include "pg/fdw/routed_statement.h"
#include "pg/remote/rounds.h"

namespace picoroute::pg::fdw {

// A RoutedStatement without parameters or key expressions, in a memory context of its own under
// `parent` (deleting it frees the results): a statement sent as written, without a sharding key.
RoutedStatement *new_routed_statement(MemoryContext parent, const RoutedSetup &setup,
                                      const RemoteStatement &statement);
// Prepares a RoutedStatement for a plan node's state: the parameters ($1..$nparams: the head of
// `exprs`) and the key expressions (the rest) initialised; setup.describe follows the executor's
// instrumentation.
RoutedStatement *init_routed_statement(PlanState *ps, RoutedSetup setup,
                                       const RemoteStatement &statement, List *exprs);
// Evaluates parameters and keys, routes, runs the statement on its instance(s) and keeps the
// results. Plain entry point (may ereport).
void execute_routed(RoutedStatement *st, ExprContext *econtext);
// The same with the values already computed: `values` the text of $1..$nparams (nullptr = NULL),
// `keys` one KeyValues per entry of the plan's key_kinds (a batched join's key list). Plain entry
// point.
void execute_routed_values(RoutedStatement *st, const char **values, KeyValues *keys);
// The text values of st's $1..$nparams (st->params.states) for one execution. Plain: may ereport.
const char **evaluate_routed_params(RoutedStatement *st, ExprContext *econtext);
// One batch of a batched join (pg/batch_join/executor.cpp): the statement `base` (SELECT ... FROM
// t [WHERE ...], with `ncond` parameters whose values are `cond_values`) restricted to a list of
// values of the single sharding-key column `column` (quoted): "<base> AND|WHERE column IN
// ($ncond+1, ...)".
struct BatchedLookup {
    const char *base;
    bool has_where;
    const char *column;
    int ncond;
    const char **cond_values;
    int max_keys;  // values per statement (within Picodata's OR-chain limit)
};
// Routes each key by its bucket, groups the keys by instance (at most max_keys per statement),
// runs the statements in parallel (retries and failover as for any read) and keeps the answers in
// st->answers. The plan's key_kinds must hold one entry. Returns the number of statements sent.
// Plain.
int execute_batched(RoutedStatement *st, const BatchedLookup &b, KeyValues *keys,
                    const char **key_texts);
// The same for a scan that reads its rows as they arrive: sends the statement(s) and keeps a
// RowStream in st->answers.stream (none when no row can match). `ncols`: columns each row must
// have.
void stream_routed(RoutedStatement *st, ExprContext *econtext, int ncols);
// The next streamed row into values[0..ncols-1] (nullptr = NULL); false at the end.
bool stream_next(RoutedStatement *st, const char **values);
// The row stream_next gave is converted: its text values may be freed.
void stream_row_done(RoutedStatement *st);
// Routing as it would be decided now, for EXPLAIN without ANALYZE.
// True when the routing depends on parameters whose values EXPLAIN does not have.
bool routing_params_unknown(RoutedStatement *st, ExprContext *econtext);
// Sets *routing to the description and, when the statement goes to a single instance, *sql to the
// statement as sent (with its bucket filter); *sql is left alone otherwise.
void explain_routing(RoutedStatement *st, ExprContext *econtext, bool params_unknown,
                     const char **routing, const char **sql);
// EXPLAIN's "Remote SQL" and "Routing" lines of a scan or a direct modification.
// `sql`: the text shown when the routing is known at plan time (nullptr: the statement's own).
void explain_remote(RoutedStatement *st, ForeignScanState *node, ExplainState *es,
                    const char *sql = nullptr);
// Frees the results and ends the stream (closing a connection whose answer is still coming).
void release_results(RoutedStatement *st);

}  // namespace picoroute::pg::fdw
