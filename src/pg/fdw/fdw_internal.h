// Shared pieces of the picoroute foreign data wrapper (options, deparse, scan, modify, import).
//
// Planning code is written in plain C style (palloc, List, StringInfo) and holds no C++ objects, so
// a PostgreSQL error may leave it at any point. Execution code that routes and talks to instances
// runs inside guarded() and reaches PostgreSQL through pg_call.
#pragma once

extern "C" {
#include "postgres.h"

#include "access/tupdesc.h"
#include "commands/explain.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "nodes/pg_list.h"
#include "lib/stringinfo.h"
}

#include "pg/fdw/connection.h"
#include "pg/fdw/routing.h"

namespace picoroute::pg::fdw {

enum class Scatter { Coordinator = 0, Masters = 1 };

// Options of a foreign table and its server, resolved. palloc'd.
struct TableInfo {
    Oid relid;
    Oid serverid;
    char *server_name;
    char *tier;          // server option tier (default "default")
    int scatter;         // Scatter
    int read_pref;       // ReadPref
    char *remote_table;  // table_name or the foreign table's name
    bool global;         // distribution 'global'
    int batch_size;
    int nkeys;
    AttrNumber *key_attnums;  // sharding key columns in hashing order
};

// Planner-side state of one foreign relation (baserel->fdw_private).
struct RelInfo {
    TableInfo *table;
    List *remote_conds;  // RestrictInfos
    List *local_conds;
    Bitmapset *attrs_used;
};

// Indexes into ForeignScan.fdw_private (scans and direct modifications).
enum PrivateIndex {
    PRIV_SQL,
    PRIV_RETRIEVED,
    PRIV_NPARAMS,
    PRIV_KEY_KINDS,
    PRIV_HAS_WHERE,
    PRIV_SET_PROCESSED,  // direct modifications only
};

// May ereport (unknown sharding key column): call from plain frames.
TableInfo *get_table_info(Oid relid);
// Connection parameters of the server's user mapping for `userid`. C++: call inside guarded().
ConnParams conn_params_for(Oid serverid, Oid userid);

// ---- deparse (deparse.cpp): plain C style -------------------------------------------------
// True when `expr` can be evaluated by Picodata (columns of `rel`, constants, parameters and the
// supported operators).
bool is_foreign_expr(PlannerInfo *root, RelOptInfo *rel, Expr *expr);
// SELECT <attrs_used> FROM <table> [WHERE <remote_conds>]; fills retrieved_attrs (attnums in
// select-list order) and params (expressions sent as $1..$n). *has_where tells whether a WHERE
// clause was written.
void deparse_select(StringInfo buf, PlannerInfo *root, RelOptInfo *rel, Relation relation,
                    TableInfo *table, Bitmapset *attrs_used, List *remote_conds,
                    List **retrieved_attrs, List **params, bool *has_where);
// UPDATE <table> SET col = expr, ... [WHERE ...] / DELETE FROM <table> [WHERE ...].
void deparse_update(StringInfo buf, PlannerInfo *root, RelOptInfo *rel, Relation relation,
                    TableInfo *table, List *target_attrs, List *target_exprs, List *remote_conds,
                    List **params, bool *has_where);
void deparse_delete(StringInfo buf, PlannerInfo *root, RelOptInfo *rel, Relation relation,
                    TableInfo *table, List *remote_conds, List **params, bool *has_where);
// INSERT INTO <table> (cols) VALUES ($1, ...), (...) for `nrows` rows.
void deparse_insert(StringInfo buf, Relation relation, TableInfo *table, List *target_attrs,
                    int nrows);
const char *quote_remote_identifier(const char *name);

// ---- routing at plan time (scan.cpp) ---------------------------------------------------------
enum KeyKind { KEY_SCALAR = 1, KEY_ARRAY = 2, KEY_NULL = 3 };
// When the AND-ed `conds` fix every sharding-key column (=, = ANY, IS NULL with constants or
// parameters), returns one KeyKind per key column and appends the value expressions (one per
// scalar/array key; none for IS NULL) to *key_exprs. Otherwise NIL.
List *analyze_key_clauses(TableInfo *table, Index relid, List *conds, List **key_exprs);

// ---- routed execution shared by scans and direct modifications (scan.cpp) --------------------
struct RoutedStatement {
    TableInfo *table;
    Relation rel;
    char *sql;
    bool has_where;
    bool is_write;
    int nparams;
    List *param_states;  // ExprState per $n
    FmgrInfo *param_out;
    List *key_kinds;   // IntList or NIL
    List *key_states;  // ExprState per key expression
    Oid *key_types;
    // results
    PGresult **results;
    int nresults;
    char *routing;  // description of the last decision (EXPLAIN ANALYZE, errors)
    MemoryContextCallback cleanup;
};

// Prepares a RoutedStatement for a ForeignScanState (params and key expressions initialised).
RoutedStatement *init_routed_statement(PlanState *ps, TableInfo *table, Relation rel, char *sql,
                                       bool has_where, bool is_write, List *fdw_exprs, int nparams,
                                       List *key_kinds);
// Evaluates parameters and keys, routes, runs the statement on its instance(s) and keeps the
// results. Plain entry point (may ereport).
void execute_routed(RoutedStatement *st, ExprContext *econtext);
// Routing as it would be decided now, for EXPLAIN without ANALYZE.
// True when the routing depends on parameters whose values EXPLAIN does not have.
bool routing_params_unknown(RoutedStatement *st, ExprContext *econtext);
// Sets *routing to the description and, when the statement goes to a single instance, *sql to the
// statement as sent (with its bucket filter); *sql is left alone otherwise.
void explain_routing(RoutedStatement *st, ExprContext *econtext, bool params_unknown,
                     const char **routing, const char **sql);
// EXPLAIN's "Remote SQL" and "Routing" lines of a scan or a direct modification.
void explain_remote(RoutedStatement *st, ForeignScanState *node, ExplainState *es);
void release_results(RoutedStatement *st);

// ---- callbacks implemented in modify.cpp and import.cpp -------------------------------------
void install_modify_callbacks(struct FdwRoutine *routine);
List *import_foreign_schema(ImportForeignSchemaStmt *stmt, Oid serverOid);

}  // namespace picoroute::pg::fdw
