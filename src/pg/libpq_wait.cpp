// Latch-aware libpq waits (see libpq_wait.h).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include "pg/libpq_wait.h"

#include <cstdio>
#include <cstring>

namespace picoroute::pg {

namespace {

long remaining_ms(TimestampTz deadline) {
    return TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
}

// Waits for the socket (read or write) or the latch; the latch callback decides about shutdown.
WaitOutcome wait_socket(PGconn *conn, bool for_write, TimestampTz deadline,
                        LatchCallback on_latch) {
    for (;;) {
        long left = remaining_ms(deadline);
        if (left <= 0)
            return WaitOutcome::Timeout;
        int events = WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH |
                     (for_write ? WL_SOCKET_WRITEABLE : WL_SOCKET_READABLE);
        int rc = WaitLatchOrSocket(MyLatch, events, PQsocket(conn), left, PG_WAIT_EXTENSION);
        if (rc & WL_LATCH_SET) {
            ResetLatch(MyLatch);
            if (on_latch != nullptr && on_latch())
                return WaitOutcome::Shutdown;
        }
        if (rc & (WL_SOCKET_READABLE | WL_SOCKET_WRITEABLE))
            return WaitOutcome::Ready;
    }
}

void set_error(char *error, size_t size, const char *prefix, const char *detail) {
    snprintf(error, size, "%s%s", prefix, detail ? detail : "");
    // libpq messages end with a newline; keep one-line errors.
    size_t len = strlen(error);
    while (len > 0 && (error[len - 1] == '\n' || error[len - 1] == ' '))
        error[--len] = '\0';
}

}  // namespace

PGconn *connect_with_deadline(const char *const *keywords, const char *const *values,
                              int timeout_ms, LatchCallback on_latch, char *error,
                              size_t error_size, WaitOutcome *outcome) {
    TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
    *outcome = WaitOutcome::Ready;
    PGconn *conn = PQconnectStartParams(keywords, values, 1);
    if (conn == nullptr) {
        set_error(error, error_size, "out of memory", nullptr);
        return nullptr;
    }
    if (PQstatus(conn) == CONNECTION_BAD) {
        set_error(error, error_size, "", PQerrorMessage(conn));
        PQfinish(conn);
        return nullptr;
    }
    PostgresPollingStatusType status = PGRES_POLLING_WRITING;
    for (;;) {
        if (status == PGRES_POLLING_OK)
            break;
        if (status == PGRES_POLLING_FAILED) {
            set_error(error, error_size, "", PQerrorMessage(conn));
            PQfinish(conn);
            return nullptr;
        }
        WaitOutcome waited = wait_socket(conn, status == PGRES_POLLING_WRITING, deadline, on_latch);
        if (waited != WaitOutcome::Ready) {
            *outcome = waited;
            set_error(error, error_size,
                      waited == WaitOutcome::Timeout ? "timeout while connecting" : "shutdown",
                      nullptr);
            PQfinish(conn);
            return nullptr;
        }
        status = PQconnectPoll(conn);
    }
    return conn;
}

PGresult *exec_with_deadline(PGconn *conn, const char *sql, int nparams, const char *const *params,
                             int timeout_ms, LatchCallback on_latch, char *error, size_t error_size,
                             WaitOutcome *outcome) {
    TimestampTz deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), timeout_ms);
    *outcome = WaitOutcome::Ready;
    int sent = nparams > 0
                   ? PQsendQueryParams(conn, sql, nparams, nullptr, params, nullptr, nullptr, 0)
                   : PQsendQuery(conn, sql);
    if (!sent) {
        set_error(error, error_size, "", PQerrorMessage(conn));
        return nullptr;
    }
    // Flush the query out, then read until libpq has the whole answer.
    for (;;) {
        int flushed = PQflush(conn);
        if (flushed == 0)
            break;
        if (flushed < 0) {
            set_error(error, error_size, "", PQerrorMessage(conn));
            return nullptr;
        }
        WaitOutcome waited = wait_socket(conn, true, deadline, on_latch);
        if (waited != WaitOutcome::Ready) {
            *outcome = waited;
            set_error(error, error_size,
                      waited == WaitOutcome::Timeout ? "timeout while sending a query" : "shutdown",
                      nullptr);
            return nullptr;
        }
    }
    PGresult *last = nullptr;
    for (;;) {
        while (PQisBusy(conn)) {
            WaitOutcome waited = wait_socket(conn, false, deadline, on_latch);
            if (waited != WaitOutcome::Ready) {
                *outcome = waited;
                set_error(error, error_size,
                          waited == WaitOutcome::Timeout ? "timeout while waiting for an answer"
                                                         : "shutdown",
                          nullptr);
                PQclear(last);
                return nullptr;
            }
            if (!PQconsumeInput(conn)) {
                set_error(error, error_size, "", PQerrorMessage(conn));
                PQclear(last);
                return nullptr;
            }
        }
        PGresult *result = PQgetResult(conn);
        if (result == nullptr)
            break;
        PQclear(last);
        last = result;
    }
    if (last == nullptr)
        set_error(error, error_size, "", PQerrorMessage(conn));
    return last;
}

}  // namespace picoroute::pg
