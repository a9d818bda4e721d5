// The one latch-aware libpq layer, for the background worker and the backends alike: connecting,
// flushing, reading and collecting results without ever blocking in libpq. Every wait sleeps on
// the connection's socket and the process latch together (and exits on postmaster death), so a
// slow or unreachable Picodata instance never makes the process deaf.
//
// What a set latch means is the caller's (a LatchAction): the worker notes a refresh request and
// abandons the wait on shutdown; a backend checks for interrupts, so that a query cancel or
// statement_timeout unwinds the C++ frames as a PgError (see guard.h). PostgreSQL is called only
// through pg_call, and the latch action outside of it.
//
// The steps report an IoOutcome; the callers turn it into their own errors (the worker's
// SourceError, a backend's ConnectionFailure) with libpq_message() for the text.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
#include "libpq-fe.h"
#include "storage/latch.h"
}

#include <cstdint>
#include <memory>
#include <string>

namespace picoroute::pg {

// Called after the latch was found set (and reset) during a wait. May throw (a backend's interrupt
// check); returns true when the wait must be abandoned (the worker's shutdown).
using LatchAction = bool (*)();

// A backend's LatchAction: CHECK_FOR_INTERRUPTS through pg_call (a cancel or statement_timeout
// becomes a PgError); never abandons a wait.
bool latch_checks_interrupts();

enum class IoOutcome {
    Done,       // the step is complete
    Failed,     // libpq failed: libpq_message(PQerrorMessage(conn)) tells why
    Timeout,    // the deadline passed first
    Abandoned,  // the latch action asked to stop waiting
};

// A wait event set (latch, postmaster death, the socket) kept for a connection's life, so that a
// wait costs one epoll_wait and not an epoll set built and closed each time.
struct KeptWaitSet {
    // nullptr until the first wait (or when no file descriptor was available for it: waits then
    // build a set each time).
    WaitEventSet *wait_set = nullptr;
    int socket_pos = -1;         // position of the socket in wait_set
    uint32_t socket_events = 0;  // WL_SOCKET_READABLE or WL_SOCKET_WRITEABLE
};

// Frees the kept set, if any (plain PostgreSQL call, no error raised).
void release_wait_set(KeptWaitSet &kept) noexcept;

// How the steps of one connection wait.
struct Waiter {
    PGconn *conn = nullptr;
    LatchAction on_latch = nullptr;  // nullptr: a set latch is only reset
    TimestampTz deadline = 0;        // 0: none
    KeptWaitSet *kept = nullptr;     // nullptr: each wait builds its own set (WaitLatchOrSocket)

    // Waits until the socket is writable (or readable). Done, Timeout or Abandoned.
    IoOutcome wait(bool for_write) const;
};

// The deadline `ms` milliseconds from now.
TimestampTz deadline_in(int ms);

// Drives a connection opened by PQconnectStart(Params) until it is made (Done) or fails.
IoOutcome finish_connect(const Waiter &waiter);
// Sends everything libpq has queued (a non-blocking connection may hold part of a statement).
IoOutcome flush_output(const Waiter &waiter);
// Reads until the next result is complete: PQgetResult will not block.
IoOutcome await_result(const Waiter &waiter);

// Frees a PGresult when it goes out of scope.
struct ResultDeleter {
    void operator()(PGresult *result) const { PQclear(result); }
};
using ResultPtr = std::unique_ptr<PGresult, ResultDeleter>;

// True for a result that puts the connection in a COPY state. Picodata never answers with one; a
// server that does would make PQgetResult return it again and again, so every loop over results
// stops at it and the connection is closed.
bool is_copy_result(const PGresult *result);

// Reads every result of the statement in flight and keeps the last in `last` (nullptr when there
// was none). Call after flush_output. A COPY answer ends the read: Failed, with `last` holding it.
IoOutcome read_last_result(const Waiter &waiter, ResultPtr &last);

// libpq's message text without its trailing newline (and blanks); "" for nullptr.
std::string libpq_message(const char *message);
// The same on one line: inner newlines and tabs become blanks.
std::string libpq_message_line(const char *message);

}  // namespace picoroute::pg
