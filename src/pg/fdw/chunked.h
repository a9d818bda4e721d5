// Bounded keyless reads. A base scan without a sharding key asks its coordinator for at most
// keyless_row_bound() rows (OPTION sql_motion_row_max). When Picodata answers that the read has
// more ("Exceeded maximum number of rows", before any row: a coordinator gathers the whole answer
// before it sends one), the scan reads the table again in chunks of consecutive buckets:
//
// - one statement counts the matching rows of each bucket (SELECT "bucket_id", count(*) ... GROUP
//   BY "bucket_id", bounded by the tier's bucket count), and core/chunk_plan.h cuts the buckets
//   into ranges whose rows fit the bound;
// - each range is read by the scan's statement with `AND "bucket_id" BETWEEN a AND b`, one after
//   the other; a range that exceeds the bound when read (rows inserted meanwhile) is split in two
//   and read again (none of its rows had arrived);
// - one bucket holding more matching rows than the bound cannot be read this way: 54000, with a
//   hint that raises the bound.
//
// A row's bucket never changes, so no row is read twice; a row inserted or deleted while the
// chunks are read may or may not be seen (as with any Picodata statement over several replicasets,
// the read is not one snapshot).
#pragma once

#include "pg/fdw/fdw_internal.h"
#include "pg/remote/stream.h"

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/chunk_plan.h"

namespace picoroute::pg::fdw {

// The texts a chunked read sends, made from the scan's statement.
struct ChunkTexts {
    std::string count;               // the per-bucket count, with its OPTION clause
    std::string chunk_prefix;        // the scan's statement followed by " AND " or " WHERE "
    std::string chunk_option;        // the OPTION clause of each chunk statement
    std::string table;               // the foreign table's name, for errors
    bool bound_from_option = false;  // the bound is the table's or server's sql_motion_row_max
    uint64_t bound = 0;
    uint32_t bucket_count = 0;
};

class ChunkedRead final {
  public:
    // `base`: the scan's statement, with its target and parameter values (copied).
    ChunkedRead(const Job &base, ChunkTexts texts, ConnParams params, std::string tier,
                ReadPref pref, int ncols, MemoryContext context);
    // Set once the scan's statement exceeded the bound: the rows come from the chunks.
    bool active = false;
    // Streaming: the next row into values[0..ncols-1]; false at the end. The first call counts
    // the rows per bucket and plans the chunks. Throws for any failure.
    bool next(const char **values);
    // Buffered: every chunk's answer, in bucket order.
    std::vector<ResultPtr> read_all();
    uint32_t sent() const { return sent_; }
    uint32_t sent_again() const;

  private:
    void plan();
    Job job_for(const chunks::Chunk &chunk) const;
    // A chunk that exceeded the bound: its two halves go first in the queue; a chunk of one bucket
    // throws 54000.
    void split(const chunks::Chunk &chunk);
    [[noreturn]] void too_large(uint32_t bucket, uint64_t rows) const;

    Job base_;
    std::vector<std::optional<std::string>> values_;  // base_.values points here
    ChunkTexts texts_;
    ConnParams params_;
    std::string tier_;
    ReadPref pref_;
    int ncols_;
    MemoryContext context_;
    bool planned_ = false;
    std::deque<chunks::Chunk> queue_;
    chunks::Chunk current_;
    std::unique_ptr<RowStream> stream_;
    uint32_t sent_ = 0;
    uint32_t sent_again_ = 0;
};

// Whether `e` is Picodata's row-limit error (XX000 "Exceeded maximum number of rows").
bool is_row_limit_error(const PgError &e);

// Prepares st->chunked for the execution whose jobs are `jobs` (C++: inside guarded()) when they
// can be read in chunks: a base scan (st->chunk_from) of a sharded table, without a key, sent to
// one coordinator, under a bound.
void prepare_chunks(RoutedStatement *st, const std::vector<Job> &jobs, bool keyless, int ncols);

// The scan's statement failed with `e` after handing over `delivered` rows (C++: inside
// guarded()). For the row-limit error of a statement prepared for chunks, with no row delivered,
// activates st->chunked and returns true. Otherwise adds to a row-limit error a hint that names
// the bound's setting, and returns false: the caller rethrows `e`.
bool fall_back_to_chunks(RoutedStatement *st, const PgError &e, size_t delivered);

}  // namespace picoroute::pg::fdw
