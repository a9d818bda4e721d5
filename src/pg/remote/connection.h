// The per-session cache of libpq connections to Picodata instances, and the one-round-trip
// statement execution on top of it.
//
// A connection is keyed by the instance's pgproto address and by who uses it: the user mapping of
// a foreign server (FDW scans and modifications) or the local user (picoroute_exec with the
// credentials of picoroute.conninfo). It lives until the session ends, the instance leaves the
// topology, the credentials change, it breaks, or picoroute_disconnect closes it.
//
// Picodata runs every statement in autocommit: a remote write is committed when its answer
// arrives, whatever the local transaction does afterwards. Nothing here sends BEGIN, SET, DECLARE
// or FETCH: a statement is one PQsendQueryParams (Parse/Bind/Describe/Execute/Sync in one packet).
//
// Waiting goes through the latch-aware libpq layer (pg/libpq_io.h), which checks for interrupts
// (query cancel, statement_timeout) through pg_call, so a cancel unwinds C++ frames cleanly; a
// connection left with a statement in flight is closed, never reused.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
#include "libpq-fe.h"
}

#include "core/routing/write_log.h"
#include "pg/libpq_io.h"
#include "pg/remote/connect.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace picoroute::pg::remote {

class Connection;

// What a connection keeps about the statements prepared on it (implemented by remote_stmt.cpp). The
// connection owns it and destroys it when it closes; the statements the instance holds for the
// connection end with the connection itself.
class PreparedStatements {
  public:
    virtual ~PreparedStatements() = default;
    virtual size_t held() const = 0;  // named statements the instance holds for the connection
};

// Something that keeps a statement in flight on a connection between calls (a streaming scan).
// Before the cache hands the connection to another statement it calls read_rest(): the reader
// reads the rest of its answer (buffering it) so that the connection is idle again; it may throw
// (an interrupt while waiting). When the connection is closed under it, forget(): the reader must
// not touch it again.
class ConnectionReader {
  public:
    virtual void read_rest(Connection *connection) = 0;
    virtual void forget(Connection *connection) noexcept = 0;

  protected:
    ~ConnectionReader() = default;
};

// Its KeptWaitSet (wait_set, socket_pos, socket_events) is kept for the connection's life so that
// waiting for an answer costs one epoll_wait, not an epoll set built and closed per wait.
class Connection : public KeptWaitSet {
  public:
    ~Connection();
    PGconn *conn = nullptr;
    std::string address;  // host:port
    std::string remote_user;
    // The connection options, to notice a changed user mapping (compared as they are: a
    // statement on a cached connection builds no string).
    std::vector<std::pair<std::string, std::string>> options;
    Oid umid = InvalidOid;
    Oid userid = InvalidOid;
    std::string server_name;
    TimestampTz opened_at = 0;
    TimestampTz last_used = 0;
    uint64_t statements = 0;
    bool busy = false;                   // a statement is in flight
    ConnectionReader *reader = nullptr;  // streaming the statement in flight, if any
    // It received a row of kOversizedRowBytes or more. libpq keeps its input buffer at the size of
    // the largest message it read, for the connection's life: such a connection is closed at the
    // end of the transaction (once idle), so one huge value does not stay in the backend's memory.
    bool oversized = false;
    // The named statements prepared on this connection (remote_stmt.h); they end with it.
    std::unique_ptr<PreparedStatements> statement_cache;
};

// Returns a ready connection to `address` for `params`, opening or reopening it as needed. A cached
// connection is checked first (status, and a zero-timeout look at its socket: a server that closed
// it while idle is noticed before anything is sent). Throws ConnectionFailure(sent = false).
Connection *get_connection(const std::string &address, const ConnParams &params);

// Closes idle connections to addresses that are no longer instances of the current map. Call at
// the start of an operation, before get_connection.
void sweep_connections();

// Closes and forgets one connection (e.g. after a failure).
void discard_connection(Connection *connection);
// Sends a cancel request for the statement `connection` is running (nothing when it is idle).
// True when the request was delivered; the answer is still to be read. Plain libpq: no
// PostgreSQL call, safe on error paths.
bool cancel_statement(Connection *connection) noexcept;

// get_connection + send_statement. A cached connection on which the send fails at once is
// reopened once and the statement sent again: it never left this process.
Connection *send_to(const std::string &address, const ConnParams &params, const char *sql,
                    int nparams, const char *const *values);
// The same with another way of sending: `send` throws ConnectionFailure(sent = false) when
// nothing of the statement left this process.
Connection *send_reopening(const std::string &address, const ConnParams &params,
                           const std::function<void(Connection *)> &send);

// Sends one statement; `values` are text parameters (nullptr = NULL). Throws
// ConnectionFailure(sent = false) when libpq could not even queue it.
void send_statement(Connection *connection, const char *sql, int nparams,
                    const char *const *values);
// Waits for the answer of the statement in flight and returns its last PGresult (the caller frees
// it). A server error comes back as a PGRES_FATAL_ERROR result. Throws ConnectionFailure(sent =
// true) when the connection broke.
PGresult *collect_result(Connection *connection);

// Single-row mode: the next result of the statement in flight (one row, PGRES_SINGLE_TUPLE; then
// the final PGRES_TUPLES_OK or an error), waiting for it; nullptr once the statement is complete
// (the connection is then idle). The caller frees each result. Throws ConnectionFailure(sent =
// true) when the connection broke.
PGresult *next_result(Connection *connection);
// Without waiting: reads what has already arrived and, when the whole answer is there, consumes
// it and returns true (the connection is idle again).
bool finish_if_arrived(Connection *connection);

// Frees a PGresult when it goes out of scope (the libpq layer's).
using picoroute::pg::ResultDeleter;
using picoroute::pg::ResultPtr;

// What became of a statement whose answer was not collected (core/routing/write_log.h).
using Abandoned = routing::Abandoned;

// Statements sent to several connections at once and collected together. Any connection whose
// answer was not collected is closed. Where the server handed out a cancel key (plain PostgreSQL),
// it is first sent a cancel request and given a bounded time to answer. Picodata hands out none
// and has no cancel: closing the connection does not stop the statement either, so it runs to its
// end and the caller must say so.
class InFlight {
  public:
    InFlight() = default;
    InFlight(const InFlight &) = delete;
    InFlight &operator=(const InFlight &) = delete;
    ~InFlight();
    void add(Connection *connection) { connections_.push_back(connection); }
    void done(Connection *connection);
    // Closes every connection still waiting for an answer (cancelling first where the server can);
    // tells what became of each.
    std::vector<Abandoned> abandon();

  private:
    std::vector<Connection *> connections_;
};

// The row size from which a connection is closed at the end of the transaction (see oversized).
constexpr size_t kOversizedRowBytes = 16u << 20;

// How long a cancelled statement is given to answer before its connection is closed.
constexpr int kCancelWaitMs = 2000;

// Throws a PostgreSQL error for a failed remote statement: the remote SQLSTATE (mapped,
// core/routing/sqlstate_map.h), message, detail and hint, plus a context naming the instance (and
// replicaset) and the remote SQL (core/routing/reports.h). `detail`, when given, follows the
// remote DETAIL on a line of its own (what picoroute knows of the statement).
[[noreturn]] void throw_remote_error(const PGresult *result, const std::string &address,
                                     const std::string &replicaset, const char *sql,
                                     const std::string &detail = {});

// One row of picoroute_connections().
struct ConnectionInfo {
    std::string address, remote_user, server_name;
    TimestampTz opened_at;
    uint64_t statements;
    std::string state;
};
std::vector<ConnectionInfo> list_connections();
// Closes idle connections to `address` (all addresses when empty); returns how many.
int disconnect(const std::string &address);

// Registers the transaction callbacks once (idempotent).
void ensure_callbacks();

// Called (from a plain frame: may ereport) before a statement that writes to Picodata is sent:
// applies picoroute.remote_write_in_transaction inside a transaction block (one WARNING per
// block), and remembers the write so that PREPARE TRANSACTION is refused and the block's rollback
// or abort says how many remote writes stay applied.
void before_remote_write(const char *relation);

}  // namespace picoroute::pg::remote
