// Named remote statements per cached connection (see remote_stmt.h).
extern "C" {
#include "postgres.h"
}

#include "pg/remote/remote_stmt.h"

#include "core/statement_cache.h"
#include "pg/guard.h"
#include "pg/settings.h"
#include "pg/stats/connections.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

namespace picoroute::pg::remote {

// The cache policy is core/statement_cache.h; this side sends Parse, Bind and DEALLOCATE.
// The statements prepared on one connection: the PreparedStatements a Connection owns
// (connection.h).
class RemoteStatements final : public PreparedStatements {
  public:
    picoroute::StatementCache cache;
    // The named statement in flight, for its second execution after an invalidation.
    bool in_flight = false;
    std::string sql;
    std::string name;  // "" when the statement in flight went unnamed
    std::vector<std::optional<std::string>> values;
    bool retried = false;
    size_t held() const override { return cache.size(); }
};

namespace {

// Picodata's SQLSTATE for a prepared statement invalidated by DDL (not a PostgreSQL code).
constexpr const char *kInvalidatedState = "42999";
// How Picodata refuses a Parse when the instance's statement storage (pg_statement_max, shared by
// every client of the instance) is full: XX000 and this text.
constexpr const char *kStorageFullState = "XX000";
constexpr const char *kStorageFullText = "Statement storage is full";

bool storage_full(const PGresult *result) {
    const char *state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    const char *text = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
    return state != nullptr && text != nullptr && strcmp(state, kStorageFullState) == 0 &&
           strncmp(text, kStorageFullText, strlen(kStorageFullText)) == 0;
}

// The cache of `c`, nullptr when none was made yet.
RemoteStatements *cache_of(Connection *c) {
    return static_cast<RemoteStatements *>(c->statement_cache.get());
}

RemoteStatements *statements_of(Connection *c) {
    if (c->statement_cache == nullptr)
        c->statement_cache = std::make_unique<RemoteStatements>();
    return cache_of(c);
}

// One round trip of a statement that is not the routed one (DEALLOCATE, Parse) on the idle
// connection `c`. Nothing of the routed statement has been sent: a broken connection is
// ConnectionFailure(sent = false). picoroute_connections() counts only routed statements.
ResultPtr round_trip(Connection *c, int sent_ok) {
    if (!sent_ok)
        throw ConnectionFailure(c->address, libpq_message(PQerrorMessage(c->conn)), false);
    c->busy = true;
    ResultPtr result;
    try {
        result.reset(collect_result(c));
    } catch (const ConnectionFailure &f) {
        throw ConnectionFailure(f.address(), f.what(), false);
    }
    c->statements--;
    return result;
}

// Closes the evicted statements (DEALLOCATE is Picodata SQL; Close messages need libpq 17). A
// failure leaves the statement on the instance until the connection closes: its name is never
// used again. Sent as a simple query: a Parse, even of an unnamed statement, needs room in the
// instance's statement storage, which is full when the connection gives its statements back.
void close_evicted(Connection *c, RemoteStatements *rs) {
    for (const std::string &name : rs->cache.take_to_close()) {
        std::string sql = "DEALLOCATE " + name;  // names are picoroute_<n>: nothing to quote
        (void)round_trip(c, PQsendQuery(c->conn, sql.c_str()));
    }
}

// The instance refused a Parse for lack of statement storage: the connection gives back its
// prepared statements (closed before its next statement) and goes unnamed. True when it held any,
// so that a statement refused so finds room when sent again.
bool give_back_storage(Connection *c, RemoteStatements *rs) {
    bool first = !rs->cache.is_storage_full();
    bool freed = rs->cache.storage_full();
    if (first)
        pg_call([&] {
            ereport(LOG, (errmsg("picoroute: the statement storage of Picodata instance %s is "
                                 "full; this connection closes its prepared statements and sends "
                                 "every statement unnamed from now on",
                                 c->address.c_str())));
        });
    return freed;
}

// Prepares `sql` as `name`, after closing the statements due to be closed. False when Parse was
// refused: the statement goes unnamed (refused for lack of storage, after the connection gave its
// prepared statements back, see give_back_storage).
bool prepare(Connection *c, RemoteStatements *rs, const std::string &sql, const std::string &name) {
    close_evicted(c, rs);
    // No parameter types: Picodata infers them from the text, as for an unnamed statement.
    ResultPtr result = round_trip(c, PQsendPrepare(c->conn, name.c_str(), sql.c_str(), 0, nullptr));
    if (PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
        if (storage_full(result.get()))
            give_back_storage(c, rs);
        else
            rs->cache.prepare_failed(sql);  // its error, if any, comes with the statement
        return false;
    }
    rs->cache.prepared(sql, name);
    return true;
}

// The name to execute `sql` under on `c`, preparing it when due; "" to send it unnamed.
std::string statement_name(Connection *c, RemoteStatements *rs, bool invalidation,
                           const std::string &sql) {
    size_t capacity = static_cast<size_t>(std::max(setting_remote_statement_cache_size, 0));
    StatementCache::Use use = rs->cache.use(sql, invalidation ? capacity : 0);
    if (use.kind == StatementCache::Use::Kind::Unnamed)
        return {};
    if (use.kind == StatementCache::Use::Kind::Prepare && !prepare(c, rs, sql, use.name))
        return {};
    return use.name;
}

void send_on(Connection *c, bool invalidation, const std::string &sql,
             const std::vector<const char *> &values) {
    RemoteStatements *rs = statements_of(c);
    rs->in_flight = false;
    rs->retried = false;
    rs->name = statement_name(c, rs, invalidation, sql);
    if (rs->cache.has_to_close())
        close_evicted(c, rs);
    // A connection that may hold named statements keeps what it sends, to send it once more after
    // an invalidation or after giving its statement storage back.
    if (invalidation) {
        rs->in_flight = true;
        rs->sql = sql;
        rs->values.clear();
        for (const char *v : values)
            rs->values.emplace_back(v != nullptr ? std::optional<std::string>(v) : std::nullopt);
    }
    int n = static_cast<int>(values.size());
    if (rs->name.empty()) {
        send_statement(c, sql.c_str(), n, values.data());
        return;
    }
    if (!PQsendQueryPrepared(c->conn, rs->name.c_str(), n, values.data(), nullptr, nullptr, 0))
        throw ConnectionFailure(c->address, libpq_message(PQerrorMessage(c->conn)), false);
    c->busy = true;
    stats::connection_state(c, true, PQTRANS_ACTIVE, c->statements, rs->held());
}

}  // namespace

Connection *send_routed(const std::string &address, const ConnParams &params,
                        const std::string &sql, const std::vector<const char *> &values) {
    return send_reopening(
        address, params, [&](Connection *c) { send_on(c, params.stmt_invalidation, sql, values); });
}

bool may_be_resent(const PGresult *result) {
    if (result == nullptr || PQresultStatus(result) != PGRES_FATAL_ERROR)
        return false;
    const char *state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    return storage_full(result) || (state != nullptr && strcmp(state, kInvalidatedState) == 0);
}

bool statement_invalidated(Connection *c, const PGresult *result) {
    RemoteStatements *rs = cache_of(c);
    if (rs == nullptr || !rs->in_flight || result == nullptr ||
        PQresultStatus(result) != PGRES_FATAL_ERROR)
        return false;
    // Its Parse refused for lack of storage (nothing ran): sent again once the connection's own
    // prepared statements are closed, when it had any.
    if (storage_full(result))
        return !rs->retried && give_back_storage(c, rs);
    if (rs->name.empty())
        return false;
    const char *state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    if (state == nullptr || strcmp(state, kInvalidatedState) != 0)
        return false;
    if (!rs->cache.invalidated(rs->sql, rs->name))
        return false;  // no longer cached
    return !rs->retried;
}

void resend_invalidated(Connection *c) {
    RemoteStatements *rs = cache_of(c);
    std::string sql = rs->sql;
    std::vector<std::optional<std::string>> copies = std::move(rs->values);
    std::vector<const char *> values;
    for (const auto &v : copies)
        values.push_back(v ? v->c_str() : nullptr);
    send_on(c, true, sql, values);
    rs->retried = true;
}

PGresult *collect_routed(Connection *c) {
    ResultPtr result(collect_result(c));
    if (statement_invalidated(c, result.get())) {
        result.reset();
        resend_invalidated(c);
        result.reset(collect_result(c));
    }
    return result.release();
}

}  // namespace picoroute::pg::remote
