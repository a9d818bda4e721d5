// Executing pushed joins and upper relations (pushed_scan.cpp).
#pragma once

extern "C" {
#include "postgres.h"

#include "commands/explain.h"
#include "nodes/execnodes.h"
}

namespace picoroute::pg::fdw {

// The executor callbacks of a ForeignScan with scanrelid 0 (PlanKind Join or Upper); handler.cpp
// hands them over.
void pushed_begin(ForeignScanState *node, int eflags);
TupleTableSlot *pushed_iterate(ForeignScanState *node);
void pushed_rescan(ForeignScanState *node);
void pushed_end(ForeignScanState *node);
void pushed_explain(ForeignScanState *node, ExplainState *es);

}  // namespace picoroute::pg::fdw
