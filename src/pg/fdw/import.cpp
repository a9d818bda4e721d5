// IMPORT FOREIGN SCHEMA for the picoroute FDW: one foreign table per user table of `_pico_table`
// (system tables, whose names start with "_pico", are skipped), with columns and types from
// `format`, and the sharding key and distribution from `distribution`. The remote schema name is
// ignored (Picodata has none); LIMIT TO / EXCEPT apply to table names. Tables sharded in another
// tier than the server's `tier` option are skipped. An unlogged table (`opts`, 26.1+:
// core/table_schema.h) gets the table option unlogged 'true': its reads go to the leaders.
//
// Types: integer, unsigned -> bigint; string -> text; double -> double precision; decimal ->
// numeric; uuid -> uuid; datetime -> timestamp with time zone; boolean -> boolean; any, map, array
// and anything unknown -> json. The hidden bucket_id column is not imported.
extern "C" {
#include "postgres.h"

#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "utils/builtins.h"
}

#include "core/table_schema.h"
#include "pg/fdw/dialect.h"
#include "pg/fdw/import.h"
#include "pg/fdw/options.h"
#include "pg/fdw/table_cache.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/remote/leader_reads.h"
#include "pg/remote/rounds.h"
#include "pg/lookup.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;
using namespace picoroute::pg::fdw;

namespace {

const char *pg_type_for(const std::string &picodata_type) {
    const KeyType *canonical = key_type_for_picodata(picodata_type);
    return canonical == nullptr ? "json" : canonical->sql_name;
}

std::string quote_ident(const std::string &name) {
    const char *quoted = nullptr;
    pg_call([&] { quoted = quote_identifier(name.c_str()); });
    return quoted;
}

// A string constant that reads the same whatever standard_conforming_strings says:
// quote_literal_cstr doubles quotes and, when the value has a backslash, doubles it and writes
// E'...'.
std::string quote_literal(const std::string &value) {
    const char *quoted = nullptr;
    pg_call([&] { quoted = quote_literal_cstr(value.c_str()); });
    return quoted;
}

bool wanted(ImportForeignSchemaStmt *stmt, const std::string &name) {
    if (stmt->list_type == FDW_IMPORT_SCHEMA_ALL)
        return true;
    bool listed = false;
    ListCell *lc;
    foreach (lc, stmt->table_list) {
        RangeVar *rv = static_cast<RangeVar *>(lfirst(lc));
        if (name == rv->relname)
            listed = true;
    }
    return stmt->list_type == FDW_IMPORT_SCHEMA_LIMIT_TO ? listed : !listed;
}

std::string key_list(const std::vector<std::string> &columns) {
    std::string out;
    for (const std::string &c : columns) {
        if (!out.empty())
            out += ", ";
        out += quote_ident(c);
    }
    return out;
}

}  // namespace

namespace picoroute::pg::fdw {

List *import_foreign_schema(ImportForeignSchemaStmt *stmt, Oid serverOid) {
    List *commands = NIL;
    Oid userid = GetUserId();
    char *server_name = nullptr;
    const char *tier_option = nullptr;
    {
        ForeignServer *server = GetForeignServer(serverOid);
        server_name = server->servername;
        ListCell *lc;
        foreach (lc, server->options) {
            DefElem *def = lfirst_node(DefElem, lc);
            if (strcmp(def->defname, "tier") == 0)
                tier_option = strVal(def->arg);
        }
    }
    guarded([&] {
        std::string server_tier = server_tier_name(tier_option);
        MapRef map = current_map();
        std::vector<Job> jobs(1);
        jobs[0].target = coordinator_target(*map.view);
        // Every column, read by name: `opts` exists from 26.1 only.
        jobs[0].sql = "SELECT * FROM \"_pico_table\"";
        run_jobs(jobs, conn_params_for(serverOid, userid), "", ReadPref::Leader, Retry::Read);
        const PGresult *res = jobs[0].result.get();
        int name_col = PQfnumber(res, "name"), distribution_col = PQfnumber(res, "distribution"),
            format_col = PQfnumber(res, "format"), opts_col = PQfnumber(res, "opts");
        if (name_col < 0 || distribution_col < 0 || format_col < 0)
            throw SqlError(ERRCODE_FDW_ERROR,
                           "picoroute: _pico_table has no column name, distribution or format", {},
                           {});
        std::vector<std::string> statements;
        for (int r = 0; r < PQntuples(res); r++) {
            std::string name = PQgetvalue(res, r, name_col);
            if (PQgetisnull(res, r, name_col) || name.compare(0, 5, "_pico") == 0 ||
                !wanted(stmt, name))
                continue;
            TableSchema table = parse_table_schema(name, PQgetvalue(res, r, distribution_col),
                                                   PQgetvalue(res, r, format_col), NAMEDATALEN - 1);
            bool unlogged =
                opts_col >= 0 && parse_table_unlogged(name, PQgetvalue(res, r, opts_col));
            bool global = table.global;
            const std::vector<std::string> &key = table.sharding_key;
            if (!global && table.tier != server_tier)
                continue;
            // Names are sent double-quoted; Picodata cannot take one with a double quote.
            pg_call([&] { check_remote_name(name.c_str(), "table"); });
            for (const TableColumn &column : table.columns)
                pg_call([&] { check_remote_name(column.name.c_str(), "column"); });
            std::string sql = "CREATE FOREIGN TABLE " + quote_ident(name) + " (";
            bool first = true;
            for (const TableColumn &column : table.columns) {
                sql +=
                    (first ? "" : ", ") + quote_ident(column.name) + " " + pg_type_for(column.type);
                if (!column.nullable)
                    sql += " NOT NULL";
                first = false;
            }
            sql += ") SERVER " + quote_ident(server_name) + " OPTIONS (table_name " +
                   quote_literal(name);
            if (global)
                sql += ", distribution 'global'";
            else
                sql += ", distribution 'sharded', sharding_key " + quote_literal(key_list(key));
            // Reads of an unlogged table go to the leaders (the replicas do not have its rows).
            if (unlogged)
                sql += ", unlogged 'true'";
            sql += ")";
            statements.push_back(sql);
        }
        for (const std::string &s : statements)
            pg_call([&] { commands = lappend(commands, pstrdup(s.c_str())); });
    });
    return commands;
}

}  // namespace picoroute::pg::fdw
