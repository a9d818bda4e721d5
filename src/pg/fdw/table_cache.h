// What a backend keeps per foreign table and per user mapping (table_cache.cpp): a table's
// resolved options, connection parameters, where its reads go, and whose user mapping applies.
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/parsenodes.h"
}

#include "pg/fdw/options.h"
#include "pg/lookup.h"
#include "pg/remote/leader_reads.h"

namespace picoroute::pg::fdw {

// May ereport (unknown sharding key column): call from plain frames. A copy, in the current memory
// context, of what a backend-local cache keeps per foreign table (table_cache.cpp): the options are
// read again after a change of the table, its server or the map (the map gives the default tier and
// the detected version).
TableInfo *get_table_info(Oid relid);
// Connection parameters of the server's user mapping for `userid`: a copy of what the backend-local
// cache keeps (table_cache.cpp; read again after a change of a server, a user mapping, a role or
// the map). C++: call inside guarded().
ConnParams conn_params_for(Oid serverid, Oid userid);
// Where the reads of `table` go now: the server's read_preference, or the leaders when the table
// is unlogged, the session learned that its server's reads must be leader reads, or the current
// transaction wrote through its server (remote/leader_reads.h).
ReadPref table_read_pref(const TableInfo *table);
// The connection parameters of those reads: conn_params_for, saying read_preference=leader when
// table_read_pref is the leader and the server names another. C++: inside guarded().
ConnParams read_conn_params(const TableInfo *table, Oid userid);

// The user whose user mapping a statement uses: the owner of the view it came through
// (RangeTblEntry.checkAsUser), else the current user, as postgres_fdw does.
Oid user_for_rte(RangeTblEntry *rte);

}  // namespace picoroute::pg::fdw
