// Declarations checked against the cluster (declcheck.cpp).
#pragma once

#include "pg/fdw/options.h"

namespace picoroute::pg::fdw {

// At the first use of a table in a session (and after each change of the map): errors when the
// table's sharding key, tier, distribution or key column types disagree with _pico_table.
void check_declaration_at_first_use(TableInfo *table, Oid userid);

}  // namespace picoroute::pg::fdw
