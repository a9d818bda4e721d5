// The routed statement's data: what its plan node decided (RemoteStatement, RoutedSetup: const
// once execution begins) and the state of its executions, grouped by concern. routed.h runs it.
#pragma once

extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "nodes/execnodes.h"
#include "utils/rel.h"
}

#include "pg/fdw/keys.h"
#include "pg/fdw/options.h"
#include "pg/fdw/plan_private.h"
#include "pg/remote/connection.h"
#include "pg/remote/write_ledger.h"

namespace picoroute::pg::remote {
class ChunkedRead;
class RowStream;
}  // namespace picoroute::pg::remote

namespace picoroute::pg::fdw {

// The statement a routed execution sends, as its plan node decided it: the plan's StatementPlan
// and what its kind adds. Never written once execution begins.
struct RemoteStatement {
    StatementPlan plan;
    bool is_write = false;
    const char *tail = nullptr;  // after the bucket filter: a pushed upper relation's GROUP BY ...
    // A base scan's LIMIT, written after the bucket filter of each of its statements (0: none):
    // the most rows the query can use of this scan (scan.cpp, scan_row_limit).
    int64 row_limit = 0;
    // The bucket filter's column (nullptr: bucket_id; a join's "r1"."bucket_id").
    const char *bucket_column = nullptr;
    // A base scan: the offset in sql of its " FROM ..." (the count of a chunked read starts
    // there); 0: the statement is never read in chunks (chunked.h).
    int chunk_from = 0;
};

// Whom a routed statement runs for and how, fixed when execution begins.
struct RoutedSetup {
    TableInfo *table = nullptr;
    Relation rel = nullptr;
    // Whose user mapping: the view owner's through a view (ForeignScan.checkAsUser); InvalidOid:
    // the current user.
    Oid userid = InvalidOid;
    // Whether executions describe their decision into last.routing: only when the executor is
    // instrumented (EXPLAIN ANALYZE, auto_explain.log_analyze); an EXPLAIN of a plan that ran
    // without it describes the decision its keys give at that time (explain_routing).
    bool describe = true;
    // A pushed ORDER BY or LIMIT with a local plan for the same rows (upper.cpp): Picodata's
    // row-limit error, which comes before any row, ends the execution without results and sets
    // last.row_limit_exceeded instead of being raised.
    bool row_limit_fallback = false;
};

// How the $n parameters are evaluated and written (init_routed_statement).
struct RoutedParams {
    List *states = NIL;  // ExprState per $n
    FmgrInfo *out = nullptr;
    int32 *typmods = nullptr;  // per $n: the numeric(p,s) typmod to rescale its value to, or -1
    bool *trim = nullptr;      // per $n: a character(n) value, sent without its trailing blanks
    bool need_modes = false;   // some $n is written by an output function the settings change
};

// The answers of the current execution: whole results, or a stream (with a chunked read before
// it goes on).
struct RoutedAnswers {
    PGresult **results = nullptr;
    int nresults = 0;
    RowStream *stream = nullptr;
    ChunkedRead *chunked = nullptr;  // a streamed job read in chunks (chunked.h)
};

// The last execution's routing decision.
struct RoutedDecision {
    bool keyless = false;             // the statement went without a key
    char *routing = nullptr;          // its description (EXPLAIN ANALYZE)
    bool row_limit_exceeded = false;  // see RoutedSetup::row_limit_fallback
};

// What every execution sent beyond its statements (EXPLAIN ANALYZE).
struct RoutedCounts {
    uint32 chunks = 0;      // chunk statements of finished chunked reads
    uint32 sent_again = 0;  // statements sent again
};

// A remote statement routed per execution, shared by scans, pushed joins and upper relations,
// direct modifications, batched joins and TRUNCATE. What the plan decided (statement, setup) is
// const; routed.cpp and chunked.cpp write the rest.
struct RoutedStatement {
    const RemoteStatement *statement;
    const RoutedSetup *setup;
    RoutedParams params;
    RoutedKeys keys;
    RoutedAnswers answers;
    RoutedDecision last;
    RoutedCounts counts;
    // A write's log (remote/write_ledger.h): created with the first execution in the statement's
    // memory, unless the caller gives one that outlives it (a TRUNCATE of several tables).
    WriteLog *log = nullptr;
    MemoryContextCallback cleanup;
};

}  // namespace picoroute::pg::fdw
