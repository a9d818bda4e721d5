// The rows a streaming scan reads ahead when it hands its connection over to another statement of
// the session (see stream.h): kept in a PostgreSQL tuplestore bounded by work_mem, so that what
// does not fit goes to a temporary file instead of growing the backend's memory with the rows left.
//
// - The store lives in the scan's memory context and its temporary file belongs to the resource
//   owner that was current when the scan started: both outlive the statement that took the
//   connection, and go with the scan.
// - Each row is a tuple of `ncols` cstring columns (NULL kept as NULL).
// - Every call reaches PostgreSQL through pg_call: an error (a full disk) comes back as a PgError.
#pragma once

extern "C" {
#include "postgres.h"
#include "executor/tuptable.h"
#include "libpq-fe.h"
#include "utils/resowner.h"
#include "utils/tuplestore.h"
}

namespace picoroute::pg::remote {

class RowSpill final {
  public:
    // Throws PgError.
    RowSpill(MemoryContext context, ResourceOwner owner, int ncols);
    // Ends the store (closing its temporary file) while the transaction runs; when it is aborting,
    // the resource owner has closed the file or will, and the memory goes with the context.
    ~RowSpill();
    RowSpill(const RowSpill &) = delete;
    RowSpill &operator=(const RowSpill &) = delete;

    // Appends row `row` of `result` (its first ncols columns). Throws PgError.
    void put(const PGresult *result, int row);
    // The next row, in the order put: values[0..ncols-1] point to its text values (nullptr for
    // NULL), valid until the next call of put() or next(). False when every row was read.
    // Throws PgError.
    bool next(const char **values);
    // Rows put and not read yet.
    size_t waiting() const { return put_ - read_; }

  private:
    MemoryContext context_;
    int ncols_;
    TupleDesc desc_ = nullptr;
    Tuplestorestate *store_ = nullptr;
    TupleTableSlot *slot_ = nullptr;
    Datum *datums_ = nullptr;
    bool *nulls_ = nullptr;
    size_t put_ = 0, read_ = 0;
};

}  // namespace picoroute::pg::remote
