/*
 * The emulated instances' private ports taking a Picodata client's session as its front passes it
 * on (`picoemu up --private-pgproto`; test/emulator/README.md, "Private ports like pgproto"). Test
 * infrastructure, loaded into the emulator's PostgreSQL servers only (shared_preload_libraries):
 *
 * - Bound keys. Routing by the sharding key (sql/key_route.sql) reads a parameter's value from
 *   the setting picoemu.bind_params, which the front fills before each Bind. Nothing a PL/pgSQL
 *   function can call sees a statement's bound values, so on a private port a bound key was not
 *   routed and the owner also asked the other replicasets. This planner hook fills the setting
 *   with the values the planner is given (a JSON array of their texts, null for NULL) when it
 *   plans the client's own statement (its text is the one being run, not a statement of a
 *   function). The instances plan every execution (plan_cache_mode = force_custom_plan, set
 *   beside this library), so every execution is planned, hence routed, with its own values.
 * - Picodata's startup options (name=value,name=value in the "options" field), which plain
 *   PostgreSQL refuses: read_preference, forward and sql_vdbe_opcode_max become the session
 *   settings the front gives the private server for them (picoemu_lib/front/options.py, connection_gucs), the
 *   others (pico_stmt_invalidation, sql_motion_row_max, ...) are dropped: the private port keeps
 *   no statement storage and enforces no limit. A value in PostgreSQL's own syntax (beginning
 *   with "-") is left alone.
 */
#include "postgres.h"

#include "fmgr.h"
#include "lib/stringinfo.h"
/* Without the GSSAPI headers (a Debian server-dev package does not pull them in): Port keeps its
 * layout, its gss member is a pointer either way, and this file reads cmdline_options only. */
#undef ENABLE_GSS
#include "libpq/auth.h"
#include "libpq/libpq-be.h"
#include "miscadmin.h"
#include "optimizer/planner.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"

PG_MODULE_MAGIC;

void _PG_init(void);

static planner_hook_type prev_planner = NULL;
static ClientAuthentication_hook_type prev_auth = NULL;
static bool values_set = false; /* picoemu.bind_params holds values this hook set */

static void set_bind_params(ParamListInfo params) {
    StringInfoData buf;
    int i;

    initStringInfo(&buf);
    appendStringInfoChar(&buf, '[');
    for (i = 0; i < params->numParams; i++) {
        ParamExternData *prm = &params->params[i];

        if (i > 0)
            appendStringInfoChar(&buf, ',');
        if (prm->isnull || !OidIsValid(prm->ptype)) {
            appendStringInfoString(&buf, "null");
        } else {
            Oid out;
            bool varlena;

            getTypeOutputInfo(prm->ptype, &out, &varlena);
            escape_json(&buf, OidOutputFunctionCall(out, prm->value));
        }
    }
    appendStringInfoChar(&buf, ']');
    SetConfigOption("picoemu.bind_params", buf.data, PGC_USERSET, PGC_S_SESSION);
    pfree(buf.data);
    values_set = true;
}

static PlannedStmt *bound_planner(Query *parse, const char *query_string, int cursor_options,
                                  ParamListInfo params) {
    /* The client's statement: the text being run (a statement of a function has its own). */
    if (query_string != NULL && debug_query_string != NULL &&
        strcmp(query_string, debug_query_string) == 0) {
        if (params != NULL && params->numParams > 0 && params->paramFetch == NULL)
            set_bind_params(params);
        else if (values_set) {
            SetConfigOption("picoemu.bind_params", "", PGC_USERSET, PGC_S_SESSION);
            values_set = false;
        }
    }
    if (prev_planner != NULL)
        return prev_planner(parse, query_string, cursor_options, params);
    return standard_planner(parse, query_string, cursor_options, params);
}

/* Picodata's "name=value,name=value" as -c switches of the settings the front gives. */
static char *translate_options(const char *in) {
    StringInfoData out;
    char *copy = pstrdup(in);
    char *item = copy;

    initStringInfo(&out);
    while (item != NULL) {
        char *next = strchr(item, ',');
        char *eq;

        if (next != NULL)
            *next++ = '\0';
        eq = strchr(item, '=');
        if (eq != NULL) {
            const char *value = eq + 1;

            *eq = '\0';
            if (strcmp(item, "read_preference") == 0)
                appendStringInfo(&out, " -c picoemu.read_preference=%s", value);
            else if (strcmp(item, "forward") == 0)
                appendStringInfo(&out, " -c picoemu.strict=%s",
                                 strcmp(value, "off") == 0 ? "on" : "off");
            else if (strcmp(item, "sql_vdbe_opcode_max") == 0)
                appendStringInfo(&out, " -c picoemu.vdbe_opcode_max=%s", value);
        }
        item = next;
    }
    pfree(copy);
    return out.data;
}

static void picodata_options(Port *port, int status) {
    if (prev_auth != NULL)
        prev_auth(port, status);
    if (status == STATUS_OK && port->cmdline_options != NULL) {
        const char *p = port->cmdline_options;

        while (*p == ' ')
            p++;
        if (*p != '\0' && *p != '-') {
            MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

            port->cmdline_options = translate_options(p);
            MemoryContextSwitchTo(old);
        }
    }
}

void _PG_init(void) {
    prev_planner = planner_hook;
    planner_hook = bound_planner;
    prev_auth = ClientAuthentication_hook;
    ClientAuthentication_hook = picodata_options;
}
