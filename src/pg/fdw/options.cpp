// Options of the picoroute foreign data wrapper: validation and resolution.
//
//   server:        tier (default: the tier flagged _pico_tier.is_default, else 'default'),
//                  scatter (coordinator | masters),
//                  read_preference (leader | replica | any), dbname, sslmode, batch_size,
//                  picodata_version (a release Picodata shipped, as it reports itself:
//                  25.5.1 ... 26.2.1-rc2, caps::releases(); overrides the detected version;
//                  without it the lowest version of the online instances, no capability
//                  until one is known),
//                  execution_options (on | off), sql_motion_row_max, sql_vdbe_opcode_max,
//                  pushdown_aggregates (on | off)
//   user mapping:  user, password (a non-superuser must give a password)
//   foreign table: table_name, sharding_key ('a, b': columns in hashing order), primary_key
//                  ('a, b': the identity of a row written row by row, else read from _pico_index),
//                  distribution (sharded | global), batch_size, sql_motion_row_max,
//                  sql_vdbe_opcode_max, pushdown_aggregates, unlogged (true | false: reads go
//                  to the leaders)
//
// Host and port never come from options: they come from the topology map.
extern "C" {
#include "postgres.h"

#include "access/reloptions.h"
#include "catalog/pg_foreign_server.h"
#include "catalog/pg_foreign_table.h"
#include "catalog/pg_user_mapping.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/varlena.h"

PG_FUNCTION_INFO_V1(picoroute_fdw_validator);
}

#include "core/capabilities.h"
#include "core/session_options.h"
#include "pg/fdw/options.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/remote/connection.h"
#include "pg/lookup.h"

#include <cstring>
#include <optional>
#include <string>

using namespace picoroute;
using namespace picoroute::pg;
using namespace picoroute::pg::fdw;

namespace {

struct OptionDef {
    const char *name;
    Oid context;
};

const OptionDef kOptions[] = {
    {"tier", ForeignServerRelationId},
    {"scatter", ForeignServerRelationId},
    {"read_preference", ForeignServerRelationId},
    {"dbname", ForeignServerRelationId},
    {"sslmode", ForeignServerRelationId},
    {"batch_size", ForeignServerRelationId},
    {"picodata_version", ForeignServerRelationId},
    {"execution_options", ForeignServerRelationId},
    {"sql_motion_row_max", ForeignServerRelationId},
    {"sql_vdbe_opcode_max", ForeignServerRelationId},
    {"pushdown_aggregates", ForeignServerRelationId},
    {"user", UserMappingRelationId},
    {"password", UserMappingRelationId},
    {"table_name", ForeignTableRelationId},
    {"sharding_key", ForeignTableRelationId},
    {"primary_key", ForeignTableRelationId},
    {"distribution", ForeignTableRelationId},
    {"batch_size", ForeignTableRelationId},
    {"sql_motion_row_max", ForeignTableRelationId},
    {"sql_vdbe_opcode_max", ForeignTableRelationId},
    {"pushdown_aggregates", ForeignTableRelationId},
    {"unlogged", ForeignTableRelationId},
};

bool valid_option(const char *name, Oid context) {
    for (const OptionDef &def : kOptions)
        if (def.context == context && strcmp(def.name, name) == 0)
            return true;
    return false;
}

void check_enum(DefElem *def, const char *const *allowed) {
    const char *value = defGetString(def);
    for (const char *const *a = allowed; *a; a++)
        if (strcmp(value, *a) == 0)
            return;
    StringInfoData list;
    initStringInfo(&list);
    for (const char *const *a = allowed; *a; a++)
        appendStringInfo(&list, "%s%s", a == allowed ? "" : ", ", *a);
    ereport(ERROR,
            (errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
             errmsg("picoroute: invalid value for option \"%s\": \"%s\"", def->defname, value),
             errhint("Valid values: %s.", list.data)));
}

// picodata_version names a release Picodata shipped, exactly as its build reports it
// (core/capabilities.h releases()): what a cluster of that release can do is known.
void check_release(DefElem *def) {
    const char *value = defGetString(def);
    if (guarded([&] { return caps::is_release(value); }))
        return;
    char *releases = nullptr;
    guarded([&] {
        std::string text = caps::releases_text();
        pg_call([&] { releases = pstrdup(text.c_str()); });
    });
    ereport(ERROR,
            (errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
             errmsg("picoroute: invalid value for option \"%s\": \"%s\"", def->defname, value),
             errdetail("The option names a Picodata release as its instances report it "
                       "(_pico_instance.picodata_version): %s.",
                       releases),
             errhint("For another build, name the newest of these releases it follows, or leave "
                     "the option out: picoroute then follows the version the cluster reports.")));
}

// Splits "a, b" into a List of String names (identifiers may be double-quoted).
List *split_key(const char *value, const char *option) {
    char *copy = pstrdup(value);
    List *names = NIL;
    if (!SplitIdentifierString(copy, ',', &names) || names == NIL)
        ereport(ERROR, (errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
                        errmsg("picoroute: invalid value for option \"%s\": \"%s\"", option, value),
                        errhint("List the sharding key columns in hashing order, separated by "
                                "commas: sharding_key 'a, b'.")));
    return names;
}

void validate(List *options, Oid catalog) {
    static const char *const scatter_values[] = {"coordinator", "masters", nullptr};
    static const char *const pref_values[] = {"leader", "replica", "any", nullptr};
    static const char *const dist_values[] = {"sharded", "global", nullptr};
    static const char *const onoff_values[] = {"on", "off", nullptr};
    static const char *const bool_values[] = {"true", "false", nullptr};
    bool has_key = false, is_global = false;
    ListCell *lc;
    foreach (lc, options) {
        DefElem *def = lfirst_node(DefElem, lc);
        if (!valid_option(def->defname, catalog)) {
            StringInfoData names;
            initStringInfo(&names);
            for (const OptionDef &d : kOptions)
                if (d.context == catalog)
                    appendStringInfo(&names, "%s%s", names.len ? ", " : "", d.name);
            ereport(ERROR,
                    (errcode(ERRCODE_FDW_INVALID_OPTION_NAME),
                     errmsg("picoroute: invalid option \"%s\"", def->defname),
                     names.len ? errhint("Valid options in this context: %s.", names.data)
                               : errhint("There are no valid options in this context."),
                     (catalog == ForeignServerRelationId &&
                      (strcmp(def->defname, "host") == 0 || strcmp(def->defname, "port") == 0))
                         ? errdetail("Instance addresses come from the topology map "
                                     "(picoroute.conninfo), not from server options.")
                         : 0));
        }
        if (strcmp(def->defname, "scatter") == 0)
            check_enum(def, scatter_values);
        else if (strcmp(def->defname, "read_preference") == 0)
            check_enum(def, pref_values);
        else if (strcmp(def->defname, "distribution") == 0) {
            check_enum(def, dist_values);
            is_global = strcmp(defGetString(def), "global") == 0;
        } else if (strcmp(def->defname, "sharding_key") == 0) {
            ListCell *kc;
            foreach (kc, split_key(defGetString(def), def->defname))
                check_remote_name(static_cast<const char *>(lfirst(kc)), "sharding key column");
            has_key = true;
        } else if (strcmp(def->defname, "primary_key") == 0) {
            ListCell *kc;
            foreach (kc, split_key(defGetString(def), def->defname))
                check_remote_name(static_cast<const char *>(lfirst(kc)), "primary key column");
        } else if (strcmp(def->defname, "table_name") == 0) {
            check_remote_name(defGetString(def), "table");
        } else if (strcmp(def->defname, "picodata_version") == 0) {
            check_release(def);
        } else if (strcmp(def->defname, "unlogged") == 0) {
            check_enum(def, bool_values);
        } else if (strcmp(def->defname, "execution_options") == 0 ||
                   strcmp(def->defname, "pushdown_aggregates") == 0) {
            check_enum(def, onoff_values);
        } else if (strcmp(def->defname, "sql_motion_row_max") == 0 ||
                   strcmp(def->defname, "sql_vdbe_opcode_max") == 0) {
            int value = 0;
            if (!parse_int(defGetString(def), &value, 0, nullptr) || value < 0)
                ereport(ERROR,
                        (errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
                         errmsg("picoroute: %s must be a non-negative integer, not \"%s\"",
                                def->defname, defGetString(def)),
                         errhint("0 lifts the limit for the statements of this table or server.")));
        } else if (strcmp(def->defname, "batch_size") == 0) {
            int value = 0;
            if (!parse_int(defGetString(def), &value, 0, nullptr) || value < 1 || value > 10000)
                ereport(ERROR, (errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
                                errmsg("picoroute: batch_size must be an integer from 1 to 10000, "
                                       "not \"%s\"",
                                       defGetString(def))));
        } else if (strcmp(def->defname, "tier") == 0 && defGetString(def)[0] == '\0') {
            ereport(ERROR, (errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
                            errmsg("picoroute: option \"tier\" cannot be empty")));
        }
    }
    if (has_key && is_global)
        ereport(ERROR, (errcode(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE),
                        errmsg("picoroute: a global table has no sharding key"),
                        errhint("Drop option sharding_key or use distribution 'sharded'.")));
}

const char *option_value(List *options, const char *name) {
    ListCell *lc;
    foreach (lc, options) {
        DefElem *def = lfirst_node(DefElem, lc);
        if (strcmp(def->defname, name) == 0)
            return defGetString(def);
    }
    return nullptr;
}

// -1 when the option is not given.
int int_option(List *options, const char *name) {
    const char *value = option_value(options, name);
    int out = -1;
    if (value != nullptr && !parse_int(value, &out, 0, nullptr))
        out = -1;
    return out;
}

// What is assumed of a cluster whose version is not known yet (push mode before the first map, no
// online instance that reports a version): no version, so no capability, as on 25.5. It costs the
// least if wrong: a newer cluster then only loses work savings (no named remote statements, doubles
// hashed by 25.5's rule: a hop for an integral double key; scatter 'masters' through one
// coordinator), where assuming a newer version of an older cluster would keep named statements
// that it never reports invalidated after DDL.
constexpr const char *kUndetectedVersion = "";

// The version a server's capabilities are looked up for: its option picodata_version when given
// (an override), else the lowest version the online instances of the map report, else none.
std::string server_version(const char *option) {
    if (option != nullptr)
        return option;
    if (map_store_available())
        if (std::optional<std::string> detected = current_map().view->cluster_version())
            return *detected;
    return kUndetectedVersion;
}

// A palloc'd copy of the string `fn` computes in C++, for a caller in PostgreSQL context: no C++
// object outlives the call, so a later ereport crosses no destructor.
template <typename Fn>
char *palloc_copy(Fn &&fn) {
    return guarded([&] {
        std::string value = fn();
        char *out = nullptr;
        pg_call([&] { out = pstrdup(value.c_str()); });
        return out;
    });
}

}  // namespace

namespace picoroute::pg::fdw {

std::string server_tier_name(const char *option) {
    if (option != nullptr)
        return option;
    if (map_store_available()) {
        MapRef map = current_map();
        int32_t tier = map.view->default_tier();
        if (tier != kNone)
            return std::string(map.view->str(map.view->tier(tier).name));
    }
    return "default";
}

}  // namespace picoroute::pg::fdw

extern "C" Datum picoroute_fdw_validator(PG_FUNCTION_ARGS) {
    List *options = untransformRelOptions(PG_GETARG_DATUM(0));
    Oid catalog = PG_GETARG_OID(1);
    validate(options, catalog);
    PG_RETURN_VOID();
}

namespace picoroute::pg::fdw {

TableInfo *build_table_info(Oid relid) {
    ForeignTable *ft = GetForeignTable(relid);
    ForeignServer *server = GetForeignServer(ft->serverid);
    TableInfo *t = static_cast<TableInfo *>(palloc0(sizeof(TableInfo)));
    t->relid = relid;
    t->serverid = server->serverid;
    t->server_name = pstrdup(server->servername);
    const char *tier_option = option_value(server->options, "tier");
    t->tier = palloc_copy([&] { return server_tier_name(tier_option); });
    const char *scatter = option_value(server->options, "scatter");
    t->scatter = static_cast<int>(
        scatter && strcmp(scatter, "masters") == 0 ? Scatter::Masters : Scatter::Coordinator);
    t->read_pref =
        static_cast<int>(parse_read_pref(option_value(server->options, "read_preference")));
    const char *table_name = option_value(ft->options, "table_name");
    t->remote_table = pstrdup(table_name ? table_name : get_rel_name(relid));
    const char *distribution = option_value(ft->options, "distribution");
    t->global = distribution && strcmp(distribution, "global") == 0;
    const char *unlogged = option_value(ft->options, "unlogged");
    t->unlogged = unlogged != nullptr && strcmp(unlogged, "true") == 0;
    t->batch_size = 100;
    const char *batch = option_value(server->options, "batch_size");
    const char *table_batch = option_value(ft->options, "batch_size");
    if (table_batch)
        batch = table_batch;
    if (batch)
        (void)parse_int(batch, &t->batch_size, 0, nullptr);
    const char *version_option = option_value(server->options, "picodata_version");
    t->picodata_version = palloc_copy([&] { return server_version(version_option); });
    t->capabilities = guarded([&] { return caps::CapabilitySet(t->picodata_version); });
    t->hash_rule = hash_rule_for(t->capabilities);
    const char *exec_options = option_value(server->options, "execution_options");
    t->exec_options = exec_options == nullptr || strcmp(exec_options, "off") != 0;
    t->motion_row_max = int_option(ft->options, "sql_motion_row_max");
    if (t->motion_row_max < 0)
        t->motion_row_max = int_option(server->options, "sql_motion_row_max");
    t->vdbe_opcode_max = int_option(ft->options, "sql_vdbe_opcode_max");
    if (t->vdbe_opcode_max < 0)
        t->vdbe_opcode_max = int_option(server->options, "sql_vdbe_opcode_max");
    const char *push = option_value(ft->options, "pushdown_aggregates");
    if (push == nullptr)
        push = option_value(server->options, "pushdown_aggregates");
    t->push_upper = push == nullptr || strcmp(push, "off") != 0;
    const char *key = option_value(ft->options, "sharding_key");
    if (key && !t->global) {
        List *names = split_key(key, "sharding_key");
        t->nkeys = list_length(names);
        t->key_attnums = static_cast<AttrNumber *>(palloc(sizeof(AttrNumber) * t->nkeys));
        int i = 0;
        ListCell *lc;
        foreach (lc, names) {
            const char *name = static_cast<const char *>(lfirst(lc));
            AttrNumber attnum = get_attnum(relid, name);
            if (attnum == InvalidAttrNumber)
                ereport(ERROR,
                        (errcode(ERRCODE_UNDEFINED_COLUMN),
                         errmsg("picoroute: sharding key column \"%s\" is not a column of foreign "
                                "table \"%s\"",
                                name, get_rel_name(relid)),
                         errhint("Fix the table option sharding_key.")));
            t->key_attnums[i++] = attnum;
        }
    }
    return t;
}

std::string startup_read_preference(const char *execution_options, const char *read_preference,
                                    const char *picodata_version) {
    if (execution_options != nullptr && strcmp(execution_options, "off") == 0)
        return {};
    if (!caps::has(server_version(picodata_version), caps::Capability::ReadPreference))
        return {};
    return read_preference != nullptr ? read_preference : "leader";
}

std::string startup_options(const char *execution_options, const char *read_preference,
                            const char *picodata_version) {
    if (execution_options != nullptr && strcmp(execution_options, "off") == 0)
        return {};
    // Picodata reports a named statement invalidated by DDL (SQLSTATE 42999) only when the client
    // asks; versions without the option ignore it with a warning in their log.
    return picoroute::startup_options(
        startup_read_preference(execution_options, read_preference, picodata_version),
        caps::has(server_version(picodata_version), caps::Capability::StmtInvalidation));
}

ConnParams build_conn_params(Oid serverid, Oid userid) {
    ForeignServer *server = nullptr;
    UserMapping *um = nullptr;
    bool superuser = false;
    pg_call([&] {
        server = GetForeignServer(serverid);
        um = GetUserMapping(userid, serverid);
        superuser = superuser_arg(userid);
    });
    ConnParams params;
    params.umid = um->umid;
    params.userid = userid;
    params.server_name = server->servername;
    bool has_password = false;
    const char *exec_options = nullptr, *read_preference = nullptr, *version = nullptr;
    ListCell *lc;
    foreach (lc, server->options) {
        DefElem *def = lfirst_node(DefElem, lc);
        if (strcmp(def->defname, "dbname") == 0 || strcmp(def->defname, "sslmode") == 0)
            params.options.emplace_back(def->defname, strVal(def->arg));
        else if (strcmp(def->defname, "execution_options") == 0)
            exec_options = strVal(def->arg);
        else if (strcmp(def->defname, "read_preference") == 0)
            read_preference = strVal(def->arg);
        else if (strcmp(def->defname, "picodata_version") == 0)
            version = strVal(def->arg);
    }
    // Picodata reads its session options from the startup packet's "options" field, in its own
    // syntax (name=value,name=value; core/session_options.h). read_preference goes there, leader
    // included (from 26.1 a session that names none takes the cluster's setting, which may be
    // replica), and so does pico_stmt_invalidation.
    std::string startup = startup_options(exec_options, read_preference, version);
    if (!startup.empty())
        params.options.emplace_back("options", startup);
    params.read_preference = startup_read_preference(exec_options, read_preference, version);
    params.stmt_invalidation =
        (exec_options == nullptr || strcmp(exec_options, "off") != 0) &&
        caps::has(server_version(version), caps::Capability::StmtInvalidation);
    params.picodata_version = version != nullptr ? version : "";
    foreach (lc, um->options) {
        DefElem *def = lfirst_node(DefElem, lc);
        if (strcmp(def->defname, "user") == 0 || strcmp(def->defname, "password") == 0)
            params.options.emplace_back(def->defname, strVal(def->arg));
        if (strcmp(def->defname, "password") == 0 && strVal(def->arg)[0] != '\0')
            has_password = true;
    }
    if (!superuser && !has_password)
        throw SqlError(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED,
                       "picoroute: password is required",
                       "Non-superusers must provide a password in the user mapping (server \"" +
                           params.server_name + "\").",
                       "ALTER USER MAPPING FOR CURRENT_USER SERVER " + params.server_name +
                           " OPTIONS (ADD password '...');");
    params.require_password = !superuser;
    return params;
}

void check_remote_name(const char *name, const char *what) {
    if (strchr(name, '"') == nullptr)
        return;
    ereport(
        ERROR,
        (errcode(ERRCODE_INVALID_NAME),
         errmsg("picoroute: %s name \"%s\" contains a double quote", what, name),
         errdetail("picoroute double-quotes every name it sends, and Picodata does not "
                   "unescape a double quote inside a quoted name."),
         errhint("Rename the %s in Picodata, or map it to a name without a double quote.", what)));
}

}  // namespace picoroute::pg::fdw
