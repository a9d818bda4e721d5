// ANALYZE (analyze.cpp).
#pragma once

extern "C" {
#include "postgres.h"

#include "foreign/fdwapi.h"
}

namespace picoroute::pg::fdw {

// AnalyzeForeignTable: the row count and a sample by bucket.
bool analyze_foreign_table(Relation relation, AcquireSampleRowsFunc *func, BlockNumber *totalpages);

}  // namespace picoroute::pg::fdw
