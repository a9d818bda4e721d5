// Declarations checked against the cluster: a foreign table whose sharding key, tier (its
// server's tier option), distribution or key column types disagree with Picodata's `_pico_table`
// would look for its rows in the wrong buckets and silently find none.
//
// Checked at the first use of a table in a session (again whenever the topology map's generation
// changes), and on demand by picoroute_check_foreign_table(regclass). `_pico_table` is read by
// column name, on one online instance of the table's tier. At first use a check that cannot run
// (no instance reachable, no privilege on `_pico_table`, a table Picodata does not have) lets the
// statement go on and fail, if it must, with its own error; the function reports it.
//
// The check also learns whether the table is unlogged (`_pico_table.opts`, 26.1+): the reads of
// such a table go to the leaders (TableInfo.unlogged).
extern "C" {
#include "postgres.h"

#include "access/table.h"
#include "catalog/pg_type.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
}

#include "core/table_schema.h"
#include "pg/fdw/declcheck.h"
#include "pg/fdw/options.h"
#include "pg/fdw/table_cache.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/remote/connection.h"
#include "pg/remote/leader_reads.h"
#include "pg/remote/rounds.h"
#include "pg/lookup.h"
#include "pg/sql_common.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;
using namespace picoroute::pg::fdw;

namespace {

// What the foreign table declares, read in plain frames.
struct Declared {
    std::string table;   // local name
    std::string remote;  // Picodata name
    std::string server;
    std::string tier;
    bool global = false;
    // Which options the foreign table has, so that a hint's ALTER adds or sets each one as it
    // must (ADD of a present option and SET or DROP of an absent one fail).
    bool has_distribution = false;
    bool has_sharding_key = false;
    std::vector<std::string> key;  // column names in hashing order
    struct Column {
        std::string name;
        Oid type;
        std::string type_name;
    };
    std::vector<Column> key_columns;
};

// What `_pico_table` says.
struct Remote {
    bool found = false;
    bool global = false;
    std::string tier;
    std::vector<std::string> key;
    std::map<std::string, std::string> types;  // column -> Picodata type
    bool unlogged = false;                     // opts (26.1+) says so: leader-only reads
};

// The PostgreSQL type a Picodata key column type needs (nullptr when it cannot be a key), and
// the hash class of both.
const char *pg_type_for(const std::string &picodata_type) {
    const KeyType *canonical = key_type_for_picodata(picodata_type);
    return canonical == nullptr ? nullptr : canonical->sql_name;
}

HashClass class_of(const std::string &picodata_type) {
    const KeyType *canonical = key_type_for_picodata(picodata_type);
    return canonical == nullptr ? HashClass::None : canonical->hash_class;
}

// Whether `type` is the exact PostgreSQL type of the Picodata type (a narrower one of the same
// hash class hashes the same: a warning).
bool exact_type(const std::string &picodata_type, Oid type) {
    const KeyType *canonical = key_type_for_picodata(picodata_type);
    return canonical == nullptr || canonical->oid == type;
}

std::string join(const std::vector<std::string> &names) {
    std::string out;
    for (const std::string &n : names)
        out += (out.empty() ? "" : ", ") + n;
    return out;
}

// Reads the declaration (C++: inside guarded(); PostgreSQL is called through pg_call with plain
// data only).
Declared read_declared(Oid relid, TableInfo *t) {
    const char *table = nullptr;
    char **names = nullptr, **type_names = nullptr;
    Oid *types = nullptr;
    bool has_distribution = false, has_sharding_key = false;
    pg_call([&] {
        table = get_rel_name(relid);
        ListCell *lc;
        foreach (lc, GetForeignTable(relid)->options) {
            const char *name = lfirst_node(DefElem, lc)->defname;
            has_distribution = has_distribution || strcmp(name, "distribution") == 0;
            has_sharding_key = has_sharding_key || strcmp(name, "sharding_key") == 0;
        }
        names = static_cast<char **>(palloc0(sizeof(char *) * (t->nkeys + 1)));
        type_names = static_cast<char **>(palloc0(sizeof(char *) * (t->nkeys + 1)));
        types = static_cast<Oid *>(palloc0(sizeof(Oid) * (t->nkeys + 1)));
        for (int k = 0; k < t->nkeys; k++) {
            names[k] = get_attname(relid, t->key_attnums[k], false);
            types[k] = get_atttype(relid, t->key_attnums[k]);
            type_names[k] = format_type_be(types[k]);
        }
    });
    Declared d;
    d.table = table ? table : "?";
    d.remote = t->remote_table;
    d.server = t->server_name;
    d.tier = t->tier;
    d.global = t->global;
    d.has_distribution = has_distribution;
    d.has_sharding_key = has_sharding_key;
    for (int k = 0; k < t->nkeys; k++) {
        d.key.push_back(names[k]);
        d.key_columns.push_back({names[k], types[k], type_names[k]});
    }
    return d;
}

// Reads the table's row of `_pico_table` (C++: inside guarded()). Throws SqlError with
// ERRCODE_CONNECTION_FAILURE when no instance answers, or the remote error.
Remote read_remote(const Declared &d, Oid serverid, Oid userid) {
    Remote r;
    ConnParams params = conn_params_for(serverid, userid);
    std::vector<Job> jobs(1);
    {
        MapRef map = current_map();
        int32_t tier = map.view->find_tier(d.tier);
        jobs[0].target = tier != kNone ? spread_target(*map.view, tier, ReadPref::Leader, false)
                                       : coordinator_target(*map.view);
    }
    // Every column, read by name: `opts` exists from 26.1 only.
    jobs[0].sql = "SELECT * FROM \"_pico_table\" WHERE \"name\" = $1";
    jobs[0].values.push_back(d.remote.c_str());
    run_jobs(jobs, params, "", ReadPref::Leader, Retry::Never);
    const PGresult *res = jobs[0].result.get();
    if (PQntuples(res) == 0)
        return r;
    int distribution_col = PQfnumber(res, "distribution"), format_col = PQfnumber(res, "format"),
        opts_col = PQfnumber(res, "opts");
    if (distribution_col < 0 || format_col < 0)
        throw SqlError(ERRCODE_FDW_INVALID_DATA_TYPE,
                       "picoroute: _pico_table has no column distribution or format");
    r.found = true;
    try {
        r.unlogged = opts_col >= 0 && parse_table_unlogged(d.remote, PQgetvalue(res, 0, opts_col));
    } catch (const Error &e) {
        throw SqlError(ERRCODE_FDW_INVALID_DATA_TYPE, e.what());
    }
    try {
        nlohmann::json distribution = nlohmann::json::parse(PQgetvalue(res, 0, distribution_col));
        nlohmann::json format = nlohmann::json::parse(PQgetvalue(res, 0, format_col));
        if (distribution.contains("Global")) {
            r.global = true;
        } else if (distribution.contains("ShardedImplicitly")) {
            // [["col", ...], "murmur3", "<tier>"]
            const nlohmann::json &s = distribution["ShardedImplicitly"];
            for (const auto &c : s.at(0))
                r.key.push_back(c.get<std::string>());
            r.tier = s.size() >= 3 && s[2].is_string() ? s[2].get<std::string>()
                                                       : server_tier_name(nullptr);
        } else if (distribution.contains("ShardedByField")) {
            // [field, tier]
            const nlohmann::json &s = distribution["ShardedByField"];
            r.key.push_back(s.at(0).get<std::string>());
            r.tier = s.size() >= 2 && s[1].is_string() ? s[1].get<std::string>()
                                                       : server_tier_name(nullptr);
        }
        for (const auto &field : format)
            if (field.contains("name") && field.contains("field_type"))
                r.types[field["name"].get<std::string>()] = field["field_type"].get<std::string>();
    } catch (const nlohmann::json::exception &e) {
        throw SqlError(
            ERRCODE_FDW_INVALID_DATA_TYPE,
            "picoroute: cannot read _pico_table row of table \"" + d.remote + "\": " + e.what());
    }
    return r;
}

// The ALTER that declares `d` global (or sharded by `key`) from the options it has now.
std::string distribution_fix(const Declared &d, bool global, const std::vector<std::string> &key) {
    std::vector<std::string> changes;
    std::string verb = d.has_distribution ? "SET" : "ADD";
    if (global) {
        if (d.has_sharding_key)
            changes.push_back("DROP sharding_key");
        changes.push_back(verb + " distribution 'global'");
    } else {
        if (d.has_distribution)
            changes.push_back("SET distribution 'sharded'");
        changes.push_back(std::string(d.has_sharding_key ? "SET" : "ADD") + " sharding_key '" +
                          join(key) + "'");
    }
    return "ALTER FOREIGN TABLE " + d.table + " OPTIONS (" + join(changes) + ");";
}

// Tables whose narrower key type was warned about in this session: the check at first use runs
// again at each change of the map, and the warning needs saying once per session per table.
std::set<Oid> warned_narrow;

// Compares; throws the first disagreement, warns about types that hash the same (when `relid` is
// not yet in warned_narrow; InvalidOid: always).
void compare(const Declared &d, const Remote &r, Oid relid) {
    const int code = ERRCODE_FDW_INCONSISTENT_DESCRIPTOR_INFORMATION;
    std::string ft = "foreign table \"" + d.table + "\"";
    std::string pt = "Picodata table \"" + d.remote + "\"";
    if (r.global != d.global)
        throw SqlError(code,
                       "picoroute: " + ft + " is declared " + (d.global ? "global" : "sharded") +
                           ", but " + pt + " is " + (r.global ? "global" : "sharded"),
                       r.global ? "" : "Picodata shards it by (" + join(r.key) + ").",
                       distribution_fix(d, r.global, r.key));
    if (r.global)
        return;
    if (r.tier != d.tier)
        throw SqlError(
            code,
            "picoroute: " + pt + " is sharded in tier \"" + r.tier + "\", but " + ft +
                " is on server \"" + d.server + "\" of tier \"" + d.tier + "\"",
            "Its buckets would be looked up in the wrong tier.",
            "Create the foreign table on a server with OPTIONS (tier '" + r.tier + "').");
    if (r.key != d.key)
        throw SqlError(code,
                       "picoroute: " + ft + " declares sharding_key (" + join(d.key) + "), but " +
                           pt + " is sharded by (" + join(r.key) + ")",
                       "Rows would be looked for in the wrong buckets. The order matters: it is "
                       "the hashing order.",
                       "ALTER FOREIGN TABLE " + d.table + " OPTIONS (" +
                           (d.has_sharding_key ? "SET" : "ADD") + " sharding_key '" + join(r.key) +
                           "');");
    bool warn_narrow = relid == InvalidOid || warned_narrow.count(relid) == 0;
    for (const Declared::Column &c : d.key_columns) {
        auto it = r.types.find(c.name);
        if (it == r.types.end())
            throw SqlError(code,
                           "picoroute: " + pt + " has no column \"" + c.name +
                               "\" (sharding key column of " + ft + ")",
                           {}, "Check the column names of the foreign table.");
        const char *wanted = pg_type_for(it->second);
        if (hash_class(c.type) != class_of(it->second))
            throw SqlError(code,
                           "picoroute: sharding key column \"" + c.name + "\" of " + ft + " is " +
                               c.type_name + ", but Picodata column \"" + c.name + "\" is " +
                               it->second,
                           "Its values would hash differently from the rows Picodata stored: "
                           "statements would miss their rows.",
                           wanted ? "ALTER FOREIGN TABLE " + d.table + " ALTER COLUMN " + c.name +
                                        " TYPE " + wanted + ";"
                                  : "Picodata cannot shard by that type.");
        if (!exact_type(it->second, c.type) && warn_narrow) {
            if (relid != InvalidOid)
                warned_narrow.insert(relid);  // the other narrow columns still warn, this once
            std::string message = "picoroute: sharding key column \"" + c.name + "\" of " + ft +
                                  " is " + c.type_name + ", narrower than Picodata's " +
                                  it->second + " (" + (wanted ? wanted : "?") + ")";
            std::string hint = std::string("It hashes the same, but not every value fits: ") +
                               "ALTER FOREIGN TABLE " + d.table + " ALTER COLUMN " + c.name +
                               " TYPE " + (wanted ? wanted : "?") + ";";
            pg_call([&] {
                ereport(WARNING, (errcode(code), errmsg("%s", message.c_str()),
                                  errhint("%s", hint.c_str())));
            });
        }
    }
}

// relid -> map generation of the last check that passed (or could not run) in this session.
std::map<Oid, uint64_t> checked;
// The tables whose last check found them unlogged in _pico_table.opts.
std::set<Oid> unlogged_tables;

// Records what the check read of the table being unlogged.
void note_unlogged(Oid relid, bool unlogged) {
    if (unlogged)
        unlogged_tables.insert(relid);
    else
        unlogged_tables.erase(relid);
}

}  // namespace

namespace picoroute::pg::fdw {

void check_declaration_at_first_use(TableInfo *table, Oid userid) {
    uint64_t generation = 0;
    guarded([&] { generation = current_map().generation; });
    auto it = checked.find(table->relid);
    if (it != checked.end() && it->second == generation) {
        table->unlogged = table->unlogged || unlogged_tables.count(table->relid) > 0;
        return;
    }
    guarded([&] {
        Declared d = read_declared(table->relid, table);
        Remote r;
        try {
            r = read_remote(d, table->serverid, userid);
        } catch (const SqlError &e) {
            if (e.sqlstate() != ERRCODE_CONNECTION_FAILURE &&
                e.sqlstate() != ERRCODE_FDW_INVALID_DATA_TYPE)
                throw;
            return;  // nothing reachable now: the statement will say so
        } catch (const PgError &e) {
            // A local interrupt (statement_timeout, a cancel, a shutdown) ends the statement: it
            // is never taken for a remote answer, so nothing is sent after it.
            if (is_local_interrupt(e))
                throw;
            // A remote error (no privilege on _pico_table, an older catalog): unchecked.
            checked[table->relid] = generation;
            return;
        }
        if (r.found)
            compare(d, r, table->relid);
        note_unlogged(table->relid, r.unlogged);
        table->unlogged = table->unlogged || r.unlogged;
        checked[table->relid] = generation;
    });
}

}  // namespace picoroute::pg::fdw

PICOROUTE_SQL_FUNCTION(picoroute_check_foreign_table) {
    Oid relid = PG_GETARG_OID(0);
    TableInfo *table = nullptr;
    Oid userid = InvalidOid;
    pg_call([&] {
        if (get_rel_relkind(relid) != RELKIND_FOREIGN_TABLE ||
            GetForeignServer(GetForeignTable(relid)->serverid)->fdwid !=
                GetForeignDataWrapperByName("picoroute", false)->fdwid)
            ereport(ERROR, (errcode(ERRCODE_WRONG_OBJECT_TYPE),
                            errmsg("picoroute: \"%s\" is not a picoroute foreign table",
                                   get_rel_name(relid))));
        table = get_table_info(relid);
        userid = GetUserId();
    });
    Declared d = read_declared(relid, table);
    Remote r = read_remote(d, table->serverid, userid);
    if (!r.found)
        throw SqlError(ERRCODE_UNDEFINED_TABLE,
                       "picoroute: Picodata has no table \"" + d.remote + "\" (foreign table \"" +
                           d.table + "\")",
                       {}, "Set the table option table_name, or use IMPORT FOREIGN SCHEMA.");
    compare(d, r, InvalidOid);  // asked for: every warning
    note_unlogged(relid, r.unlogged);
    checked[relid] = current_map().generation;
    PG_RETURN_BOOL(true);
}
