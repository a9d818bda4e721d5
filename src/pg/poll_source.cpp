// Poll source: one refresh = the catalog tables by column name, then _pico_bucket(tier) per tier.
extern "C" {
#include "postgres.h"

#include "postmaster/interrupt.h"
#include "utils/timestamp.h"
}

#include "core/address.h"
#include "core/errors.h"
#include "core/routing/answer.h"
#include "pg/connect_policy.h"
#include "pg/libpq_io.h"
#include "pg/poll_source.h"
#include "pg/settings.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace picoroute::pg {

namespace {

int timeout_ms() {
    return setting_connect_timeout * 1000;
}

std::string instance_of(PGconn *conn) {
    return join_host_port(PQhost(conn) ? PQhost(conn) : "", PQport(conn) ? PQport(conn) : "");
}

Field field(const PGresult *result, int row, int column) {
    if (PQgetisnull(result, row, column))
        return std::nullopt;
    return std::string(PQgetvalue(result, row, column),
                       static_cast<size_t>(PQgetlength(result, row, column)));
}

int column(const PGresult *result, const char *table, const char *name) {
    int index = PQfnumber(result, name);
    if (index < 0)
        throw SourceError(
            std::string("the answer from ") + table + " has no column \"" + name + "\"",
            "picoroute needs Picodata 25.5 or later.");
    return index;
}

// The named columns of every row of `result`, in the order named. Throws when one is missing.
std::vector<std::vector<Field>> named_columns(const PGresult *result, const char *table,
                                              std::initializer_list<const char *> names) {
    std::vector<int> index;
    for (const char *name : names)
        index.push_back(column(result, table, name));
    std::vector<std::vector<Field>> rows(static_cast<size_t>(PQntuples(result)));
    for (size_t i = 0; i < rows.size(); i++)
        for (int c : index)
            rows[i].push_back(field(result, static_cast<int>(i), c));
    return rows;
}

// The column `name` of every row, all null when the answer has no such column (one a release
// lacks).
std::vector<Field> optional_column(const PGresult *result, const char *name) {
    int index = PQfnumber(result, name);
    std::vector<Field> values(static_cast<size_t>(PQntuples(result)));
    for (size_t i = 0; index >= 0 && i < values.size(); i++)
        values[i] = field(result, static_cast<int>(i), index);
    return values;
}

// Opens a connection bounded by picoroute.connect_timeout (expand_dbname on: keywords[0] is
// "dbname" with a whole connection string, later keywords override it). nullptr and `error` on
// failure; throws SourceError("shutting down") when shutdown is requested meanwhile.
PGconn *open_connection(const char *const *keywords, const char *const *values,
                        LatchAction on_latch, std::string &error) {
    TimestampTz deadline = deadline_in(timeout_ms());
    PGconn *conn = PQconnectStartParams(keywords, values, 1);
    if (conn == nullptr) {
        error = "out of memory";
        return nullptr;
    }
    IoOutcome outcome = finish_connect(Waiter{conn, on_latch, deadline, nullptr});
    if (outcome == IoOutcome::Done)
        return conn;
    error = outcome == IoOutcome::Failed    ? libpq_message(PQerrorMessage(conn))
            : outcome == IoOutcome::Timeout ? "timeout while connecting"
                                            : "shutdown";
    PQfinish(conn);
    if (outcome == IoOutcome::Abandoned)
        throw SourceError("shutting down");
    return nullptr;
}

// Sends a query (extended protocol when it has parameters) and collects its last result into
// `last`; a server error comes back as a PGRES_FATAL_ERROR result. Without a result, `error`
// tells why (a connection failure or a timeout) unless the wait was abandoned for shutdown.
IoOutcome exec_query(PGconn *conn, const char *sql, int nparams, const char *const *params,
                     LatchAction on_latch, ResultPtr &last, std::string &error) {
    Waiter waiter{conn, on_latch, deadline_in(timeout_ms()), nullptr};
    int sent = nparams > 0
                   ? PQsendQueryParams(conn, sql, nparams, nullptr, params, nullptr, nullptr, 0)
                   : PQsendQuery(conn, sql);
    IoOutcome outcome = sent ? flush_output(waiter) : IoOutcome::Failed;
    const char *timeout = "timeout while sending a query";
    if (outcome == IoOutcome::Done) {
        outcome = read_last_result(waiter, last);
        timeout = "timeout while waiting for an answer";
    }
    if (outcome == IoOutcome::Timeout)
        error = timeout;
    else if (outcome == IoOutcome::Abandoned)
        error = "shutdown";
    else if (last == nullptr)
        error = libpq_message(PQerrorMessage(conn));
    if (outcome != IoOutcome::Done)
        last.reset();
    return outcome;
}

}  // namespace

bool PollSource::shutdown_requested() {
    return ShutdownRequestPending;
}

PollSource::~PollSource() {
    drop_connection();
}

void PollSource::drop_connection() {
    if (conn_ != nullptr)
        PQfinish(conn_);
    conn_ = nullptr;
    conn_instance_.clear();
}

void PollSource::reset() {
    drop_connection();
    last_instance_.clear();
}

namespace {

// How often the worker, while reading from a fallback instance, tries the configured hosts again.
constexpr long kRetryConfiguredMs = 5000;

// libpq's parse errors quote the string around the problem (a password, possibly): never shown.
void require_parsable_conninfo(const char *conninfo) {
    char *error = nullptr;
    PQconninfoOption *options = PQconninfoParse(conninfo, &error);
    if (error != nullptr)
        PQfreemem(error);
    if (options == nullptr)
        throw SourceError("picoroute.conninfo could not be parsed",
                          "Write it as keyword=value pairs, quoting values that contain blanks "
                          "or quotes ('...'), or as a postgresql:// URI; prefer a password file "
                          "(passfile) to a password in the string.");
    PQconninfoFree(options);
}

}  // namespace

PGconn *PollSource::connect_configured(std::string &errors, bool *closed) {
    const char *conninfo = setting_conninfo ? setting_conninfo : "";
    std::string timeout = std::to_string(setting_connect_timeout);
    std::string error;
    // libpq tries each host of the list in turn.
    const char *keywords[] = {"dbname", "connect_timeout", "fallback_application_name", nullptr};
    const char *values[] = {conninfo, timeout.c_str(), "picoroute", nullptr};
    last_configured_attempt_ = GetCurrentTimestamp();
    PGconn *conn = open_connection(keywords, values, on_latch_, error);
    if (conn == nullptr) {
        errors = std::string("configured hosts: ") + libpq_message_line(error.c_str());
        *closed = routing::closed_at_startup(error);
    }
    return conn;
}

void PollSource::connect(const Topology &current) {
    const char *conninfo = setting_conninfo ? setting_conninfo : "";
    require_parsable_conninfo(conninfo);
    if (conn_ != nullptr && PQstatus(conn_) == CONNECTION_OK) {
        // On a fallback instance: go back to the configured hosts as soon as they answer.
        if (fallback_note_.empty() ||
            !TimestampDifferenceExceeds(last_configured_attempt_, GetCurrentTimestamp(),
                                        kRetryConfiguredMs))
            return;
        std::string errors;
        bool closed = false;
        PGconn *configured = connect_configured(errors, &closed);
        if (configured == nullptr)
            return;  // still down: keep reading from the fallback
        drop_connection();
        conn_ = configured;
        conn_instance_ = instance_of(conn_);
        fallback_note_.clear();
        ereport(LOG, (errmsg("picoroute: the configured hosts answer again; reading from %s",
                             conn_instance_.c_str())));
        return;
    }
    drop_connection();
    fallback_note_.clear();

    std::string timeout = std::to_string(setting_connect_timeout);
    std::string errors;
    // Whether every instance tried closed the connection at startup without an answer.
    bool all_closed = false;

    // First the configured hosts.
    conn_ = connect_configured(errors, &all_closed);

    // Then every instance the topology knows to be online, in turn, where picoroute may connect.
    if (conn_ == nullptr) {
        for (const std::string &address : current.online_addresses()) {
            TcpAddress target;
            std::string refusal = connect_refusal(address, addresses_from_catalog_, &target);
            if (!refusal.empty()) {
                errors += "; " + refusal + ": not tried";
                continue;
            }
            std::string port = std::to_string(target.port);
            const char *keywords[] = {
                "dbname", "host", "port", "connect_timeout", "fallback_application_name", nullptr};
            const char *values[] = {conninfo,        target.host.c_str(), port.c_str(),
                                    timeout.c_str(), "picoroute",         nullptr};
            std::string error;
            conn_ = open_connection(keywords, values, on_latch_, error);
            if (conn_ != nullptr)
                break;
            errors += "; " + address + ": " + libpq_message_line(error.c_str());
            all_closed = all_closed && routing::closed_at_startup(error);
        }
    }
    if (conn_ == nullptr && all_closed)
        throw SourceError(
            "the Picodata instances closed the connection at startup without an "
            "answer (" +
                errors + "). " + routing::kClosedAtStartupDetail,
            "Check the keyword options of picoroute.conninfo: Picodata reads "
            "name=value,name=value there (sql_motion_row_max, sql_vdbe_opcode_max, "
            "read_preference, ...).");
    if (conn_ == nullptr)
        throw SourceError("cannot connect to any Picodata instance (" + errors + ")",
                          "Check picoroute.conninfo and that the cluster is running.");
    conn_instance_ = instance_of(conn_);
    if (!errors.empty())
        fallback_note_ = "configured hosts unreachable (" + errors +
                         "); reading from known instance " + conn_instance_;
}

ResultPtr PollSource::run(const char *sql, int nparams, const char *const *params) {
    ResultPtr result;
    std::string error;
    IoOutcome outcome = exec_query(conn_, sql, nparams, params, on_latch_, result, error);
    if (result == nullptr) {
        std::string instance = conn_instance_;
        drop_connection();  // the connection is in an unknown state now
        if (outcome == IoOutcome::Abandoned)
            throw SourceError("shutting down");
        throw SourceError("lost the connection to " + instance + ": " + error);
    }
    return result;
}

ResultPtr PollSource::fetch_table(const char *table, const char *sql) {
    ResultPtr result = run(sql, 0, nullptr);
    if (PQresultStatus(result.get()) == PGRES_TUPLES_OK)
        return result;
    const char *state = PQresultErrorField(result.get(), PG_DIAG_SQLSTATE);
    std::string message = libpq_message_line(PQresultErrorMessage(result.get()));
    std::string user = PQuser(conn_) ? PQuser(conn_) : "";
    bool denied =
        (state && strcmp(state, "42501") == 0) || message.find("denied") != std::string::npos;
    if (denied)
        throw SourceError(std::string("cannot read ") + table + " on " + conn_instance_ +
                              " as user \"" + user + "\": " + message,
                          std::string("Grant the right in Picodata: GRANT READ ON TABLE ") + table +
                              " TO \"" + user + "\"");
    throw SourceError(std::string("cannot read ") + table + " on " + conn_instance_ + ": " +
                      message);
}

CatalogRows PollSource::read_catalog(std::vector<std::string> &warnings) {
    CatalogRows rows;
    ResultPtr r = fetch_table("_pico_instance", kInstanceQuery);
    std::vector<Field> versions = optional_column(r.get(), "picodata_version");
    for (auto &f :
         named_columns(r.get(), "_pico_instance",
                       {"name", "uuid", "raft_id", "replicaset_uuid", "current_state", "tier"}))
        rows.instances.push_back(
            InstanceRow{f[0], f[1], f[2], f[3], f[4], f[5], versions[rows.instances.size()]});
    r = fetch_table("_pico_peer_address", kPeerAddressQuery);
    for (auto &f :
         named_columns(r.get(), "_pico_peer_address", {"raft_id", "address", "connection_type"}))
        rows.peer_addresses.push_back(PeerAddressRow{f[0], f[1], f[2]});
    r = fetch_table("_pico_replicaset", kReplicasetQuery);
    for (auto &f : named_columns(r.get(), "_pico_replicaset",
                                 {"name", "uuid", "current_master_name", "tier", "state"}))
        rows.replicasets.push_back(ReplicasetRow{f[0], f[1], f[2], f[3], f[4]});
    r = fetch_table("_pico_tier", kTierQuery);
    std::vector<Field> is_default = optional_column(r.get(), "is_default");
    for (auto &f : named_columns(r.get(), "_pico_tier", {"name", "bucket_count"}))
        rows.tiers.push_back(TierRow{f[0], f[1], is_default[rows.tiers.size()]});
    r.reset();
    read_bucket_maps(rows, warnings);
    return rows;
}

// Bucket maps: a tier whose call fails is skipped, the rest of the topology still updates.
void PollSource::read_bucket_maps(CatalogRows &rows, std::vector<std::string> &warnings) {
    for (const TierRow &tier : rows.tiers) {
        if (!tier.name || !tier.bucket_count || *tier.bucket_count == "0")
            continue;
        const char *params[] = {tier.name->c_str()};
        ResultPtr r = run(kBucketQuery, 1, params);
        if (PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQntuples(r.get()) != 1 ||
            PQnfields(r.get()) != 1 || PQgetisnull(r.get(), 0, 0)) {
            std::string message = PQresultStatus(r.get()) == PGRES_TUPLES_OK
                                      ? "unexpected answer shape"
                                      : libpq_message_line(PQresultErrorMessage(r.get()));
            warnings.push_back("bucket map of tier '" + *tier.name + "' not read from " +
                               conn_instance_ + ": " + message);
            continue;
        }
        rows.bucket_json[*tier.name] = PQgetvalue(r.get(), 0, 0);
    }
}

SourceUpdate PollSource::fetch(const Topology &current) {
    connect(current);
    SourceUpdate update;
    update.instance = conn_instance_;
    update.reset = !last_instance_.empty() && last_instance_ != conn_instance_;
    if (!fallback_note_.empty())
        update.warnings.push_back(fallback_note_);

    CatalogRows rows = read_catalog(update.warnings);
    try {
        if (update.reset) {
            Topology cleared = current;
            cleared.clear();
            update.events = events_from_catalog(rows, cleared, &update.warnings);
        } else {
            update.events = events_from_catalog(rows, current, &update.warnings);
        }
    } catch (const Error &e) {
        throw SourceError(std::string("catalog of ") + conn_instance_ + " rejected: " + e.what(),
                          e.hint());
    }
    last_instance_ = conn_instance_;
    return update;
}

}  // namespace picoroute::pg
