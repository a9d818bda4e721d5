// One statement for one instance (a Job), and the I/O of one attempt to run it: sent over the
// connection cache (prepared statements included, remote_stmt.h), its answer collected and handed
// to the core as plain data (routing::Answer).
#pragma once

extern "C" {
#include "postgres.h"
#include "libpq-fe.h"
}

#include "core/routing/answer.h"
#include "core/routing/target.h"
#include "pg/remote/connection.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace picoroute::pg::remote {

// What a job sends and where: everything a copy of a job carries (Job::copy copies it whole, so
// a field added here is never forgotten there).
struct JobStatement {
    routing::Target target;
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

    const std::string &shown_sql() const { return shown.empty() ? sql : shown; }
};

// One statement for one instance and its answer. Only the answer is its own: a field of the
// statement belongs in JobStatement.
struct Job : JobStatement {
    ResultPtr result;  // filled by run_jobs: PGRES_TUPLES_OK or PGRES_COMMAND_OK

    // Copies the parameter values into `store` and points `values` at the copies, for a job that
    // outlives the values it was given (`store` must live as long as the job).
    void own_values(std::vector<std::optional<std::string>> *store);
    // A copy to run on its own: the statement, not the answer.
    Job copy() const;
};

// An answer as the core reads it.
routing::Answer answer_of(const PGresult *result);

// Sends `job` to its target (send_routed); a failure to send is thrown (ConnectionFailure, sent =
// false).
Connection *send_job(Job &job, const ConnParams &params);
// Collects its whole answer into job.result (collect_routed); a connection lost after the send is
// thrown (ConnectionFailure, sent = true).
void collect_job(Job &job, Connection *connection);

// Throws the remote error of `job`'s answer (throw_remote_error), with `detail` appended to the
// remote DETAIL; for an answer that is neither rows nor a command status, picoroute's error.
// Nothing for a good answer.
void check_answer(const Job &job, const std::string &detail = {});

}  // namespace picoroute::pg::remote
