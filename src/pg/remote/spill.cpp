// Rows read ahead by a streaming scan, kept in a tuplestore bounded by work_mem (see spill.h).
extern "C" {
#include "postgres.h"

#include "access/tupdesc.h"
#include "access/xact.h"
#include "catalog/pg_type_d.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/memutils.h"
}

#include "pg/remote/spill.h"

#include "pg/guard.h"

namespace picoroute::pg::remote {

RowSpill::RowSpill(MemoryContext context, ResourceOwner owner, int ncols)
    : context_(context), ncols_(ncols) {
    // The store takes the resource owner current when it begins as the owner of its temporary
    // file: the scan's, not the one of the statement that took the connection.
    ResourceOwner saved = CurrentResourceOwner;
    try {
        pg_call([&] {
            MemoryContext old = MemoryContextSwitchTo(context_);
            CurrentResourceOwner = owner;
            desc_ = CreateTemplateTupleDesc(ncols_);
            for (int c = 0; c < ncols_; c++)
                TupleDescInitEntry(desc_, static_cast<AttrNumber>(c + 1), nullptr, CSTRINGOID, -1,
                                   0);
            datums_ = static_cast<Datum *>(palloc0(sizeof(Datum) * (ncols_ + 1)));
            nulls_ = static_cast<bool *>(palloc0(sizeof(bool) * (ncols_ + 1)));
            slot_ = MakeSingleTupleTableSlot(desc_, &TTSOpsMinimalTuple);
            // Read once, forward: no random access; kept within the session's work_mem (kB).
            store_ = tuplestore_begin_heap(false, false, work_mem);
            MemoryContextSwitchTo(old);
        });
    } catch (...) {
        CurrentResourceOwner = saved;
        throw;
    }
    CurrentResourceOwner = saved;
}

RowSpill::~RowSpill() {
    // An aborting transaction releases (or has released) the resource owner, which closes the
    // temporary file; ending the store then would close it a second time.
    if (store_ == nullptr || !IsTransactionState())
        return;
    try {
        pg_call([&] {
            ExecDropSingleTupleTableSlot(slot_);
            tuplestore_end(store_);
            FreeTupleDesc(desc_);
            pfree(datums_);
            pfree(nulls_);
        });
    } catch (...) {
        // Nothing more to do: the memory goes with the scan's context, the file with its owner.
    }
}

void RowSpill::put(const PGresult *result, int row) {
    for (int c = 0; c < ncols_; c++) {
        nulls_[c] = PQgetisnull(result, row, c) != 0;
        datums_[c] = nulls_[c] ? Datum(0) : CStringGetDatum(PQgetvalue(result, row, c));
    }
    pg_call([&] { tuplestore_putvalues(store_, desc_, datums_, nulls_); });
    put_++;
}

bool RowSpill::next(const char **values) {
    bool found = false;
    pg_call([&] {
        // A row read back from the temporary file is allocated in the current context and freed
        // by the slot when the next one comes: the store's context, not a per-row one.
        MemoryContext old = MemoryContextSwitchTo(context_);
        found = tuplestore_gettupleslot(store_, true, false, slot_);
        if (found)
            slot_getallattrs(slot_);
        MemoryContextSwitchTo(old);
    });
    if (!found)
        return false;
    for (int c = 0; c < ncols_; c++)
        values[c] = slot_->tts_isnull[c] ? nullptr : DatumGetCString(slot_->tts_values[c]);
    read_++;
    return true;
}

}  // namespace picoroute::pg::remote
