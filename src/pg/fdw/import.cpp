// IMPORT FOREIGN SCHEMA for the picoroute FDW: one foreign table per user table of `_pico_table`
// (system tables, whose names start with "_pico", are skipped), with columns and types from
// `format`, and the sharding key and distribution from `distribution`. The remote schema name is
// ignored (Picodata has none); LIMIT TO / EXCEPT apply to table names. Tables sharded in another
// tier than the server's `tier` option are skipped.
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

#include "pg/fdw/fdw_internal.h"
#include "pg/guard.h"
#include "pg/map_store.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;
using namespace picoroute::pg::fdw;

namespace {

// A minimal JSON value: enough for _pico_table's distribution and format columns.
struct Json {
    enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
    bool flag = false;
    std::string text;  // string value, or the number as written
    std::vector<Json> items;
    std::vector<std::pair<std::string, Json>> members;

    const Json *get(const std::string &key) const {
        for (const auto &[k, v] : members)
            if (k == key)
                return &v;
        return nullptr;
    }
};

class JsonParser {
  public:
    explicit JsonParser(const std::string &text) : s_(text) {}
    Json parse() {
        Json v = value();
        skip();
        if (pos_ != s_.size())
            fail("trailing characters");
        return v;
    }

  private:
    [[noreturn]] void fail(const char *what) {
        throw SqlError(ERRCODE_FDW_INVALID_DATA_TYPE,
                       std::string("picoroute: cannot parse _pico_table json: ") + what +
                           " at offset " + std::to_string(pos_));
    }
    void skip() {
        while (pos_ < s_.size() && isspace(static_cast<unsigned char>(s_[pos_])))
            pos_++;
    }
    bool eat(char c) {
        skip();
        if (pos_ < s_.size() && s_[pos_] == c) {
            pos_++;
            return true;
        }
        return false;
    }
    std::string string_body() {
        std::string out;
        while (pos_ < s_.size() && s_[pos_] != '"') {
            char c = s_[pos_++];
            if (c == '\\' && pos_ < s_.size()) {
                char e = s_[pos_++];
                switch (e) {
                    case 'n':
                        out += '\n';
                        break;
                    case 't':
                        out += '\t';
                        break;
                    case 'r':
                        out += '\r';
                        break;
                    case 'b':
                        out += '\b';
                        break;
                    case 'f':
                        out += '\f';
                        break;
                    case 'u': {
                        if (pos_ + 4 > s_.size())
                            fail("bad escape");
                        unsigned code = std::stoul(s_.substr(pos_, 4), nullptr, 16);
                        pos_ += 4;
                        if (code < 0x80) {
                            out += static_cast<char>(code);
                        } else if (code < 0x800) {
                            out += static_cast<char>(0xC0 | (code >> 6));
                            out += static_cast<char>(0x80 | (code & 0x3F));
                        } else {
                            out += static_cast<char>(0xE0 | (code >> 12));
                            out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
                            out += static_cast<char>(0x80 | (code & 0x3F));
                        }
                        break;
                    }
                    default:
                        out += e;
                }
            } else {
                out += c;
            }
        }
        if (pos_ >= s_.size())
            fail("unterminated string");
        pos_++;
        return out;
    }
    Json value() {
        skip();
        if (pos_ >= s_.size())
            fail("unexpected end");
        Json v;
        char c = s_[pos_];
        if (c == '{') {
            pos_++;
            v.kind = Json::Object;
            if (eat('}'))
                return v;
            do {
                if (!eat('"'))
                    fail("expected a key");
                std::string key = string_body();
                if (!eat(':'))
                    fail("expected ':'");
                v.members.emplace_back(key, value());
            } while (eat(','));
            if (!eat('}'))
                fail("expected '}'");
        } else if (c == '[') {
            pos_++;
            v.kind = Json::Array;
            if (eat(']'))
                return v;
            do {
                v.items.push_back(value());
            } while (eat(','));
            if (!eat(']'))
                fail("expected ']'");
        } else if (c == '"') {
            pos_++;
            v.kind = Json::String;
            v.text = string_body();
        } else if (s_.compare(pos_, 4, "true") == 0) {
            pos_ += 4;
            v.kind = Json::Bool;
            v.flag = true;
        } else if (s_.compare(pos_, 5, "false") == 0) {
            pos_ += 5;
            v.kind = Json::Bool;
        } else if (s_.compare(pos_, 4, "null") == 0) {
            pos_ += 4;
        } else {
            size_t start = pos_;
            while (pos_ < s_.size() && strchr("+-0123456789.eE", s_[pos_]) != nullptr)
                pos_++;
            if (start == pos_)
                fail("unexpected character");
            v.kind = Json::Number;
            v.text = s_.substr(start, pos_ - start);
        }
        return v;
    }

    const std::string &s_;
    size_t pos_ = 0;
};

const char *pg_type_for(const std::string &picodata_type) {
    static const std::map<std::string, const char *> types = {
        {"integer", "bigint"},
        {"unsigned", "bigint"},
        {"string", "text"},
        {"double", "double precision"},
        {"decimal", "numeric"},
        {"uuid", "uuid"},
        {"datetime", "timestamp with time zone"},
        {"boolean", "boolean"},
        {"bool", "boolean"},
    };
    auto it = types.find(picodata_type);
    return it == types.end() ? "json" : it->second;
}

std::string quote_ident(const std::string &name) {
    const char *quoted = nullptr;
    pg_call([&] { quoted = quote_identifier(name.c_str()); });
    return quoted;
}

std::string quote_literal(const std::string &value) {
    std::string out = "'";
    for (char c : value) {
        if (c == '\'')
            out += '\'';
        out += c;
    }
    return out + "'";
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
        std::string server_tier = tier_option ? tier_option : "default";
        MapRef map = current_map();
        std::vector<Job> jobs(1);
        jobs[0].target = coordinator_target(*map.view);
        jobs[0].sql = "SELECT \"name\", \"distribution\", \"format\" FROM \"_pico_table\"";
        run_jobs(jobs, conn_params_for(serverOid, userid), kNone, ReadPref::Leader, Retry::Read);
        const PGresult *res = jobs[0].result.get();
        std::vector<std::string> statements;
        for (int r = 0; r < PQntuples(res); r++) {
            std::string name = PQgetvalue(res, r, 0);
            if (name.compare(0, 5, "_pico") == 0 || !wanted(stmt, name))
                continue;
            Json distribution = JsonParser(PQgetvalue(res, r, 1)).parse();
            Json format = JsonParser(PQgetvalue(res, r, 2)).parse();
            bool global = distribution.get("Global") != nullptr;
            std::vector<std::string> key;
            std::string tier = "default";
            if (const Json *d = distribution.get("ShardedImplicitly")) {
                // [["col", ...], "murmur3", "<tier>"]
                if (d->kind == Json::Array && !d->items.empty())
                    for (const Json &c : d->items[0].items)
                        key.push_back(c.text);
                if (d->items.size() >= 3 && d->items[2].kind == Json::String)
                    tier = d->items[2].text;
            } else if (const Json *d = distribution.get("ShardedByField")) {
                // [field, tier]
                if (d->kind == Json::Array && !d->items.empty())
                    key.push_back(d->items[0].text);
                if (d->items.size() >= 2 && d->items[1].kind == Json::String)
                    tier = d->items[1].text;
            }
            if (!global && tier != server_tier)
                continue;
            // Names are sent double-quoted; Picodata cannot take one with a double quote.
            pg_call([&] { check_remote_name(name.c_str(), "table"); });
            for (const Json &field : format.items)
                if (const Json *fname = field.get("name"))
                    pg_call([&] { check_remote_name(fname->text.c_str(), "column"); });
            std::string sql = "CREATE FOREIGN TABLE " + quote_ident(name) + " (";
            bool first = true;
            for (const Json &field : format.items) {
                const Json *fname = field.get("name");
                const Json *ftype = field.get("field_type");
                if (fname == nullptr)
                    continue;
                if (fname->text == "bucket_id")
                    continue;
                const Json *nullable = field.get("is_nullable");
                sql += (first ? "" : ", ") + quote_ident(fname->text) + " " +
                       pg_type_for(ftype ? ftype->text : "any");
                if (nullable != nullptr && nullable->kind == Json::Bool && !nullable->flag)
                    sql += " NOT NULL";
                first = false;
            }
            sql += ") SERVER " + quote_ident(server_name) + " OPTIONS (table_name " +
                   quote_literal(name);
            if (global)
                sql += ", distribution 'global'";
            else
                sql += ", distribution 'sharded', sharding_key " + quote_literal(key_list(key));
            sql += ")";
            statements.push_back(sql);
        }
        for (const std::string &s : statements)
            pg_call([&] { commands = lappend(commands, pstrdup(s.c_str())); });
    });
    return commands;
}

}  // namespace picoroute::pg::fdw
