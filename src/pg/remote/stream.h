// Streaming the answers of routed reads: rows are handed over one at a time as they arrive (libpq
// single-row mode), so a scan's memory does not grow with its row count, and a scan that stops
// early (a satisfied LIMIT) stops its remote statements.
//
// - Every job is sent at once (each instance starts working), except a second job to the same
//   instance, sent as soon as the one before it has been read; the answers are read one job after
//   the other.
// - A job whose connection fails before it delivered a row, or whose answer is an error after
//   which a read is sent again (core/routing/answer.h, resendable), is run again the buffered
//   way, with the failover of run_jobs (a read: refresh, then the new owner or a coordinator; a
//   scatter over masters: once more on the same master, then the call fails).
//   After a row was delivered a failure is final: running it again would return rows twice. A
//   read Picodata refused for not being a leader read goes again as one (leader_reads.h). The
//   core decides each of these (core/routing/stream.h); the stream does the I/O.
// - When another statement of the session needs a connection the stream is reading, the stream
//   first reads the rest of that answer (ConnectionReader::read_rest) into a tuplestore bounded by
//   work_mem (spill.h): the rows beyond it go to a temporary file, not to the backend's memory.
//   That read checks for interrupts between rows.
// - Destroyed before the end: an answer that has fully arrived is consumed and the connection
//   stays cached; otherwise the connection is closed, which ends the statement on the server.
#pragma once

#include "core/routing/stream.h"
#include "pg/remote/rounds.h"
#include "pg/remote/spill.h"

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace picoroute::pg::remote {

class RowStream final : public ConnectionReader {
  public:
    // `ncols`: the number of columns each answer must have (0: any, and no values are handed
    // over). `retry`: Read, or Never for a scatter over masters (see run_jobs). The jobs'
    // parameter values are copied. `context`: the scan's memory context, where rows read ahead
    // are kept; their temporary file belongs to the resource owner current at construction.
    RowStream(std::vector<Job> jobs, ConnParams params, std::string tier, routing::ReadPref pref,
              routing::Retry retry, int ncols, MemoryContext context);
    ~RowStream();
    RowStream(const RowStream &) = delete;
    RowStream &operator=(const RowStream &) = delete;

    // Sends every job. Throws like run_jobs for what cannot be retried.
    void start();
    // The next row: values[0..ncols-1] point to its text values (nullptr for NULL), valid until
    // the next call. False at the end.
    bool next(const char **values);
    // The row handed over last is no longer needed (its values were converted): its memory goes
    // now rather than at the next call, so a huge value is not held twice while it is used.
    void release_row() noexcept { row_.reset(); }

    void read_rest(Connection *connection) override;
    void forget(Connection *connection) noexcept override;
    // The statements sent again so far (run_jobs' retries of a failed source).
    uint32_t sent_again() const { return sent_again_; }
    // The job being read (the first one during start()), and the rows it handed over so far.
    const Job &current_job() const {
        return sources_[current_ < sources_.size() ? current_ : 0].job;
    }
    size_t current_delivered() const {
        return current_ < sources_.size() ? sources_[current_].delivered : 0;
    }
    size_t jobs() const { return sources_.size(); }
    int ncols() const { return ncols_; }
    routing::Retry retry() const { return retry_; }
    // Gives up the job being read (its answer failed before any row: another reader takes its
    // rows); next() goes on with the following jobs.
    void skip_current();

  private:
    struct Source {
        Job job;
        std::vector<std::optional<std::string>> values;  // job.values points here
        Connection *conn = nullptr;       // the statement in flight on it, read by this stream
        bool lost = false;                // the connection was closed under the stream
        size_t delivered = 0;             // rows handed over from this job
        std::unique_ptr<RowSpill> ahead;  // rows read ahead by read_rest(), not handed over yet
        ResultPtr ahead_end;              // the result that ended the read-ahead (an error), if any
        std::string failure;              // a connection failure met by read_rest()
        ResultPtr whole;           // an answer with several rows (buffered retry, or no single-row
        int whole_row = 0;         // mode), handed over row by row
        bool complete = false;     // nothing more comes from the connection
        bool invalidated = false;  // read_rest() met a prepared statement invalidated by DDL
        bool deferred = false;     // sent once the statements before it to its instance are read
    };

    // The next result of `s` from its connection: nullptr at its end.
    ResultPtr next_result_of(Source &s);
    // Hands over the next row of `s.whole` / of the rows read ahead; false when there is none.
    bool next_whole_row(Source &s, const char **values);
    bool next_ahead_row(Source &s, const char **values);
    // Hands over a result of one row (single-row mode): it is kept until the next call.
    bool hand_over(Source &s, ResultPtr row, const char **values);
    // Checks a result for errors and column count; true when it holds rows.
    bool rows_in(const Source &s, const PGresult *result);
    void release(Source &s) noexcept;
    // Sends the statement of `s` (or runs it the buffered way: see start()).
    void send(Source &s);
    // The job being read is done: sends the next job deferred to the same instance, and moves on.
    void advance();
    void run_buffered(Source &s);
    // The connection of `s` was lost (`failure` says how): run again the buffered way, or throw
    // when rows were handed over already (the core's after_lost_connection).
    void after_lost(Source &s, const std::string &failure);
    // read_rest() for the source reading `connection`: its answer up to its end, into s.ahead.
    void read_ahead(Source &s, Connection *connection);
    // The answer of `s` said its prepared statement was invalidated (42999, before any row):
    // reads the end of that answer, then prepares and sends the statement again.
    void resend(Source &s);
    // The answer of `s` (before any row) is Picodata's refusal of a read that is not a leader
    // read (leader_reads.h): the stream switches to leader reads and runs `s` again the buffered
    // way. False when it cannot say more (the refusal is then the answer).
    bool read_as_leader(Source &s, const PGresult *refusal);
    // After the error answer of `s`, what the core said (routing::after_error_answer): again as a
    // leader read, else again the buffered way, under run_jobs' failover. False when neither
    // applies (the answer is then the scan's).
    bool fall_back(Source &s, const PGresult *answer, routing::StreamRetry retry);

    std::vector<Source> sources_;
    ConnParams params_;
    std::string tier_;  // by name: a refresh may shift the indexes of tiers
    routing::ReadPref pref_;
    routing::Retry retry_;
    int ncols_;
    size_t current_ = 0;
    MemoryContext context_;
    ResourceOwner owner_;
    ResultPtr row_;  // the row handed over last
    uint32_t sent_again_ = 0;
};

}  // namespace picoroute::pg::remote
