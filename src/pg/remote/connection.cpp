// The connection cache and statement execution over the libpq layer (see connection.h); opening a
// connection is connect.cpp.
extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/errcodes.h"
#include "utils/timestamp.h"
}

#include "pg/remote/connection.h"
#include "pg/remote/connect.h"

#include "core/address.h"
#include "core/remote_text.h"
#include "core/routing/reports.h"
#include "core/routing/sqlstate_map.h"
#include "pg/connect_policy.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/settings.h"
#include "pg/stats/connections.h"
#include "pg/stats/stats.h"

#include <poll.h>

#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace picoroute::pg::remote {

namespace {

// address, user mapping, local user, the read_preference of the startup options
using Key = std::tuple<std::string, Oid, Oid, std::string>;
std::map<Key, std::unique_ptr<Connection>> cache;
uint64_t swept_generation = 0;
bool callbacks_registered = false;

Key key_for(const std::string &address, const ConnParams &params) {
    // A user mapping (possibly PUBLIC) fixes the credentials whoever the local user is.
    return Key(address, params.umid, OidIsValid(params.umid) ? InvalidOid : params.userid,
               params.read_preference);
}

// How a backend waits on a cached connection: on its kept wait event set, checking for interrupts
// (a query cancel or statement_timeout becomes a PgError that unwinds C++ frames), no deadline.
Waiter waiter_of(Connection *c) {
    return Waiter{c->conn, latch_checks_interrupts, 0, c};
}

// The connection's failure after the statement may have reached the server.
[[noreturn]] void lost_after_send(Connection *c) {
    throw ConnectionFailure(c->address, libpq_message(PQerrorMessage(c->conn)), true);
}

// The server answered a statement with a COPY state, which Picodata never does: the connection
// cannot be used any more (its caller closes it), and what the statement did is not known.
[[noreturn]] void unexpected_copy(Connection *c) {
    throw ConnectionFailure(c->address,
                            "the server answered with a COPY state, which Picodata never does; "
                            "the connection was closed",
                            true);
}

// Marks `c` oversized when a row of `result` reached kOversizedRowBytes: libpq's input buffer grew
// to hold it and stays that large until the connection is closed.
void note_row_sizes(Connection *c, const PGresult *result) {
    if (c->oversized)
        return;
    int rows = PQntuples(result), cols = PQnfields(result);
    for (int r = 0; r < rows; r++) {
        size_t bytes = 0;
        for (int col = 0; col < cols; col++)
            bytes += static_cast<size_t>(PQgetlength(result, r, col));
        if (bytes >= kOversizedRowBytes) {
            c->oversized = true;
            return;
        }
    }
}

void publish(Connection *c) {  // in picoroute_stat_connections
    stats::connection_state(c, c->busy, PQtransactionStatus(c->conn), c->statements,
                            c->statement_cache ? c->statement_cache->held() : 0);
}

// The statement in flight has been answered in full: the connection is idle again.
void statement_done(Connection *c) {
    c->busy = false;
    c->statements++;
    c->last_used = GetCurrentTimestamp();
    publish(c);
}

// A cached connection that is idle must have nothing to read; if it has, the server spoke while
// we were silent (an error before closing, usually) and the connection is not to be trusted.
bool idle_connection_alive(PGconn *conn) {
    if (PQstatus(conn) != CONNECTION_OK || PQtransactionStatus(conn) != PQTRANS_IDLE)
        return false;
    for (int round = 0; round < 3; round++) {
        struct pollfd pfd;
        pfd.fd = PQsocket(conn);
        pfd.events = POLLIN;
        pfd.revents = 0;
        int rc = poll(&pfd, 1, 0);
        if (rc == 0)
            return true;
        if (rc < 0)
            return errno == EINTR;
        if (!PQconsumeInput(conn) || PQstatus(conn) != CONNECTION_OK)
            return false;
    }
    return PQstatus(conn) == CONNECTION_OK;
}

// A remote write was (or may have been) sent in the current transaction / warned about in it, and
// how many remote writes a transaction block sent (ROLLBACK does not undo them).
bool remote_write_in_xact = false;
bool warned_in_xact = false;
bool warned_in_session = false;  // picoroute.remote_write_in_transaction = once
int64_t writes_in_block = 0;

// At the abort of a transaction block that wrote through picoroute: what stays applied.
void warn_writes_kept(int64_t writes) {
    if (writes == 0 || setting_remote_write_in_transaction == REMOTE_WRITE_OFF)
        return;
    ereport(WARNING,
            (errcode(ERRCODE_WARNING),
             errmsg_plural("picoroute: the rollback does not undo the %lld remote write statement "
                           "this transaction sent to Picodata",
                           "picoroute: the rollback does not undo the %lld remote write statements "
                           "this transaction sent to Picodata",
                           static_cast<unsigned long>(writes), static_cast<long long>(writes)),
             errdetail("Picodata committed each write when it ran: what they applied stays "
                       "applied.")));
}

// Closes the cached connections for which `close` is true (no streaming scan reads them).
template <typename Pred>
void close_connections_if(Pred close) {
    for (auto it = cache.begin(); it != cache.end();) {
        const Connection &c = *it->second;
        if (c.reader == nullptr && close(c))
            it = cache.erase(it);
        else
            ++it;
    }
}

// A connection a streaming scan reads is closed by that scan when its executor state goes away
// (with the aborted (sub)transaction, or later for an outer scan that lives on); any other busy
// connection is in an unknown state and is closed.
void close_busy_connections() {
    close_connections_if([](const Connection &c) { return c.busy; });
}

// Closes the idle connections that got a huge row (oversized) or hold a place others may wait for.
void close_oversized_connections() {
    close_connections_if(
        [](const Connection &c) { return (c.oversized || stats::budget_reached(&c)) && !c.busy; });
}

void xact_callback(XactEvent event, void *) {
    if (event == XACT_EVENT_PRE_PREPARE && remote_write_in_xact)
        ereport(ERROR,
                (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                 errmsg("picoroute: cannot PREPARE a transaction that has written to Picodata"),
                 errdetail("Picodata committed each remote write when it ran; it cannot take part "
                           "in a two-phase commit."),
                 errhint("Run remote writes outside the transaction that is prepared.")));
    bool abort = event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT;
    if (abort || event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
        event == XACT_EVENT_PREPARE) {
        int64_t writes = writes_in_block;
        remote_write_in_xact = false;
        warned_in_xact = false;
        writes_in_block = 0;
        if (abort)
            warn_writes_kept(writes);
    }
    if (abort)
        close_busy_connections();
    if (abort || event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT)
        close_oversized_connections();
}

// A subtransaction's abort undoes nothing remote either: the transaction keeps its writes (and its
// warning given); only the connections left busy are closed.
void subxact_callback(SubXactEvent event, SubTransactionId, SubTransactionId, void *) {
    if (event == SUBXACT_EVENT_ABORT_SUB)
        close_busy_connections();
}

}  // namespace

Connection::~Connection() {
    if (reader != nullptr)
        reader->forget(this);
    statement_cache.reset();
    release_wait_set(*this);
    if (conn != nullptr) {
        PQfinish(conn);
        stats::connection_closed(this);
    }
}

void ensure_callbacks() {
    if (callbacks_registered)
        return;
    RegisterXactCallback(xact_callback, nullptr);
    RegisterSubXactCallback(subxact_callback, nullptr);
    callbacks_registered = true;
}

void before_remote_write(const char *relation) {
    ensure_callbacks();
    if (IsTransactionBlock() && setting_remote_write_in_transaction != REMOTE_WRITE_OFF) {
        if (setting_remote_write_in_transaction == REMOTE_WRITE_ERROR)
            ereport(ERROR,
                    (errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
                     errmsg("picoroute: write to Picodata (%s) refused inside a transaction block",
                            relation),
                     errdetail("Picodata commits every remote write at once: ROLLBACK would not "
                               "undo it."),
                     errhint("Run the write outside BEGIN ... COMMIT, or set "
                             "picoroute.remote_write_in_transaction to warn or off.")));
        bool once = setting_remote_write_in_transaction == REMOTE_WRITE_ONCE;
        if (!warned_in_xact && !(once && warned_in_session)) {
            warned_in_xact = true;
            warned_in_session = true;
            ereport(WARNING,
                    (errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
                     errmsg("picoroute: writes to Picodata (%s) are committed at once and are not "
                            "undone by ROLLBACK",
                            relation),
                     errdetail("Picodata commits every remote statement on its own; the local "
                               "transaction block does not include it."),
                     errhint("%s", once ? "This warning is given once per session; "
                                          "picoroute.remote_write_in_transaction sets it to "
                                          "warn (once per transaction block), error or off."
                                        : "This warning is given once per transaction block; "
                                          "picoroute.remote_write_in_transaction sets it to "
                                          "once (once per session), error or off.")));
        }
    }
    remote_write_in_xact = true;
    if (IsTransactionBlock())
        writes_in_block++;
}

Connection *get_connection(const std::string &address, const ConnParams &params) {
    ensure_callbacks();
    Key key = key_for(address, params);
    auto it = cache.find(key);
    if (it != cache.end()) {
        Connection *c = it->second.get();
        if (c->busy && c->reader != nullptr)
            c->reader->read_rest(c);  // a streaming scan reads (buffers) the rest first
        if (!c->busy && c->options == params.options && idle_connection_alive(c->conn))
            return c;
        if (c->busy)
            throw SqlError(ERRCODE_OBJECT_IN_USE,
                           "picoroute: the connection to " + address + " is busy",
                           "Another statement of this session is still reading from it.");
        cache.erase(it);  // dead or stale credentials: reopen
    }
    auto entry = std::make_unique<Connection>();
    stats::Admission admission(address, [&] { return disconnect(address) > 0; });
    entry->conn = open_connection(address, params);
    entry->address = address;
    entry->remote_user = PQuser(entry->conn) ? PQuser(entry->conn) : "";
    entry->options = params.options;
    entry->umid = params.umid;
    entry->userid = params.userid;
    entry->server_name = params.server_name;
    entry->opened_at = GetCurrentTimestamp();
    entry->last_used = entry->opened_at;
    admission.opened(entry.get(), entry->remote_user, entry->server_name, entry->opened_at);
    Connection *raw = entry.get();
    cache[key] = std::move(entry);
    return raw;
}

void sweep_connections() {
    MapRef map = current_map();
    if (map.generation == 0 || map.generation == swept_generation)
        return;
    swept_generation = map.generation;
    std::set<std::string_view> present;
    const SnapshotView &view = *map.view;
    for (uint32_t i = 0; i < view.n_instances(); i++) {
        const InstanceRecord &inst = view.instance(i);
        if (view.str(inst.state) != "Expelled" && inst.address.length > 0)
            present.insert(view.str(inst.address));
    }
    for (auto it = cache.begin(); it != cache.end();) {
        if (!it->second->busy && present.count(std::get<0>(it->first)) == 0)
            it = cache.erase(it);
        else
            ++it;
    }
}

void discard_connection(Connection *connection) {
    for (auto it = cache.begin(); it != cache.end(); ++it) {
        if (it->second.get() == connection) {
            cache.erase(it);
            return;
        }
    }
}

void send_statement(Connection *c, const char *sql, int nparams, const char *const *values) {
    int ok = PQsendQueryParams(c->conn, sql, nparams, nullptr, values, nullptr, nullptr, 0);
    if (!ok)
        throw ConnectionFailure(c->address, libpq_message(PQerrorMessage(c->conn)), false);
    c->busy = true;
    publish(c);
}

Connection *send_reopening(const std::string &address, const ConnParams &params,
                           const std::function<void(Connection *)> &send) {
    Connection *c = get_connection(address, params);
    bool reused = c->statements > 0;
    try {
        send(c);
        return c;
    } catch (const ConnectionFailure &) {
        discard_connection(c);
        if (!reused)
            throw;
    }
    c = get_connection(address, params);
    send(c);
    return c;
}

Connection *send_to(const std::string &address, const ConnParams &params, const char *sql,
                    int nparams, const char *const *values) {
    return send_reopening(address, params,
                          [&](Connection *c) { send_statement(c, sql, nparams, values); });
}

PGresult *collect_result(Connection *c) {
    Waiter waiter = waiter_of(c);
    ResultPtr last;
    if (flush_output(waiter) != IoOutcome::Done ||
        read_last_result(waiter, last) != IoOutcome::Done) {
        if (last != nullptr && is_copy_result(last.get()))
            unexpected_copy(c);
        lost_after_send(c);
    }
    if (last == nullptr || PQstatus(c->conn) != CONNECTION_OK) {
        std::string message = last ? libpq_message(PQresultErrorMessage(last.get()))
                                   : libpq_message(PQerrorMessage(c->conn));
        throw ConnectionFailure(c->address, message, true);
    }
    note_row_sizes(c, last.get());
    statement_done(c);
    return last.release();
}

PGresult *next_result(Connection *c) {
    Waiter waiter = waiter_of(c);
    if (flush_output(waiter) != IoOutcome::Done || await_result(waiter) != IoOutcome::Done)
        lost_after_send(c);
    PGresult *result = PQgetResult(c->conn);
    if (result != nullptr && is_copy_result(result)) {
        PQclear(result);
        unexpected_copy(c);
    }
    if (result != nullptr) {
        note_row_sizes(c, result);
        return result;
    }
    if (PQstatus(c->conn) != CONNECTION_OK)
        lost_after_send(c);
    statement_done(c);
    return nullptr;
}

bool finish_if_arrived(Connection *c) {
    PGconn *conn = c->conn;
    if (PQflush(conn) != 0 || !PQconsumeInput(conn))
        return false;
    while (!PQisBusy(conn)) {
        PGresult *result = PQgetResult(conn);
        if (result == nullptr) {
            if (PQstatus(conn) != CONNECTION_OK)
                return false;
            statement_done(c);
            return true;
        }
        bool copy = is_copy_result(result);
        PQclear(result);
        if (copy)
            return false;  // never idle again: the caller closes it
    }
    return false;
}

namespace {

uint64_t rows_of(const PGresult *result) {
    const char *n = PQcmdTuples(const_cast<PGresult *>(result));
    return n != nullptr && n[0] != '\0' ? strtoull(n, nullptr, 10) : 0;
}

bool can_cancel(Connection *c) noexcept {
    // A server that sent no BackendKeyData (Picodata never does) has no cancel: libpq would still
    // send a request with a zero key, which stops nothing.
    return c->busy && PQbackendPID(c->conn) != 0;
}

}  // namespace

bool cancel_statement(Connection *c) noexcept {
    // PQcancel asks the instance, over a new connection, to stop the statement.
    PGcancel *cancel = can_cancel(c) ? PQgetCancel(c->conn) : nullptr;
    if (cancel == nullptr)
        return false;
    char error[256];
    bool sent = PQcancel(cancel, error, sizeof(error)) != 0;
    PQfreeCancel(cancel);
    return sent;
}

namespace {

// Reads what the server of `c` has sent of its answer, waiting (poll, no latch: bounded and short)
// until `deadline` at most. True with *last set when the whole answer arrived. A COPY state (which
// Picodata never enters) ends the read: PQgetResult would return it forever.
bool read_arrived(Connection *c, TimestampTz deadline, PGresult **last) {
    for (;;) {
        if (!PQconsumeInput(c->conn))
            return false;
        while (!PQisBusy(c->conn)) {
            PGresult *r = PQgetResult(c->conn);
            if (r == nullptr)
                return true;
            ExecStatusType status = PQresultStatus(r);
            PQclear(*last);
            *last = r;
            if (status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH)
                return false;
        }
        long left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
        if (left <= 0)
            return false;
        struct pollfd pfd;
        pfd.fd = PQsocket(c->conn);
        pfd.events = POLLIN;
        pfd.revents = 0;
        if (poll(&pfd, 1, static_cast<int>(left)) < 0 && errno != EINTR)
            return false;
    }
}

// What the whole answer `last` says became of the statement.
void classify_answer(const PGresult *last, Abandoned *a) {
    ExecStatusType status = PQresultStatus(last);
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) {
        a->outcome = Abandoned::Applied;
        a->rows = rows_of(last);
    } else if (status == PGRES_FATAL_ERROR &&
               PQresultErrorField(last, PG_DIAG_SQLSTATE) != nullptr) {
        // One statement on one instance: an error answer means it was not applied there.
        a->outcome = Abandoned::NotApplied;
    }
}

}  // namespace

std::vector<Abandoned> InFlight::abandon() {
    std::vector<Abandoned> out;
    std::vector<bool> cancelled;
    for (Connection *c : connections_) {
        Abandoned a;
        a.address = c->address;
        // Without a cancel key nothing can stop the statement: it runs to its end there.
        if (!can_cancel(c))
            a.outcome = Abandoned::Running;
        cancelled.push_back(can_cancel(c) && cancel_statement(c));
        out.push_back(a);
    }
    // A cancelled statement is given a bounded time to answer (an error: not applied; a normal
    // answer: it had finished, applied). Without a cancel only what already arrived is read.
    TimestampTz now = GetCurrentTimestamp();
    TimestampTz deadline = TimestampTzPlusMilliseconds(now, kCancelWaitMs);
    for (size_t i = 0; i < connections_.size(); i++) {
        Connection *c = connections_[i];
        if (!cancelled[i] && out[i].outcome != Abandoned::Running)
            continue;  // a cancel request that could not be sent: unknown
        PGresult *last = nullptr;
        if (read_arrived(c, cancelled[i] ? deadline : now, &last) && last != nullptr)
            classify_answer(last, &out[i]);
        PQclear(last);
    }
    for (Connection *c : connections_)
        discard_connection(c);
    connections_.clear();
    return out;
}

InFlight::~InFlight() {
    if (!connections_.empty())
        (void)abandon();
}

void InFlight::done(Connection *connection) {
    for (auto it = connections_.begin(); it != connections_.end(); ++it) {
        if (*it == connection) {
            connections_.erase(it);
            return;
        }
    }
}

void throw_remote_error(const PGresult *result, const std::string &address,
                        const std::string &replicaset, const char *sql, const std::string &extra) {
    const char *state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    const char *primary = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
    // The server's texts are bounded and made valid UTF-8 (core/remote_text.h) before they reach
    // the client and the log.
    std::optional<std::string> detail, hint;
    if (const char *d = PQresultErrorField(result, PG_DIAG_MESSAGE_DETAIL))
        detail = bounded_utf8(d);
    if (!extra.empty())
        detail = detail ? *detail + "\n" + extra : extra;
    if (const char *h = PQresultErrorField(result, PG_DIAG_MESSAGE_HINT))
        hint = bounded_utf8(h);
    int code = ERRCODE_CONNECTION_FAILURE;
    std::string message =
        primary ? bounded_utf8(primary) : libpq_message(PQresultErrorMessage(result));
    if (state != nullptr && strlen(state) == 5) {
        // Picodata's XX000 becomes PostgreSQL's code where its text says what failed.
        std::string_view mapped = routing::sqlstate_for_remote_error(state, message);
        code = MAKE_SQLSTATE(mapped[0], mapped[1], mapped[2], mapped[3], mapped[4]);
    }
    if (message.empty())
        message = "picoroute: remote statement failed";
    std::string context = routing::remote_context(address, replicaset, sql ? sql : "");
    // Raised through ereport like any statement error, then carried as a PgError: the server log
    // gets it (or not) according to log_min_messages, as for any other ERROR.
    pg_call([&] {
        ereport(ERROR,
                (errcode(code), errmsg_internal("%s", message.c_str()),
                 detail ? errdetail_internal("%s", detail->c_str()) : 0,
                 hint ? errhint("%s", hint->c_str()) : 0, errcontext("%s", context.c_str())));
    });
    throw SqlError(code, message);  // not reached
}

std::vector<ConnectionInfo> list_connections() {
    std::vector<ConnectionInfo> out;
    for (const auto &[key, c] : cache) {
        ConnectionInfo info;
        info.address = c->address;
        info.remote_user = c->remote_user;
        info.server_name = c->server_name;
        info.opened_at = c->opened_at;
        info.statements = c->statements;
        info.state = c->busy ? "busy" : (PQstatus(c->conn) == CONNECTION_OK ? "idle" : "bad");
        out.push_back(std::move(info));
    }
    return out;
}

int disconnect(const std::string &address) {
    int closed = 0;
    for (auto it = cache.begin(); it != cache.end();) {
        if (!it->second->busy && (address.empty() || it->second->address == address)) {
            it = cache.erase(it);
            closed++;
        } else {
            ++it;
        }
    }
    return closed;
}

}  // namespace picoroute::pg::remote
