// Named remote statements per cached connection (see remote_stmt.h).
extern "C" {
#include "postgres.h"
}

#include "pg/remote/remote_stmt.h"

#include "pg/settings.h"

#include <algorithm>
#include <cstring>
#include <list>
#include <memory>
#include <optional>
#include <unordered_map>

namespace picoroute::pg::remote {

// The per-connection statement cache: the StatementCache a Connection owns (connection.h).
class RemoteStatements final : public StatementCache {
  public:
    struct Entry {
        std::string name;     // the statement's name on the instance, "" until prepared
        bool stale = false;   // reported invalidated: prepare again before the next use
        bool failed = false;  // Parse was refused: the text always goes unnamed
        std::list<const std::string *>::iterator at;
    };
    std::unordered_map<std::string, Entry> entries;  // by statement text
    std::list<const std::string *> order;            // keys of entries, most recently used first
    std::vector<std::string> to_close;               // evicted names, closed before the next send
    uint64_t next_id = 0;
    // The named statement in flight, for its second execution after an invalidation.
    const std::string *sql = nullptr;  // key of entries
    std::string name;                  // "" when the statement in flight went unnamed
    std::vector<std::optional<std::string>> values;
    bool retried = false;
};

namespace {

// Picodata's SQLSTATE for a prepared statement invalidated by DDL (not a PostgreSQL code).
constexpr const char *kInvalidatedState = "42999";

// The cache of `c`, nullptr when none was made yet.
RemoteStatements *cache_of(Connection *c) {
    return static_cast<RemoteStatements *>(c->statement_cache.get());
}

RemoteStatements *statements_of(Connection *c) {
    if (c->statement_cache == nullptr)
        c->statement_cache = std::make_unique<RemoteStatements>();
    return cache_of(c);
}

void forget_in_flight(RemoteStatements *rs, const std::string *key) {
    if (rs->sql == key) {
        rs->sql = nullptr;
        rs->name.clear();
    }
}

// Keeps at most `capacity` texts; the prepared ones evicted are closed before the next send.
void shrink(RemoteStatements *rs, size_t capacity) {
    while (rs->entries.size() > capacity) {
        const std::string *key = rs->order.back();
        rs->order.pop_back();
        auto it = rs->entries.find(*key);
        if (!it->second.name.empty())
            rs->to_close.push_back(it->second.name);
        forget_in_flight(rs, key);
        rs->entries.erase(it);
    }
}

// The entry of `sql`, now the most recently used; *first when the text is new.
RemoteStatements::Entry &touch(RemoteStatements *rs, const std::string &sql, size_t capacity,
                               bool *first) {
    auto it = rs->entries.find(sql);
    *first = it == rs->entries.end();
    if (!*first) {
        rs->order.splice(rs->order.begin(), rs->order, it->second.at);
        return it->second;
    }
    shrink(rs, capacity - 1);
    it = rs->entries.emplace(sql, RemoteStatements::Entry()).first;
    rs->order.push_front(&it->first);
    it->second.at = rs->order.begin();
    return it->second;
}

// One round trip of a statement that is not the routed one (DEALLOCATE, Parse) on the idle
// connection `c`. Nothing of the routed statement has been sent: a broken connection is
// ConnectionFailure(sent = false). picoroute_connections() counts only routed statements.
ResultPtr round_trip(Connection *c, int sent_ok) {
    if (!sent_ok)
        throw ConnectionFailure(c->address, PQerrorMessage(c->conn), false);
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
// used again.
void close_evicted(Connection *c, RemoteStatements *rs) {
    std::vector<std::string> names;
    names.swap(rs->to_close);
    for (const std::string &name : names) {
        std::string sql = "DEALLOCATE " + name;
        (void)round_trip(
            c, PQsendQueryParams(c->conn, sql.c_str(), 0, nullptr, nullptr, nullptr, nullptr, 0));
    }
}

// Prepares `sql` under a new name (closing a stale one first). False when Parse was refused.
bool prepare(Connection *c, RemoteStatements *rs, RemoteStatements::Entry &e,
             const std::string &sql) {
    if (!e.name.empty())
        rs->to_close.push_back(e.name);
    e.name.clear();
    e.stale = false;
    close_evicted(c, rs);
    std::string name = "picoroute_" + std::to_string(++rs->next_id);
    // No parameter types: Picodata infers them from the text, as for an unnamed statement.
    ResultPtr result = round_trip(c, PQsendPrepare(c->conn, name.c_str(), sql.c_str(), 0, nullptr));
    if (PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
        e.failed = true;  // sent unnamed: its error, if any, comes with the statement
        return false;
    }
    e.name = std::move(name);
    return true;
}

// The name to execute `sql` under on `c`, preparing it when due; "" to send it unnamed.
std::string statement_name(Connection *c, RemoteStatements *rs, bool invalidation,
                           const std::string &sql) {
    size_t capacity = static_cast<size_t>(std::max(setting_remote_statement_cache_size, 0));
    if (capacity == 0 || !invalidation) {
        shrink(rs, 0);
        return {};
    }
    bool first = false;
    RemoteStatements::Entry &e = touch(rs, sql, capacity, &first);
    if (first || e.failed)
        return {};  // a text is prepared when it comes back
    if ((e.name.empty() || e.stale) && !prepare(c, rs, e, sql))
        return {};
    rs->sql = &rs->entries.find(sql)->first;
    return e.name;
}

void send_on(Connection *c, bool invalidation, const std::string &sql,
             const std::vector<const char *> &values) {
    RemoteStatements *rs = statements_of(c);
    rs->sql = nullptr;
    rs->retried = false;
    rs->name = statement_name(c, rs, invalidation, sql);
    if (!rs->to_close.empty())
        close_evicted(c, rs);
    int n = static_cast<int>(values.size());
    if (rs->name.empty()) {
        send_statement(c, sql.c_str(), n, values.data());
        return;
    }
    rs->values.clear();
    for (const char *v : values)
        rs->values.emplace_back(v != nullptr ? std::optional<std::string>(v) : std::nullopt);
    if (!PQsendQueryPrepared(c->conn, rs->name.c_str(), n, values.data(), nullptr, nullptr, 0))
        throw ConnectionFailure(c->address, PQerrorMessage(c->conn), false);
    c->busy = true;
}

}  // namespace

Connection *send_routed(const std::string &address, const ConnParams &params,
                        const std::string &sql, const std::vector<const char *> &values) {
    return send_reopening(
        address, params, [&](Connection *c) { send_on(c, params.stmt_invalidation, sql, values); });
}

bool statement_invalidated(Connection *c, const PGresult *result) {
    RemoteStatements *rs = cache_of(c);
    if (rs == nullptr || rs->sql == nullptr || rs->name.empty() || result == nullptr ||
        PQresultStatus(result) != PGRES_FATAL_ERROR)
        return false;
    const char *state = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    if (state == nullptr || strcmp(state, kInvalidatedState) != 0)
        return false;
    auto it = rs->entries.find(*rs->sql);
    if (it != rs->entries.end() && it->second.name == rs->name)
        it->second.stale = true;
    return !rs->retried;
}

void resend_invalidated(Connection *c) {
    RemoteStatements *rs = cache_of(c);
    std::string sql = *rs->sql;
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
