// The write logs of the statements running in this backend (core/routing/write_log.h), and the
// hooks that make every error of such a statement say what it wrote.
//
// A write path (an INSERT's batches, COPY FROM, a direct UPDATE or DELETE, TRUNCATE, a write of
// picoroute_exec) keeps its log in the statement's memory: the log lives, and is known here, as
// long as that memory. Whatever ends the statement with an ERROR while a log is alive (a remote
// error, statement_timeout or a cancel while waiting for an instance or between two batches, a
// lost connection, a local error in the next row, an AFTER trigger), the executor and utility
// hooks installed here catch it on its way out and append to its DETAIL what the live logs hold
// that the error does not already say: the rows each instance committed, the statements applied
// without a row count, and the instances whose outcome is unknown. The hooks wrap ExecutorRun,
// ExecutorFinish and ProcessUtility (COPY and TRUNCATE run there), so nothing depends on the
// place that raised the error.
#pragma once

extern "C" {
#include "postgres.h"
}

#include "core/routing/write_log.h"

namespace picoroute::pg::remote {

using WriteLog = routing::WriteLog;

// A new write log that lives as long as `cxt` (the statement's memory), known to the error hooks
// until then. C++ frame: a PostgreSQL error comes back as a PgError.
WriteLog *statement_write_log(MemoryContext cxt);

// Installs the executor and utility hooks (from _PG_init, when preloaded).
void install_write_ledger_hooks();

}  // namespace picoroute::pg::remote
