// IMPORT FOREIGN SCHEMA from _pico_table (import.cpp).
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/parsenodes.h"
}

namespace picoroute::pg::fdw {

// ImportForeignSchema.
List *import_foreign_schema(ImportForeignSchemaStmt *stmt, Oid serverOid);

}  // namespace picoroute::pg::fdw
