// Running a set of routed statements on their instances: sent in parallel, answers collected,
// remote errors raised with the instance's name, and picoroute's failure rules applied (see
// routing.h for the rules; the decisions themselves live there and in core/routing/target.h).
#pragma once

#include "pg/remote/routing.h"
#include "pg/remote/write_ledger.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace picoroute::pg::remote {

// Failed jobs are sent again where the map puts their buckets, within picoroute.failover_wait.
enum class Retry {
    Read,   // after any connection failure, and after a refusal before running
    Write,  // only when never sent, or refused before running on its one replicaset
    Never   // scatter over masters: any failure is final
};

struct Job {
    Target target;
    std::string sql;
    // The statement as errors show it, when it differs from sql (the routed bucket written out
    // where sql has it as a parameter).
    std::string shown;
    std::vector<const char *> values;  // text parameters, nullptr = NULL
    ResultPtr result;                  // filled by run_jobs: PGRES_TUPLES_OK or PGRES_COMMAND_OK
    // A write that may span several replicasets (a keyless or multi-owner statement on a sharded
    // table): Picodata does not apply it atomically, so a failure may leave it applied on some of
    // them, and its error must not say that nothing was applied.
    bool may_span = false;
    // A statement on a sharded table, which Picodata dispatches to the tier's storages (and a
    // master of the tier that is down stalls); false for a global table or the catalog.
    bool sharded = true;
    const std::string &shown_sql() const { return shown.empty() ? sql : shown; }
    // Copies the parameter values into `store` and points `values` at the copies, for a job that
    // outlives the values it was given (`store` must live as long as the job).
    void own_values(std::vector<std::optional<std::string>> *store);
};

// Whether the statement of `target` touches one replicaset: one bucket, or buckets that all
// belong to one replicaset by the current map (`tier` is the tier's name). A statement without
// buckets (keyless) is not known to.
bool one_replicaset(const Target &target, const std::string &tier);

// Whether `job` went to a coordinator only because an owner of its buckets has no usable instance
// (routing.h, awaiting_master): run_jobs does not send it before the map shows one, within
// picoroute.failover_wait.
bool awaits_master(const Job &job, const std::string &tier, ReadPref pref);

// Sends every job, then collects every answer (parallel across instances). A remote error is
// raised with its SQLSTATE and the instance's name; unreachable instances follow `retry`.
// `tier` (the tier's name, "" for none) and `pref` are used to re-route after a refresh: a tier is
// named, never given by its index, because the refreshed map may hold other tiers (sorted by name,
// a new one shifts the indexes). An interrupted wait (query cancel,
// statement_timeout) sends a cancel request to every instance still running a job. For a write
// (`log` given: the statement's, write_ledger.h), what this call committed, and where its outcome
// is unknown, is added to `log`, and the DETAIL of any failure says which instances applied, may
// have applied, or did not apply the write.
// `sent_again`, when given, counts the statements sent again (EXPLAIN ANALYZE shows it).
void run_jobs(std::vector<Job> &jobs, const ConnParams &params, const std::string &tier,
              ReadPref pref, Retry retry, WriteLog *log = nullptr, uint32_t *sent_again = nullptr);

}  // namespace picoroute::pg::remote
