// Values and clauses in Picodata's format (dialect.cpp): the transmission modes, numeric scale,
// character(n) blanks, refused json values, quoted names and the OPTION clause.
#pragma once

extern "C" {
#include "postgres.h"

#include "utils/rel.h"
}

#include "pg/fdw/options.h"
#include <string>

namespace picoroute::pg::fdw {

// The trailing " OPTION (...)" of a statement on `table`, "" for none. The table's or server's
// sql_motion_row_max and sql_vdbe_opcode_max are sent when given. Otherwise, for a `keyless`
// statement (a scatter, a global table, a coordinator): the instruction limit is lifted (it bounds
// the work of a storage, not a coordinator's memory), and the row limit is
// picoroute.keyless_row_max for a read that `gathers` its rows at a coordinator, lifted (0) for an
// UPDATE or DELETE (its rows stay on each storage).
std::string option_clause(const TableInfo *table, bool keyless, bool gathers = true);
// The row bound of a keyless read of `table`: its sql_motion_row_max option when given, else
// picoroute.keyless_row_max (0: none).
int keyless_row_bound(const TableInfo *table);
// " OPTION (sql_motion_row_max = rows, ...)" (rows < 0: not written), with the instruction limit of
// a keyless statement when `lift_opcodes`; "" when execution_options is off.
std::string option_clause_rows(const TableInfo *table, int rows, bool lift_opcodes);
// The most rows one INSERT ... VALUES may carry for `table` (0: no limit).
int insert_row_limit(const TableInfo *table);

// Sets DateStyle ISO, IntervalStyle postgres, extra_float_digits 3 and TimeZone UTC for the
// output functions that write values sent to Picodata, like postgres_fdw's
// set_transmission_modes; returns the GUC nest level to pass to reset_transmission_modes.
int set_transmission_modes();
void reset_transmission_modes(int nestlevel);
// Whether the text of a value of `type` may depend on the settings set_transmission_modes sets
// (false only for built-in types whose output never reads them: integers, numeric, text...).
bool output_needs_transmission_modes(Oid type);
// A numeric value rounded to the scale of `typmod` when that is exact (no digit lost, no
// overflow); the value itself otherwise. Picodata hashes a decimal with its scale.
Datum numeric_to_typmod(Datum value, int32 typmod);
// Cuts the trailing blanks of a character(n) value's text in place: picoroute sends character(n)
// values as PostgreSQL compares them (shippable.cpp).
void trim_trailing_blanks(char *text);
// Refuses a non-NULL value for a json/jsonb column (a Picodata map, array or any column): Picodata
// cannot take such values as parameters.
void refuse_json_value(Relation rel, AttrNumber attnum);

}  // namespace picoroute::pg::fdw
