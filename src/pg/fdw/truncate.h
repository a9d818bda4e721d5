// TRUNCATE (truncate.cpp).
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/parsenodes.h"
}

namespace picoroute::pg::fdw {

// ExecForeignTruncate: one remote TRUNCATE TABLE per table, through a coordinator.
void exec_foreign_truncate(List *rels, DropBehavior behavior, bool restart_seqs);

}  // namespace picoroute::pg::fdw
