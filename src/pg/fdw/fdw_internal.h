// Shared pieces of the picoroute foreign data wrapper: what the files of src/pg/fdw/ give each
// other (the README's "Layout" says what each file does).
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
#include "foreign/fdwapi.h"
#include "funcapi.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
#include "nodes/pg_list.h"
#include "lib/stringinfo.h"
}

#include "core/capabilities.h"
#include "pg/remote/connection.h"
#include "pg/remote/leader_reads.h"
#include "pg/remote/rounds.h"
#include "pg/remote/write_ledger.h"
#include "pg/key_datum.h"
#include "pg/lookup.h"
#include "pg/sql_common.h"

namespace picoroute::pg::remote {
class RowStream;
}

namespace picoroute::pg::fdw {

class ChunkedRead;

// The FDW runs its statements through the remote layer (pg/remote/).
using namespace picoroute::pg::remote;

enum class Scatter { Coordinator = 0, Masters = 1 };

// The row limit Picodata applies when nothing overrides it (cluster setting sql_motion_row_max).
constexpr int kDefaultMotionRowMax = 5000;

// Options of a foreign table and its server, resolved. palloc'd (get_table_info gives each caller
// its own copy).
struct TableInfo {
    Oid relid;
    Oid serverid;
    char *server_name;
    char *tier;          // server option tier (server_tier_name)
    int scatter;         // Scatter
    int read_pref;       // ReadPref
    char *remote_table;  // table_name or the foreign table's name
    bool global;         // distribution 'global'
    // An unlogged Picodata table (not replicated: only the leaders have its rows): the table
    // option unlogged 'true', or _pico_table.opts said so at the first use (declcheck.cpp).
    bool unlogged;
    int batch_size;
    // The version capabilities are looked up for (core/capabilities.h): the server option
    // picodata_version when given (an override), else the cluster's detected version (the lowest
    // of its online instances), "" (no capability) while none is known.
    const char *picodata_version;
    // How that version hashes a sharding key (core/bucket_hash.h), and what it can do, looked up
    // once with the version.
    HashRule hash_rule;
    caps::CapabilitySet capabilities;
    bool exec_options;    // execution_options 'on': OPTION (...) and startup options are sent
    int motion_row_max;   // sql_motion_row_max of the table, else the server; -1 when not given
    int vdbe_opcode_max;  // sql_vdbe_opcode_max, likewise
    bool push_upper;      // pushdown_aggregates 'on': aggregates, ORDER BY, LIMIT go to Picodata
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
// Scans only, at the index direct modifications use for PRIV_SET_PROCESSED: true for a lookup per
// outer row (a parameterized path whose join clauses fix the sharding key).
constexpr int PRIV_LOOKUP = PRIV_SET_PROCESSED;
// Scans and direct modifications: where_dnf_chains of the clauses sent (an Integer).
constexpr int PRIV_WHERE_CHAINS = PRIV_SET_PROCESSED + 1;
// Scans only: the offset of " FROM" in the statement (an Integer), for a chunked read.
constexpr int PRIV_FROM = PRIV_WHERE_CHAINS + 1;
// Scans only: the rows the query can use of this scan (a LIMIT n OFFSET m over this table alone,
// every clause sent: n + m), sent as LIMIT with each statement; 0: every row (an Integer).
constexpr int PRIV_ROW_LIMIT = PRIV_FROM + 1;
// Scans only: a key compared with an array computed at execution (array_key.cpp), the last of
// fdw_exprs: the key column, quoted ("" when none: a String), and the values per statement.
constexpr int PRIV_ARRAY_COLUMN = PRIV_ROW_LIMIT + 1;
constexpr int PRIV_ARRAY_MAX = PRIV_ARRAY_COLUMN + 1;

// May ereport (unknown sharding key column): call from plain frames. A copy, in the current memory
// context, of what a backend-local cache keeps per foreign table (table_cache.cpp): the options are
// read again after a change of the table, its server or the map (the map gives the default tier and
// the detected version).
TableInfo *get_table_info(Oid relid);
// The same read from the catalogs and the map, uncached (options.cpp).
TableInfo *build_table_info(Oid relid);
// The tier of a server: its option `tier` when given, else the tier the catalog flags as the
// default (_pico_tier.is_default, from the map), else "default". C++ context (reads the map).
std::string server_tier_name(const char *option);
// The startup "options" value for a server (Picodata syntax name=value,...), "" for none.
// `picodata_version`: the server option (nullptr: the detected version); where the version has
// them, the connection names its read_preference (the server's, leader when unset: from 26.1 a
// session that names none takes the cluster's setting) and asks for errors on invalidated
// prepared statements (pico_stmt_invalidation=true). Nothing with execution_options 'off'.
std::string startup_options(const char *execution_options, const char *read_preference,
                            const char *picodata_version);
// The read_preference those options name, "" for none.
std::string startup_read_preference(const char *execution_options, const char *read_preference,
                                    const char *picodata_version);
// Refuses (ereport) a remote table or column name that Picodata cannot take quoted: one that
// contains a double quote. `what` names the kind of object in the message.
void check_remote_name(const char *name, const char *what);
// The trailing " OPTION (...)" of a statement on `table`, "" for none. The table's or server's
// sql_motion_row_max and sql_vdbe_opcode_max are sent when given. Otherwise, for a `keyless`
// statement (a scatter, a global table, a coordinator): the instruction limit is lifted (it bounds
// the work of a storage, not a coordinator's memory), and the row limit is
// picoroute.keyless_row_max for a read that `gathers` its rows at a coordinator, lifted (0) for an
// UPDATE or DELETE (its rows stay on each storage).
std::string option_clause(const TableInfo *table, bool keyless, bool gathers = true);
// The row bound of a keyless read of `table`: its sql_motion_row_max option when given, else
// picoroute.keyless_row_max (0: none).
int keyless_row_bound(const TableInfo *table);
// " OPTION (sql_motion_row_max = rows, ...)" (rows < 0: not written), with the instruction limit of
// a keyless statement when `lift_opcodes`; "" when execution_options is off.
std::string option_clause_rows(const TableInfo *table, int rows, bool lift_opcodes);
// The most rows one INSERT ... VALUES may carry for `table` (0: no limit).
int insert_row_limit(const TableInfo *table);

// ---- declarations checked against the cluster (declcheck.cpp) --------------------------------
// At the first use of a table in a session (and after each change of the map): errors when the
// table's sharding key, tier, distribution or key column types disagree with _pico_table.
void check_declaration_at_first_use(TableInfo *table, Oid userid);

// ---- values in Picodata's format (dialect.cpp) ---------------------------------------------
// Sets DateStyle ISO, IntervalStyle postgres, extra_float_digits 3 and TimeZone UTC for the
// output functions that write values sent to Picodata, like postgres_fdw's
// set_transmission_modes; returns the GUC nest level to pass to reset_transmission_modes.
int set_transmission_modes();
void reset_transmission_modes(int nestlevel);
// Whether the text of a value of `type` may depend on the settings set_transmission_modes sets
// (false only for built-in types whose output never reads them: integers, numeric, text...).
bool output_needs_transmission_modes(Oid type);
// A numeric value rounded to the scale of `typmod` when that is exact (no digit lost, no
// overflow); the value itself otherwise. Picodata hashes a decimal with its scale.
Datum numeric_to_typmod(Datum value, int32 typmod);
// Cuts the trailing blanks of a character(n) value's text in place: picoroute sends character(n)
// values as PostgreSQL compares them (shippable.cpp).
void trim_trailing_blanks(char *text);
// Refuses a non-NULL value for a json/jsonb column (a Picodata map, array or any column): Picodata
// cannot take such values as parameters.
void refuse_json_value(Relation rel, AttrNumber attnum);
// Connection parameters of the server's user mapping for `userid`: a copy of what the backend-local
// cache keeps (table_cache.cpp; read again after a change of a server, a user mapping, a role or
// the map). C++: call inside guarded().
ConnParams conn_params_for(Oid serverid, Oid userid);
// The same read from the catalogs and the map, uncached (options.cpp). C++: inside guarded().
ConnParams build_conn_params(Oid serverid, Oid userid);
// Where the reads of `table` go now: the server's read_preference, or the leaders when the table
// is unlogged, the session learned that its server's reads must be leader reads, or the current
// transaction wrote through its server (remote/leader_reads.h).
ReadPref table_read_pref(const TableInfo *table);
// The connection parameters of those reads: conn_params_for, saying read_preference=leader when
// table_read_pref is the leader and the server names another. C++: inside guarded().
ConnParams read_conn_params(const TableInfo *table, Oid userid);

// ---- what Picodata can evaluate (shippable.cpp): plain C style -------------------------------
// True when `expr` can be evaluated by Picodata (columns of `rel`, constants, parameters, values
// of an outer row and the supported operators).
bool is_foreign_expr(PlannerInfo *root, RelOptInfo *rel, Expr *expr);
// A value computed here for each outer row and sent as a parameter: an expression over columns of
// other relations of the same query level (the other side of a join clause, a lateral reference),
// with no column of relation `relid`, no volatile function, no subquery, aggregate or placeholder.
bool is_outer_value(Node *node, Index relid);
// A length coercion (varchar(n), character(n), numeric(p,s), timestamptz(p)) of a value with no
// column, no volatile function and no subquery: evaluated here and sent as a parameter, so that
// Picodata gets the value PostgreSQL would store and PostgreSQL raises its own errors.
bool is_local_coercion(Node *node);
// is_local_coercion or is_outer_value: a value computed here and sent as $n.
bool is_local_value(Node *node, Index relid);
// The kinds of operators Picodata implements with PostgreSQL's meaning (shippable.cpp decides,
// deparse.cpp writes them).
enum class OpKind { None, Compare, Order, Arith, Negate, Like, NotLike, ILike, NotILike };

struct RemoteOp {
    OpKind kind = OpKind::None;
    const char *spelling = nullptr;
};
// The remote form of a builtin operator with `nargs` arguments (the allow-list); kind None when
// Picodata has no operator with its meaning.
RemoteOp remote_operator(Oid opno, int nargs);

// ---- deparse (deparse.cpp): plain C style -------------------------------------------------
// SELECT <attrs_used> FROM <table> [WHERE <remote_conds>]; fills retrieved_attrs (attnums in
// select-list order) and params (expressions sent as $1..$n). *has_where tells whether a WHERE
// clause was written; *from_offset, when given, the offset in buf of " FROM".
void deparse_select(StringInfo buf, PlannerInfo *root, RelOptInfo *rel, Relation relation,
                    TableInfo *table, Bitmapset *attrs_used, List *remote_conds,
                    List **retrieved_attrs, List **params, bool *has_where,
                    int *from_offset = nullptr);
// UPDATE <table> SET col = expr, ... [WHERE ...] / DELETE FROM <table> [WHERE ...].
void deparse_update(StringInfo buf, PlannerInfo *root, RelOptInfo *rel, Relation relation,
                    TableInfo *table, List *target_attrs, List *target_exprs, List *remote_conds,
                    List **params, bool *has_where);
void deparse_delete(StringInfo buf, PlannerInfo *root, RelOptInfo *rel, Relation relation,
                    TableInfo *table, List *remote_conds, List **params, bool *has_where);
// Writes `constant` as a statement of `relid` carries it: a literal, or $n (appended to *params)
// for a value that goes as a parameter. The route check writes its sample keys so.
void deparse_constant(StringInfo buf, Oid relid, Const *constant, List **params);
// INSERT INTO <table> (cols) VALUES ($1, ...), (...) for `nrows` rows.
void deparse_insert(StringInfo buf, Relation relation, TableInfo *table, List *target_attrs,
                    int nrows);
const char *quote_remote_identifier(const char *name);
// Writes one expression over the tables of a pushed join (is_foreign_expr with the join relation
// accepted it): every column as "r<range table index>"."name". Between set_transmission_modes and
// reset_transmission_modes.
void deparse_join_expr(StringInfo buf, PlannerInfo *root, Node *expr, List **params);
// Writes one expression that is_foreign_expr accepted (columns of `relid`, aggregates included).
// Call between set_transmission_modes and reset_transmission_modes.
void deparse_expr(StringInfo buf, Oid relid, Node *expr, List **params);

// ---- key analysis (keys.cpp) -----------------------------------------------------------------
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

struct RoutedStatement;
// Evaluated sharding-key values of one execution.
struct KeyValues {
    int n;
    Datum *values;
    bool *nulls;
    Oid type;
};
// Evaluates the key expressions of `st`, one KeyValues per key column (nullptr when the statement
// has no key kinds). Plain: may ereport.
KeyValues *evaluate_keys(RoutedStatement *st, ExprContext *econtext);

// ---- the route check (route_check.cpp) ----------------------------------------------------------
// Where keyed statements of a table go: by picoroute's bucket, or through a coordinator because
// Picodata hashes the key differently (see pg/route_checks.h).
enum class KeyRoute { ByBucket, Coordinator };
// For statements of `table` whose sharding-key values have `types` (one per key column, in key
// order): the recorded verdict of the current Picodata version; with `may_check` and none recorded
// (or one due for a retry), the check runs first, bounded in time, as user `userid` (whose user
// mapping the statements use). Never fails the statement for a check that cannot run. C++ context
// (inside guarded()).
KeyRoute key_route(const TableInfo *table, const Oid *types, int ntypes, Oid userid,
                   bool may_check = true);

// ---- routed execution shared by scans, pushed joins and upper relations, and direct
// modifications (routed.cpp) ------------------------------------------------------------------
struct RoutedStatement {
    TableInfo *table;
    Relation rel;
    char *sql;
    char *tail;  // written after the bucket filter (GROUP BY ... LIMIT of a pushed upper relation)
    // A base scan's LIMIT, written after the bucket filter of each of its statements (0: none):
    // the most rows the query can use of this scan (scan.cpp, scan_row_limit).
    int64 row_limit;
    const char
        *bucket_column;  // the bucket filter's column (null: bucket_id; a join's "r1"."bucket_id")
    bool has_where;
    bool is_write;
    int nparams;
    int where_chains;    // the WHERE clause's OR-of-AND chains (0: not known, counted as 1)
    List *param_states;  // ExprState per $n
    FmgrInfo *param_out;
    int32 *param_typmods;    // per $n: the numeric(p,s) typmod to rescale its value to, or -1
    bool *param_trim;        // per $n: a character(n) value, sent without its trailing blanks
    bool params_need_modes;  // some $n is written by an output function the settings change
    List *key_kinds;         // IntList or NIL
    List *key_states;        // ExprState per key expression
    Oid *key_types;
    int32 *key_typmods;  // per key column: its typmod (numeric scale before hashing)
    Oid userid;  // whose user mapping: the view owner's through a view (ForeignScan.checkAsUser)
    // results
    PGresult **results;
    int nresults;
    RowStream *stream;  // a streaming scan's answers (instead of results)
    // A base scan: the offset in sql of its " FROM ..." (the count of a chunked read starts
    // there); 0: the statement is never read in chunks (chunked.h).
    int chunk_from;
    bool keyless;          // the last routing decision sent the statement without a key
    ChunkedRead *chunked;  // a streamed job read in chunks (chunked.h), before the stream goes on
    uint32 chunks;         // chunk statements of finished chunked reads (EXPLAIN ANALYZE)
    char *routing;         // description of the last decision (EXPLAIN ANALYZE)
    // Whether executions describe their decision into `routing`: only when the executor is
    // instrumented (EXPLAIN ANALYZE, auto_explain.log_analyze); an EXPLAIN of a plan that ran
    // without it describes the decision its keys give at that time (explain_routing).
    bool describe;
    uint32 sent_again;  // statements sent again by every execution (EXPLAIN ANALYZE)
    // A pushed ORDER BY or LIMIT with a local plan for the same rows (upper.cpp): Picodata's
    // row-limit error, which comes before any row, ends the execution without results and sets
    // row_limit_exceeded instead of being raised.
    bool row_limit_fallback;
    bool row_limit_exceeded;
    // A write's log (remote/write_ledger.h): created with the first execution in the statement's
    // memory, unless the caller gives one that outlives it (a TRUNCATE of several tables).
    WriteLog *log;
    MemoryContextCallback cleanup;
};

// A RoutedStatement without parameters or key expressions, in a memory context of its own under
// `parent` (deleting it frees the results): a statement sent as written, without a sharding key.
RoutedStatement *new_routed_statement(MemoryContext parent, TableInfo *table, Relation rel,
                                      char *sql, bool has_where, bool is_write);
// Prepares a RoutedStatement for a ForeignScanState (params and key expressions initialised).
RoutedStatement *init_routed_statement(PlanState *ps, TableInfo *table, Relation rel, char *sql,
                                       bool has_where, bool is_write, List *fdw_exprs, int nparams,
                                       List *key_kinds);
// Evaluates parameters and keys, routes, runs the statement on its instance(s) and keeps the
// results. Plain entry point (may ereport).
void execute_routed(RoutedStatement *st, ExprContext *econtext);
// The same with the values already computed: `values` the text of $1..$nparams (nullptr = NULL),
// `keys` one KeyValues per entry of st->key_kinds (a batched join's key list). Plain entry point.
void execute_routed_values(RoutedStatement *st, const char **values, KeyValues *keys);
// The text values of st's $1..$nparams (param_states) for one execution. Plain: may ereport.
const char **evaluate_routed_params(RoutedStatement *st, ExprContext *econtext);
// One batch of a batched join (batch_exec.cpp): the statement `base` (SELECT ... FROM t [WHERE
// ...], with `ncond` parameters whose values are `cond_values`) restricted to a list of values of
// the single sharding-key column `column` (quoted): "<base> AND|WHERE column IN ($ncond+1, ...)".
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
// st->results. st->key_kinds must hold one entry. Returns the number of statements sent. Plain.
int execute_batched(RoutedStatement *st, const BatchedLookup &b, KeyValues *keys,
                    const char **key_texts);
// A scan's sharding key compared with an array computed at execution (array_key.cpp): the array
// is evaluated once per execution and its distinct values sent as key lists, by owner.
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
// Evaluates the array and runs the key lists (execute_batched): the answers in st->results.
void execute_array_key(RoutedStatement *st, ArrayKey *ak, ExprContext *econtext);
void explain_array_key(RoutedStatement *st, const ArrayKey *ak, ExplainState *es);
// The same for a scan that reads its rows as they arrive: sends the statement(s) and keeps a
// RowStream in st->stream (none when no row can match). `ncols`: columns each row must have.
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

// ---- what a ForeignScan of picoroute reads (handler.cpp dispatches on it) --------------------
// Base: one foreign table (scanrelid > 0, scan.cpp). Join: a pushed join (join.cpp). Upper:
// aggregates, ORDER BY or LIMIT pushed over one table or over a pushed join (upper.cpp). Join and
// Upper scans have scanrelid 0; their plan records the kind (UP_KIND below) and pushed_scan.cpp's
// executor callbacks run both.
enum class ScanKind { Base = 0, Join = 1, Upper = 2 };

// ---- scans of one foreign table (scan.cpp) ------------------------------------------------------
void scan_rel_size(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid);
void scan_paths(PlannerInfo *root, RelOptInfo *baserel, Oid foreigntableid);
ForeignScan *scan_foreign_plan(PlannerInfo *root, RelOptInfo *baserel, ForeignPath *path,
                               List *tlist, List *scan_clauses, Plan *outer_plan);
void scan_begin(ForeignScanState *node, int eflags);
TupleTableSlot *scan_iterate(ForeignScanState *node);
void scan_rescan(ForeignScanState *node);
void scan_end(ForeignScanState *node);
void scan_explain(ForeignScanState *node, ExplainState *es);

// ---- upper-relation pushdown (upper.cpp): aggregates, ORDER BY, LIMIT ----------------------
// Indexes into the fdw_private of a ForeignScan with scanrelid 0: a pushed upper relation, or a
// pushed join, which adds UP_ANCHOR (the range-table index of the table whose key routes it).
enum PushedPrivate {
    UP_SQL,
    UP_TAIL,
    UP_NPARAMS,
    UP_KEY_KINDS,
    UP_HAS_WHERE,
    UP_OFFSET,
    UP_KIND,  // ScanKind::Join or ScanKind::Upper
    UP_ANCHOR
};
// GetForeignUpperPaths, and the plan of the ForeignScans (scanrelid 0) it creates.
void get_foreign_upper_paths(PlannerInfo *root, UpperRelationKind stage, RelOptInfo *input_rel,
                             RelOptInfo *output_rel, void *extra);
ForeignScan *upper_foreign_plan(PlannerInfo *root, RelOptInfo *rel, List *tlist, Plan *outer_plan);

// ---- executing pushed joins and upper relations (pushed_scan.cpp) -----------------------------
// The executor callbacks of a ForeignScan with scanrelid 0 (ScanKind Join or Upper); handler.cpp
// hands them over.
void pushed_begin(ForeignScanState *node, int eflags);
TupleTableSlot *pushed_iterate(ForeignScanState *node);
void pushed_rescan(ForeignScanState *node);
void pushed_end(ForeignScanState *node);
void pushed_explain(ForeignScanState *node, ExplainState *es);

// ---- join pushdown (join.cpp): two tables of one server joined where Picodata needs no motion --
// GetForeignJoinPaths, and the plan of a pushed join: a ForeignScan (scanrelid 0) that
// pushed_begin and the following callbacks run.
void get_foreign_join_paths(PlannerInfo *root, RelOptInfo *joinrel, RelOptInfo *outerrel,
                            RelOptInfo *innerrel, JoinType jointype, JoinPathExtraData *extra);
ForeignScan *join_foreign_plan(PlannerInfo *root, RelOptInfo *rel, List *tlist, Plan *outer_plan);
// For aggregates, ORDER BY and LIMIT over a pushed join (upper.cpp): whether `rel` is a pushed join
// whose tables both allow it (pushdown_aggregates); its " FROM ... JOIN ... ON ... [WHERE ...]"
// (true when WHERE was written); its routing: the key kinds of the table that routes it (NIL: a
// coordinator), the key expressions, and that table's range-table index.
bool upper_over_join_ok(RelOptInfo *rel);
bool deparse_join_from(StringInfo buf, PlannerInfo *root, RelOptInfo *joinrel, List **params);
List *join_routing(RelOptInfo *joinrel, List **key_exprs, Index *anchor);

// ---- modifications (modify.cpp, direct_modify.cpp) and IMPORT FOREIGN SCHEMA (import.cpp) ----
// INSERT and the row-by-row UPDATE / DELETE callbacks (row_modify.cpp writes the latter).
void install_modify_callbacks(struct FdwRoutine *routine);
// UPDATE and DELETE run remotely as one statement.
void install_direct_modify_callbacks(struct FdwRoutine *routine);
// Refuses (ereport) an UPDATE that would change a sharding-key column: the row would belong to
// another bucket.
void refuse_key_update(TableInfo *table, List *target_attrs);
// The user whose user mapping a statement uses: the owner of the view it came through
// (RangeTblEntry.checkAsUser), else the current user, as postgres_fdw does.
Oid user_for_rte(RangeTblEntry *rte);
List *import_foreign_schema(ImportForeignSchemaStmt *stmt, Oid serverOid);

// ---- TRUNCATE (truncate.cpp): ExecForeignTruncate -------------------------------------------
void truncate_foreign_tables(List *rels, DropBehavior behavior, bool restart_seqs);

// ---- ANALYZE (analyze.cpp): AnalyzeForeignTable ---------------------------------------------
bool analyze_foreign_table(Relation relation, AcquireSampleRowsFunc *func, BlockNumber *totalpages);

}  // namespace picoroute::pg::fdw
