// What picoroute's plan nodes carry to the executor: one plain struct per node kind, each with one
// encode (to the List PostgreSQL keeps in the plan) and one decode, in plan_private.cpp. Every
// read of a picoroute ForeignScan's fdw_private or of the fdw_private list of a ModifyTable goes
// through decode; an optional attribute is a field with a stated "none" value.
//
// The executor side (RoutedStatement, routed_statement.h) keeps the decoded struct as it is: what
// the plan decided, never written during execution.
//
// Planning code is written in plain C style (palloc, List, StringInfo) and holds no C++ objects, so
// a PostgreSQL error may leave it at any point. Execution code that routes and talks to instances
// runs inside guarded() and reaches PostgreSQL through pg_call (routed.h).
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/nodes.h"
#include "nodes/pg_list.h"
}

namespace picoroute::pg::fdw {

// What a picoroute ForeignScan runs: one foreign table (scan.cpp), a pushed join (join.cpp),
// aggregates, ORDER BY or LIMIT pushed over either (upper.cpp), or an UPDATE or DELETE as one
// remote statement (direct_modify.cpp). Recorded first in fdw_private.
enum class PlanKind { BaseScan = 0, Join = 1, Upper = 2, DirectModify = 3 };

// The remote statement of a plan node and what routes it; shared by every ForeignScan kind.
struct StatementPlan {
    char *sql = nullptr;  // as written, before any bucket filter, LIMIT or OPTION clause
    bool has_where = false;
    int nparams = 0;  // values sent as $1..$n: the first nparams of fdw_exprs
    // One KeyKind (keys.h) per sharding-key column when the clauses sent fix the key (their
    // expressions follow the parameters in fdw_exprs); NIL: routed without a key.
    List *key_kinds = NIL;
    int where_chains = 0;  // OR-of-AND chains Picodata expands the WHERE clause into (0: unknown)
};

// A scan of one foreign table (scanrelid > 0).
struct BaseScanPlan {
    StatementPlan statement;
    List *retrieved_attrs = NIL;  // attnums in select-list order
    // A lookup per outer row (a parameterized path whose join clauses fix the key): its few rows
    // are read whole.
    bool lookup = false;
    int from_offset = 0;  // offset of " FROM" in the statement, for a chunked read (chunked.h)
    // The rows the query can use of this scan (LIMIT n OFFSET m over this table alone, every
    // clause sent: n + m), sent as LIMIT with each statement; 0: every row.
    int64 row_limit = 0;
    // The key compared with an array computed at execution (array_key.h), the last of fdw_exprs:
    // the key column, quoted, and the values per statement; nullptr and 0: none.
    char *array_column = nullptr;
    int array_max_values = 0;
};

// A join (PlanKind::Join) or an upper relation (PlanKind::Upper) pushed to Picodata, scanrelid 0.
struct PushedScanPlan {
    PlanKind kind = PlanKind::Upper;
    StatementPlan statement;
    char *tail = nullptr;  // written after the bucket filter: GROUP BY ... LIMIT; nullptr: none
    int64 offset = 0;      // rows skipped here (OFFSET, which Picodata's grammar lacks)
    // The range-table index of the table whose key routes a join (its columns are "r<anchor>");
    // 0: the only table of fs_relids (an upper relation over one table).
    Index anchor = 0;
    // What Picodata computes for this node beyond reading rows (picoroute_stat_tables' pushed_*):
    // kPushedAggregate | kPushedSort | kPushedJoin; 0: nothing.
    int work = 0;
};

constexpr int kPushedAggregate = 1;
constexpr int kPushedSort = 2;
constexpr int kPushedJoin = 4;

// An UPDATE or DELETE run remotely as one statement (PlanKind::DirectModify).
struct DirectModifyPlan {
    StatementPlan statement;
    bool set_processed = false;  // ModifyTable.canSetTag: the rows count in es_processed
};

// The fdw_private list of a ModifyTable for a picoroute table (PlanForeignModify): an INSERT, or
// an UPDATE or DELETE written row by row (row_modify.h). A partition reached by tuple routing has
// none (NIL decodes to an INSERT whose target_attrs is NIL: every insertable column).
struct ModifyPlan {
    bool row_by_row = false;
    CmdType operation = CMD_INSERT;
    List *target_attrs = NIL;  // INSERT: the columns sent; UPDATE: the columns set
};

// The kind of the ForeignScan whose fdw_private is `fdw_private`.
PlanKind plan_kind(List *fdw_private);

List *encode(const BaseScanPlan &plan);
List *encode(const PushedScanPlan &plan);
List *encode(const DirectModifyPlan &plan);
List *encode(const ModifyPlan &plan);
BaseScanPlan decode_base_scan(List *fdw_private);
PushedScanPlan decode_pushed_scan(List *fdw_private);
DirectModifyPlan decode_direct_modify(List *fdw_private);
ModifyPlan decode_modify(List *fdw_private);

}  // namespace picoroute::pg::fdw
