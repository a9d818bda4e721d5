// Modifications (modify.cpp): INSERT and the row-by-row UPDATE / DELETE callbacks.
#pragma once

extern "C" {
#include "postgres.h"

#include "foreign/fdwapi.h"
}

#include "pg/fdw/options.h"

namespace picoroute::pg::fdw {

// INSERT and the row-by-row UPDATE / DELETE callbacks (row_modify.cpp writes the latter).
void install_modify_callbacks(struct FdwRoutine *routine);
// Refuses (ereport) an UPDATE that would change a sharding-key column: the row would belong to
// another bucket.
void refuse_key_update(TableInfo *table, List *target_attrs);

}  // namespace picoroute::pg::fdw
