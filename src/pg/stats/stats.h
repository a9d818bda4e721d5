// The statistics of picoroute_stat_instances and picoroute_stat_tables: what the remote layer and
// the FDW report, one call per event, counted in shared memory.
//
// Every function here is cheap, never throws, never raises a PostgreSQL error (call it from any
// C++ frame, destructors included) and does nothing while picoroute.track_statistics is off or the
// library was not preloaded. Counters are 64-bit atomics in a slot per instance address (or per
// foreign table); each backend remembers which slot an address has, so after the first event for
// an address an event costs a hash lookup and one to five atomic additions, with no lock. Counts
// are exact under any number of concurrent backends. Slots are taken for good (a reset zeroes
// counters, never frees slots): addresses beyond picoroute.max_stat_instances, and tables beyond
// picoroute.max_stat_tables, are counted together in one row without an address (a table).
//
// Where each call belongs (the remote layer and the FDW's executor):
//   a statement leaves for an instance      statement_sent(address, Sent::...) and, when it is
//                                           run for a foreign table, table_statement(relid, ...)
//                                           (remote/job.cpp, send_job)
//   its whole answer arrived                answer_received(address, rows, bytes, watch.micros())
//                                           with a Stopwatch started just before the send
//                                           (remote/job.cpp, AnswerMeter, with table_rows; fed
//                                           by collect_job and by the streams of stream.cpp)
//   it failed                               statement_failed(address, Failure::...)
//                                           (send_job, collect_job, AnswerMeter, stream.cpp)
//   it is sent again after a failure        statement_resent(address of the new target)
//                                           (remote/rounds.cpp, the failover's sends and leader
//                                           reads; stream.cpp, a stream's own resends)
//   a wait for a failover began             failover_waited(address that failed)
//                                           (remote/rounds.cpp, fail_over)
//   a connection is opened, used, closed    connections.h (counted and listed even while
//                                           picoroute.track_statistics is off)
//   an executor node of a table begins      table_started(relid, TableStart::...)
//   rows read from / written to a table     table_rows(relid, read, written)
//   an aggregate, sort or join on a table   table_work(relid, Work::..., pushed)
//   a keyless read went to bucket chunks    table_chunked_read(relid) (fdw/chunked.cpp)
#pragma once

extern "C" {
#include "postgres.h"
#include "portability/instr_time.h"
}

#include <cstdint>
#include <string_view>

namespace picoroute::pg::stats {

// Shared memory, from the library's shmem hooks (picoroute.cpp): the size to request, and the
// slots' creation or attachment (called with AddinShmemInitLock held).
Size shmem_size();
void shmem_init();

// True while events are counted: preloaded and picoroute.track_statistics on.
bool enabled() noexcept;

// ---- per instance, keyed by the address the statement went to (the map's pgproto host:port) ----

// How a statement was routed.
enum class Sent : uint32_t {
    RoutedByKey,     // to the owner of its buckets (a sharding key or bucket_id fixed them)
    Coordinator,     // to one instance that runs it for the whole cluster (no key, a global table)
    MastersScatter,  // to every master, each for its own buckets (scatter 'masters')
    KeyBatch,        // a batched key list (IN list) of a batched join or INSERT, to one owner
    Chunk,           // a chunk of buckets of a keyless read over its row bound
};
void statement_sent(std::string_view address, Sent kind) noexcept;

// The statement's answer arrived whole: its rows, the bytes of their values, and the time from
// just before the send to the last byte.
void answer_received(std::string_view address, uint64_t rows, uint64_t bytes,
                     uint64_t micros) noexcept;

// Why a statement failed.
enum class Failure : uint32_t {
    RefusedBeforeRunning,  // the instance refused it before running it (e.g. not the master)
    OutcomeUnknown,        // sent, then the answer was lost: it may or may not have run
    Connection,            // the instance could not be reached (nothing was sent)
    Remote,                // the instance ran it and answered with an error
};
void statement_failed(std::string_view address, Failure kind) noexcept;

// A statement sent again after a failure, to `address` (where the refreshed map put it).
void statement_resent(std::string_view address) noexcept;
// A statement began to wait for a failover after `address` failed.
void failover_waited(std::string_view address) noexcept;

// Measures answer_received's time: reads the clock only while statistics are on.
class Stopwatch {
  public:
    Stopwatch() noexcept;
    // Microseconds since construction; 0 when statistics were off then.
    uint64_t micros() const noexcept;

  private:
    instr_time start_;
    bool running_;
};

// ---- per foreign table of the current database, keyed by its oid ----

// The executor node that begins work on a foreign table (EXPLAIN without ANALYZE is not counted).
enum class TableStart : uint32_t {
    Scan,          // a scan of the table (scan_begin)
    PushedScan,    // a join, aggregate, sort or limit pushed to Picodata with the table in it
    DirectModify,  // UPDATE or DELETE sent as one statement
    RowModify,     // UPDATE or DELETE row by row
    Insert,        // INSERT or COPY
};
void table_started(Oid relid, TableStart what) noexcept;
// A remote statement run for the table, routed as `kind`.
void table_statement(Oid relid, Sent kind) noexcept;
void table_rows(Oid relid, uint64_t read, uint64_t written) noexcept;
enum class Work : uint32_t { Aggregate, Sort, Join };
// An aggregate, sort or join over the table: computed by Picodata (pushed) or here.
void table_work(Oid relid, Work what, bool pushed) noexcept;
// A read without a sharding key that went over its row bound and was read in bucket chunks.
void table_chunked_read(Oid relid) noexcept;

}  // namespace picoroute::pg::stats
