// What a statement needs to be accepted by Picodata and to mean there what it means here: values
// written with fixed settings, names Picodata can take quoted, the OPTION clause with the row
// and instruction limits, and the values Picodata cannot take as parameters (plain C style: see
// plan_private.h).
extern "C" {
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "pgtime.h"
#include "utils/builtins.h"
#include "utils/float.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
}

#include "pg/fdw/dialect.h"
#include "pg/fdw/options.h"
#include "pg/settings.h"

#include <cstring>

namespace picoroute::pg::fdw {

namespace {

// Whether the session's time zone writes timestamps as UTC does (a numeric offset of zero in ISO
// style): UTC under one of its names.
bool session_zone_is_utc() {
    if (session_timezone == nullptr)
        return false;
    const char *name = pg_get_timezone_name(session_timezone);
    return name != nullptr &&
           (pg_strcasecmp(name, "UTC") == 0 || pg_strcasecmp(name, "Etc/UTC") == 0);
}

}  // namespace

int set_transmission_modes() {
    int nestlevel = NewGUCNestLevel();
    // The same values whatever the session says: Picodata reads ISO dates with a numeric offset,
    // and a double must keep every digit (extra_float_digits 3 prints the shortest exact form).
    // A setting already at its value is left alone: setting it would mark the GUCs dirty (a walk
    // over all of them at the end of the level) and DateStyle reported to the client again.
    if (DateStyle != USE_ISO_DATES)
        (void)set_config_option("datestyle", "ISO", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                                true, 0, false);
    if (IntervalStyle != INTSTYLE_POSTGRES)
        (void)set_config_option("intervalstyle", "postgres", PGC_USERSET, PGC_S_SESSION,
                                GUC_ACTION_SAVE, true, 0, false);
    if (extra_float_digits != 3)
        (void)set_config_option("extra_float_digits", "3", PGC_USERSET, PGC_S_SESSION,
                                GUC_ACTION_SAVE, true, 0, false);
    if (!session_zone_is_utc())
        (void)set_config_option("timezone", "UTC", PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE,
                                true, 0, false);
    return nestlevel;
}

bool output_needs_transmission_modes(Oid type) {
    switch (type) {
        case BOOLOID:
        case CHAROID:
        case NAMEOID:
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case OIDOID:
        case NUMERICOID:
        case TEXTOID:
        case VARCHAROID:
        case BPCHAROID:
        case UUIDOID:
            return false;
        default:
            return true;
    }
}

void reset_transmission_modes(int nestlevel) {
    AtEOXact_GUC(true, nestlevel);
}

Datum numeric_to_typmod(Datum value, int32 typmod) {
    if (typmod < 0)
        return value;
    Datum out = value;
    MemoryContext cxt = CurrentMemoryContext;
    PG_TRY();
    {
        Datum rounded = DirectFunctionCall2(numeric, value, Int32GetDatum(typmod));
        // Only an exact change of scale: 2.5 -> 2.50, never 2.555 -> 2.56.
        if (DatumGetInt32(DirectFunctionCall2(numeric_cmp, rounded, value)) == 0)
            out = rounded;
    }
    PG_CATCH();
    {
        // Too many digits for the column: no stored value can equal it; keep it as it is.
        MemoryContextSwitchTo(cxt);
        ErrorData *edata = CopyErrorData();
        if (edata->sqlerrcode != ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE)
            PG_RE_THROW();
        FlushErrorState();
        FreeErrorData(edata);
    }
    PG_END_TRY();
    return out;
}

void trim_trailing_blanks(char *text) {
    size_t len = strlen(text);
    while (len > 0 && text[len - 1] == ' ')
        text[--len] = '\0';
}

void refuse_json_value(Relation rel, AttrNumber attnum) {
    ereport(ERROR,
            (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
             errmsg("picoroute: cannot send a value for column \"%s\" of foreign table \"%s\"",
                    NameStr(TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attname),
                    RelationGetRelationName(rel)),
             errdetail("A json column stands for a Picodata map, array or any column, and "
                       "Picodata refuses non-NULL values for those as parameters (\"cannot "
                       "represent json in sbroad\")."),
             errhint("Write NULL there, or write that column through Picodata itself.")));
}

int keyless_row_bound(const TableInfo *table) {
    return table->motion_row_max >= 0 ? table->motion_row_max : setting_keyless_row_max;
}

std::string option_clause(const TableInfo *table, bool keyless, bool gathers) {
    if (!table->exec_options)
        return {};
    int rows = -1;
    if (table->motion_row_max >= 0)
        rows = table->motion_row_max;
    else if (keyless)
        rows = gathers ? setting_keyless_row_max : 0;
    return option_clause_rows(table, rows, keyless);
}

std::string option_clause_rows(const TableInfo *table, int rows, bool lift_opcodes) {
    if (!table->exec_options)
        return {};
    int opcodes = table->vdbe_opcode_max >= 0 ? table->vdbe_opcode_max : (lift_opcodes ? 0 : -1);
    std::string out;
    if (rows >= 0)
        out += "sql_motion_row_max = " + std::to_string(rows);
    if (opcodes >= 0)
        out += (out.empty() ? "" : ", ") + std::string("sql_vdbe_opcode_max = ") +
               std::to_string(opcodes);
    return out.empty() ? out : " OPTION (" + out + ")";
}

int insert_row_limit(const TableInfo *table) {
    return table->motion_row_max >= 0 ? table->motion_row_max : kDefaultMotionRowMax;
}

}  // namespace picoroute::pg::fdw
