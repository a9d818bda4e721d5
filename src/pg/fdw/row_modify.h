// UPDATE and DELETE written row by row, by primary key (row_modify.cpp): what modify.cpp's
// callbacks hand over to it. Plain C style: every function may ereport.
#pragma once

extern "C" {
#include "postgres.h"

#include "commands/explain.h"
#include "executor/tuptable.h"
#include "nodes/execnodes.h"
#include "nodes/pathnodes.h"
}

namespace picoroute::pg::fdw {

// The first member of the executor state of every modification of a picoroute foreign table
// (ri_FdwState): EndForeignModify tells a row-by-row UPDATE or DELETE from an INSERT by it.
struct ModifyKind {
    bool row_by_row;
};

// AddForeignUpdateTargets: a DELETE reads the whole old row too (an UPDATE always does), whose
// primary key and sharding key identify the row to write.
void add_foreign_update_targets(PlannerInfo *root, Index rtindex, RangeTblEntry *target_rte,
                                Relation target_relation);
// BeginForeignModify of an UPDATE (`target_attrs`: the columns set) or a DELETE: finds the
// identity (primary key, sharding key) and sets rinfo->ri_FdwState.
void row_modify_begin(ModifyTableState *mtstate, ResultRelInfo *rinfo, CmdType op,
                      List *target_attrs);
// ExecForeignUpdate / ExecForeignDelete: buffers the row's statement (sent per batch_size rows);
// returns `slot` holding the row as written (RETURNING).
TupleTableSlot *row_modify_exec(ResultRelInfo *rinfo, TupleTableSlot *slot,
                                TupleTableSlot *plan_slot);
// EndForeignModify: sends what is buffered.
void row_modify_end(ResultRelInfo *rinfo);
void row_modify_explain(ResultRelInfo *rinfo, CmdType op, List *target_attrs, ExplainState *es);

}  // namespace picoroute::pg::fdw
