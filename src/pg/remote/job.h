// One statement for one instance (a Job), and the I/O of one attempt to run it: sent over the
// connection cache (prepared statements included, remote_stmt.h), its answer collected and handed
// to the core as plain data (routing::Answer), each event counted where it happens
// (pg/stats/stats.h: the statement sent, its answer, its failure) and its route logged
// (picoroute.log_routes).
#pragma once

extern "C" {
#include "postgres.h"

#include "libpq-fe.h"
#include "portability/instr_time.h"
}

#include "core/routing/answer.h"
#include "core/routing/target.h"
#include "pg/remote/connection.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace picoroute::pg::remote {

struct Job;

// Measures the answer of one statement as it arrives, for the statistics and the route log: armed
// when the statement leaves (its time runs from there), then given each result of the answer, then
// its end. Does nothing (reads no clock, looks at no value) while neither is on.
class AnswerMeter {
  public:
    void start() noexcept;
    // One result of the answer. Unless `final`, an error that remote_stmt may answer by sending
    // the statement again (may_be_resent) is not counted: a streamed answer's meter sees it before
    // that decision (so an invalidation met twice, which ends the statement, goes uncounted there).
    void add(const PGresult *result, bool final = false) noexcept;
    // The whole answer arrived: answer_received, the table's rows, statement_failed for an
    // error answer (refused before running, or the statement's own), and the route's log line
    // (which may raise an out-of-memory error, as any ereport).
    void end(const Job &job);
    // An error answer was met (it ends the statement: only the answer's end follows).
    bool failed() const noexcept { return error_ != Error::None; }

  private:
    bool armed_ = false;
    bool stats_ = false;
    instr_time start_;
    uint64_t rows_ = 0, bytes_ = 0, written_ = 0;
    enum class Error { None, Refused, Remote } error_ = Error::None;
};

// What a job sends and where: everything a copy of a job carries (Job::copy copies it whole, so
// a field added here is never forgotten there).
struct JobStatement {
    routing::Target target;  // target.sent: how it was routed, as the statistics count it
    std::string sql;
    // The statement as errors show it, when it differs from sql (the routed bucket written out
    // where sql has it as a parameter).
    std::string shown;
    std::vector<const char *> values;  // text parameters, nullptr = NULL
    // A write that may span several replicasets (a keyless or multi-owner statement on a sharded
    // table): Picodata does not apply it atomically, so a failure may leave it applied on some of
    // them, and its error must not say that nothing was applied.
    bool may_span = false;
    // A statement on a sharded table, which Picodata dispatches to the tier's storages (and a
    // master of the tier that is down stalls); false for a global table or the catalog.
    bool sharded = true;
    // The foreign table it runs for (picoroute_stat_tables), InvalidOid for none; its rows count
    // as the table's unless rows_of_table is false (a chunked read's count per bucket).
    Oid table = InvalidOid;
    bool rows_of_table = true;

    const std::string &shown_sql() const { return shown.empty() ? sql : shown; }
};

// One statement for one instance and its answer. Only the answer is its own: a field of the
// statement belongs in JobStatement.
struct Job : JobStatement {
    ResultPtr result;   // filled by run_jobs: PGRES_TUPLES_OK or PGRES_COMMAND_OK
    AnswerMeter meter;  // the answer's measure, not copied either

    // Copies the parameter values into `store` and points `values` at the copies, for a job that
    // outlives the values it was given (`store` must live as long as the job).
    void own_values(std::vector<std::optional<std::string>> *store);
    // A copy to run on its own: the statement, not the answer (its result and meter).
    Job copy() const;
};

// An answer as the core reads it.
routing::Answer answer_of(const PGresult *result);

// Sends `job` to its target (send_routed), counted as sent (for its table too); a failure to send
// is counted as a connection error and thrown (ConnectionFailure, sent = false).
Connection *send_job(Job &job, const ConnParams &params);
// Collects its whole answer into job.result (collect_routed), measured; a connection lost after
// the send is counted as an unknown outcome and thrown (ConnectionFailure, sent = true).
void collect_job(Job &job, Connection *connection);
// The connection of a job whose answer is streamed broke after the send: an unknown outcome.
void count_lost(const Job &job) noexcept;

// Throws the remote error of `job`'s answer (throw_remote_error), with `detail` appended to the
// remote DETAIL; for an answer that is neither rows nor a command status, picoroute's error.
// Nothing for a good answer.
void check_answer(const Job &job, const std::string &detail = {});

}  // namespace picoroute::pg::remote
