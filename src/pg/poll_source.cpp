// Poll source: one refresh = the catalog tables by column name, then _pico_bucket(tier) per tier.
extern "C" {
#include "postgres.h"

#include "postmaster/interrupt.h"
#include "utils/timestamp.h"
}

#include "core/errors.h"
#include "pg/connect_policy.h"
#include "pg/libpq_wait.h"
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

struct ResultDeleter {
    void operator()(PGresult *result) const { PQclear(result); }
};
using Result = std::unique_ptr<PGresult, ResultDeleter>;

int timeout_ms() {
    return setting_connect_timeout * 1000;
}

std::string instance_of(PGconn *conn) {
    std::string host = PQhost(conn) ? PQhost(conn) : "";
    std::string port = PQport(conn) ? PQport(conn) : "";
    if (host.find(':') != std::string::npos)
        host = "[" + host + "]";
    return host + ":" + port;
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

std::string one_line(const char *message) {
    std::string text = message ? message : "";
    while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
        text.pop_back();
    for (char &c : text)
        if (c == '\n' || c == '\t')
            c = ' ';
    return text;
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

PGconn *PollSource::connect_configured(std::string &errors) {
    const char *conninfo = setting_conninfo ? setting_conninfo : "";
    std::string timeout = std::to_string(setting_connect_timeout);
    char error[1024];
    WaitOutcome outcome;
    // libpq tries each host of the list in turn.
    const char *keywords[] = {"dbname", "connect_timeout", "fallback_application_name", nullptr};
    const char *values[] = {conninfo, timeout.c_str(), "picoroute", nullptr};
    last_configured_attempt_ = GetCurrentTimestamp();
    PGconn *conn = connect_with_deadline(keywords, values, timeout_ms(), on_latch_, error,
                                         sizeof(error), &outcome);
    if (outcome == WaitOutcome::Shutdown)
        throw SourceError("shutting down");
    if (conn == nullptr)
        errors = std::string("configured hosts: ") + one_line(error);
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
        PGconn *configured = connect_configured(errors);
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
    char error[1024];
    std::string errors;
    WaitOutcome outcome;

    // First the configured hosts.
    conn_ = connect_configured(errors);

    // Then every instance the topology knows to be online, in turn, where picoroute may connect.
    if (conn_ == nullptr) {
        for (const std::string &address : current.online_addresses()) {
            TcpAddress target;
            std::string refusal = connect_refusal(address, &target);
            if (!refusal.empty()) {
                errors += "; " + refusal + ": not tried";
                continue;
            }
            std::string port = std::to_string(target.port);
            const char *keywords[] = {
                "dbname", "host", "port", "connect_timeout", "fallback_application_name", nullptr};
            const char *values[] = {conninfo,        target.host.c_str(), port.c_str(),
                                    timeout.c_str(), "picoroute",         nullptr};
            conn_ = connect_with_deadline(keywords, values, timeout_ms(), on_latch_, error,
                                          sizeof(error), &outcome);
            if (outcome == WaitOutcome::Shutdown)
                throw SourceError("shutting down");
            if (conn_ != nullptr)
                break;
            errors += "; " + address + ": " + one_line(error);
        }
    }
    if (conn_ == nullptr)
        throw SourceError("cannot connect to any Picodata instance (" + errors + ")",
                          "Check picoroute.conninfo and that the cluster is running.");
    conn_instance_ = instance_of(conn_);
    if (!errors.empty())
        fallback_note_ = "configured hosts unreachable (" + errors +
                         "); reading from known instance " + conn_instance_;
}

PGresult *PollSource::run(const char *sql, int nparams, const char *const *params) {
    char error[1024];
    WaitOutcome outcome;
    PGresult *result = exec_with_deadline(conn_, sql, nparams, params, timeout_ms(), on_latch_,
                                          error, sizeof(error), &outcome);
    if (result == nullptr) {
        std::string instance = conn_instance_;
        drop_connection();  // the connection is in an unknown state now
        if (outcome == WaitOutcome::Shutdown)
            throw SourceError("shutting down");
        throw SourceError("lost the connection to " + instance + ": " + error);
    }
    return result;
}

CatalogRows PollSource::read_catalog(std::vector<std::string> &warnings) {
    CatalogRows rows;
    auto fetch_table = [&](const char *table, const char *sql) {
        Result result(run(sql, 0, nullptr));
        if (PQresultStatus(result.get()) != PGRES_TUPLES_OK) {
            const char *state = PQresultErrorField(result.get(), PG_DIAG_SQLSTATE);
            std::string message = one_line(PQresultErrorMessage(result.get()));
            std::string user = PQuser(conn_) ? PQuser(conn_) : "";
            bool denied = (state && strcmp(state, "42501") == 0) ||
                          message.find("denied") != std::string::npos;
            if (denied)
                throw SourceError(std::string("cannot read ") + table + " on " + conn_instance_ +
                                      " as user \"" + user + "\": " + message,
                                  std::string("Grant the right in Picodata: GRANT READ ON TABLE ") +
                                      table + " TO \"" + user + "\"");
            throw SourceError(std::string("cannot read ") + table + " on " + conn_instance_ + ": " +
                              message);
        }
        return result;
    };

    {
        Result r = fetch_table("_pico_instance", kInstanceQuery);
        int c_name = column(r.get(), "_pico_instance", "name");
        int c_uuid = column(r.get(), "_pico_instance", "uuid");
        int c_raft = column(r.get(), "_pico_instance", "raft_id");
        int c_rs = column(r.get(), "_pico_instance", "replicaset_uuid");
        int c_state = column(r.get(), "_pico_instance", "current_state");
        int c_tier = column(r.get(), "_pico_instance", "tier");
        for (int i = 0; i < PQntuples(r.get()); i++)
            rows.instances.push_back(InstanceRow{
                field(r.get(), i, c_name), field(r.get(), i, c_uuid), field(r.get(), i, c_raft),
                field(r.get(), i, c_rs), field(r.get(), i, c_state), field(r.get(), i, c_tier)});
    }
    {
        Result r = fetch_table("_pico_peer_address", kPeerAddressQuery);
        int c_raft = column(r.get(), "_pico_peer_address", "raft_id");
        int c_address = column(r.get(), "_pico_peer_address", "address");
        int c_type = column(r.get(), "_pico_peer_address", "connection_type");
        for (int i = 0; i < PQntuples(r.get()); i++)
            rows.peer_addresses.push_back(PeerAddressRow{field(r.get(), i, c_raft),
                                                         field(r.get(), i, c_address),
                                                         field(r.get(), i, c_type)});
    }
    {
        Result r = fetch_table("_pico_replicaset", kReplicasetQuery);
        int c_name = column(r.get(), "_pico_replicaset", "name");
        int c_uuid = column(r.get(), "_pico_replicaset", "uuid");
        int c_master = column(r.get(), "_pico_replicaset", "current_master_name");
        int c_tier = column(r.get(), "_pico_replicaset", "tier");
        int c_state = column(r.get(), "_pico_replicaset", "state");
        for (int i = 0; i < PQntuples(r.get()); i++)
            rows.replicasets.push_back(ReplicasetRow{
                field(r.get(), i, c_name), field(r.get(), i, c_uuid), field(r.get(), i, c_master),
                field(r.get(), i, c_tier), field(r.get(), i, c_state)});
    }
    {
        Result r = fetch_table("_pico_tier", kTierQuery);
        int c_name = column(r.get(), "_pico_tier", "name");
        int c_count = column(r.get(), "_pico_tier", "bucket_count");
        for (int i = 0; i < PQntuples(r.get()); i++)
            rows.tiers.push_back(TierRow{field(r.get(), i, c_name), field(r.get(), i, c_count)});
    }

    // Bucket maps: a tier whose call fails is skipped, the rest of the topology still updates.
    for (const TierRow &tier : rows.tiers) {
        if (!tier.name || !tier.bucket_count || *tier.bucket_count == "0")
            continue;
        const char *params[] = {tier.name->c_str()};
        Result r(run(kBucketQuery, 1, params));
        if (PQresultStatus(r.get()) != PGRES_TUPLES_OK || PQntuples(r.get()) != 1 ||
            PQnfields(r.get()) != 1 || PQgetisnull(r.get(), 0, 0)) {
            std::string message = PQresultStatus(r.get()) == PGRES_TUPLES_OK
                                      ? "unexpected answer shape"
                                      : one_line(PQresultErrorMessage(r.get()));
            warnings.push_back("bucket map of tier '" + *tier.name + "' not read from " +
                               conn_instance_ + ": " + message);
            continue;
        }
        rows.bucket_json[*tier.name] = PQgetvalue(r.get(), 0, 0);
    }
    return rows;
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
