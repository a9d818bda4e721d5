// Options of picoroute foreign tables, servers and user mappings, resolved from the catalogs
// (options.cpp; table_cache.h keeps them per backend).
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/pg_list.h"
}

#include "core/capabilities.h"
#include "pg/key_datum.h"
#include "pg/remote/connection.h"
#include <string>

namespace picoroute::pg::fdw {

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
// The same read from the catalogs and the map, uncached (options.cpp). C++: inside guarded().
ConnParams build_conn_params(Oid serverid, Oid userid);

// Refuses (ereport) a remote table or column name that Picodata cannot take quoted: one that
// contains a double quote. `what` names the kind of object in the message.
void check_remote_name(const char *name, const char *what);

}  // namespace picoroute::pg::fdw
