// Running routed statements on their instances: a round sends every statement, then collects every
// answer (in parallel across instances, a second statement to an instance after the first one's
// answer); for what did not run, the core's failover step (core/routing/failover.h) says what to do
// next: send again to another target, wait for the map, or give up with the error to raise. I/O
// only: every decision and every text of an error is the core's.
#pragma once

#include "core/routing/target.h"
#include "core/routing/write_log.h"
#include "pg/remote/connect.h"
#include "pg/remote/job.h"

#include <cstdint>
#include <string>
#include <vector>

namespace picoroute::pg::remote {

using WriteLog = routing::WriteLog;
// The routing decision's types, as the callers of the remote layer name them.
using routing::ReadPref;
using routing::Retry;

// Sends every job, then collects every answer. A remote error is raised with its SQLSTATE and the
// instance's name; what did not run follows `retry` (core/routing/failover.h). `tier` (the tier's
// name, "" for none) and `pref` are used to re-route after a refresh: a tier is named, never given
// by its index, because the refreshed map may hold other tiers. An interrupted wait (query cancel,
// statement_timeout) abandons what still runs (a cancel request where the server can take one). For
// a write (`log` given: the statement's, write_ledger.h), what this call committed, and where its
// outcome is unknown, is added to `log`, and the DETAIL of any failure says which instances
// applied, may have applied, or did not apply the write. `sent_again`, when given, counts the
// statements sent again (EXPLAIN ANALYZE shows it).
void run_jobs(std::vector<Job> &jobs, const ConnParams &params, const std::string &tier,
              routing::ReadPref pref, routing::Retry retry, WriteLog *log = nullptr,
              uint32_t *sent_again = nullptr);

// Whether a job for `target` is held before it is sent (routing::hold on the current map): the
// stream runs such a job the buffered way, with run_jobs' waits.
bool held(const Job &job, const ConnParams &params, const std::string &tier,
          routing::ReadPref pref);

}  // namespace picoroute::pg::remote
