// Bounded keyless reads: a statement read in chunks of buckets. A read without a sharding key asks
// its coordinator for at most keyless_row_bound() rows (OPTION sql_motion_row_max). When Picodata
// answers that a base scan's statement has more ("Exceeded maximum number of rows", before any row:
// a coordinator gathers the whole answer before it sends one), that statement is read again in
// chunks of consecutive buckets:
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
// A streaming scan reads in chunks only the statement that failed (a coordinator's, or one
// master's part of a 'masters' scatter, within that master's bucket list), then goes on with the
// others; a scan that reads whole answers reads every statement in chunks. Other reads (pushed
// aggregates and joins, global tables) get a hint naming the bound instead.
//
// A row's bucket never changes, so no row is read twice; a row inserted or deleted while the
// chunks are read may or may not be seen (as with any Picodata statement over several replicasets,
// the read is not one snapshot).
#pragma once

extern "C" {
#include "postgres.h"
}

#include "core/chunk_plan.h"
#include "pg/guard.h"
#include "pg/remote/connection.h"
#include "pg/remote/leader_reads.h"
#include "pg/remote/rounds.h"
#include "pg/remote/stream.h"

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace picoroute::pg::remote {

// What a chunked read needs besides its statements.
struct ChunkLimits {
    std::string table;               // the foreign table's name, for errors
    bool bound_from_option = false;  // the bound is the table's or server's sql_motion_row_max
    uint64_t bound = 0;
    uint32_t bucket_count = 0;
    std::string chunk_option;  // the OPTION clause of each chunk statement
};

// One statement read in chunks: its target and parameter values, its per-bucket count, and its
// text up to where a chunk's bucket range is added.
struct ChunkPart {
    Job base;
    std::vector<std::optional<std::string>> values;  // base.values points here
    std::string count;
    std::string chunk_prefix;  // followed by "bucket_id" BETWEEN a AND b, then the OPTION clause
};

class ChunkedRead final {
  public:
    // `retry`: the scan's own (Never for a 'masters' scatter, as run_jobs takes it).
    ChunkedRead(std::vector<std::unique_ptr<ChunkPart>> parts, ChunkLimits limits,
                ConnParams params, std::string tier, ReadPref pref, Retry retry, int ncols,
                MemoryContext context);
    // Streaming: the next row into values[0..ncols-1]; false at the end. Each part is counted per
    // bucket, then read chunk by chunk. Throws for any failure.
    bool next(const char **values);
    // Buffered: every chunk's answer, part after part, in bucket order.
    std::vector<ResultPtr> read_all();
    uint32_t sent() const { return sent_; }
    uint32_t sent_again() const;

  private:
    // The chunks of part `part_` (its count statement); false when every part was read.
    bool plan_next_part();
    // Takes the next chunk to read into current_ (planning the next part when the queue is
    // empty) and counts it as sent; false when none is left.
    bool take_next_chunk();
    Job job_for(const chunks::Chunk &chunk) const;
    // A chunk that exceeded the bound: its two halves go first in the queue; a chunk of one bucket
    // throws 54000.
    void split(const chunks::Chunk &chunk);
    [[noreturn]] void too_large(uint32_t bucket, uint64_t rows) const;

    std::vector<std::unique_ptr<ChunkPart>> parts_;
    size_t part_ = 0;  // the part whose chunks are queued, +1
    ChunkLimits limits_;
    ConnParams params_;
    std::string tier_;
    ReadPref pref_;
    Retry retry_;
    int ncols_;
    MemoryContext context_;
    std::deque<chunks::Chunk> queue_;
    chunks::Chunk current_;
    std::unique_ptr<RowStream> stream_;
    uint32_t sent_ = 0;
    uint32_t sent_again_ = 0;
};

// Whether `e` is Picodata's row-limit error (XX000 "Exceeded maximum number of rows").
bool is_row_limit_error(const PgError &e);
// The limit a row-limit error names ("... rows (N) in virtual table: M"), -1 when unreadable.
long long named_row_limit(const char *message);

}  // namespace picoroute::pg::remote
