// Opening a connection to a Picodata instance: who opens it (ConnParams), how it fails
// (ConnectionFailure), the address checked against picoroute.allowed_hosts, libpq's non-blocking
// connect through the latch-aware layer, and a failed login told apart from an unreachable
// instance. The cache that keeps connections is connection.h.
#pragma once

extern "C" {
#include "postgres.h"
#include "libpq-fe.h"
}

#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace picoroute::pg::remote {

// Who opens the connection and with which credentials. Host and port never come from here: they
// come from the topology.
struct ConnParams {
    Oid umid = InvalidOid;    // user mapping, or InvalidOid for the picoroute.conninfo credentials
    Oid userid = InvalidOid;  // local user
    std::string server_name;  // foreign server name, "" for picoroute.conninfo
    // libpq keywords and values, without host, hostaddr and port.
    std::vector<std::pair<std::string, std::string>> options;
    bool require_password = false;  // a non-superuser user mapping: the server must ask for one
    // The startup options ask Picodata to report prepared statements invalidated by DDL
    // (pico_stmt_invalidation=true): the connection may keep named statements (remote_stmt.h).
    bool stmt_invalidation = false;
    // The read_preference the startup options name ("" when they name none). Part of the
    // connection cache's key: a read that means the leader on a server that says replica goes
    // over a second connection (leader_reads.h).
    std::string read_preference;
    // The server's picodata_version option ("": the version the map detects): what the cluster
    // runs without its Lua dispatch (core/routing/failover.h: a dead master stalls the tier).
    std::string picodata_version;
};

// Thrown when an instance cannot be reached. `sent` tells whether the statement may have reached
// the server (then it must not be retried if it writes).
class ConnectionFailure : public std::exception {
  public:
    ConnectionFailure(std::string address, std::string message, bool sent)
        : address_(std::move(address)), message_(std::move(message)), sent_(sent) {}
    const char *what() const noexcept override { return message_.c_str(); }
    const std::string &address() const { return address_; }
    bool sent() const { return sent_; }

  private:
    std::string address_, message_;
    bool sent_;
};

// Opens a connection to `address` (host:port from the map) with `params`, non-blocking, default
// error verbosity. A refused address or a failed login is a SqlError; anything else that keeps the
// instance out of reach is ConnectionFailure(sent = false).
PGconn *open_connection(const std::string &address, const ConnParams &params);

// Credentials of picoroute.conninfo without host, hostaddr and port (picoroute_exec).
ConnParams conninfo_params();

}  // namespace picoroute::pg::remote
