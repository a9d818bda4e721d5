// libpq calls that wait on the process latch instead of blocking, so the worker stays responsive
// to SIGTERM, SIGHUP and refresh requests while a Picodata instance is slow or unreachable.
// Frames here hold only plain data: WaitLatchOrSocket may exit the process on postmaster death.
#pragma once

extern "C" {
#include "libpq-fe.h"
}

#include <cstddef>

namespace picoroute::pg {

enum class WaitOutcome { Ready, Timeout, Shutdown };

// Called when the latch is set while waiting; returns true when the wait must be abandoned
// (shutdown). Also records that a wake-up was requested.
using LatchCallback = bool (*)();

// Opens a connection with PQconnectStartParams (expand_dbname on: keywords[0] may be "dbname" with
// a whole connection string, later keywords override it). Returns nullptr and fills `error` on
// failure. `timeout_ms` bounds the whole attempt.
PGconn *connect_with_deadline(const char *const *keywords, const char *const *values,
                              int timeout_ms, LatchCallback on_latch, char *error,
                              size_t error_size, WaitOutcome *outcome);

// Sends a query (extended protocol when nparams > 0) and collects its last result. Returns nullptr
// and fills `error` on a connection failure, timeout or shutdown; a server error comes back as a
// PGresult with PGRES_FATAL_ERROR.
PGresult *exec_with_deadline(PGconn *conn, const char *sql, int nparams, const char *const *params,
                             int timeout_ms, LatchCallback on_latch, char *error, size_t error_size,
                             WaitOutcome *outcome);

}  // namespace picoroute::pg
