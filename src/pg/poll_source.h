// The poll source: reads Picodata's catalog over libpq (facts, sections 1 and 2) and turns the rows
// into events with the core library.
#pragma once

#include "core/catalog.h"
#include "core/source.h"
#include "pg/libpq_io.h"

#include <string>

namespace picoroute::pg {

class PollSource : public TopologySource {
  public:
    // `on_latch` is what a set latch means during a network wait (the worker's wake-up and
    // shutdown handling): it returns true when the wait must be abandoned.
    explicit PollSource(LatchAction on_latch) : on_latch_(on_latch) {}
    ~PollSource() override;
    SourceUpdate fetch(const Topology &current) override;
    void reset() override;

    // Set by the worker's latch callback when SIGTERM arrived during a network wait.
    static bool shutdown_requested();

    // Whether the addresses of the topology given to fetch() were reported by a catalog the
    // worker read (false after it adopted a map picoroute_apply_events changed): the fallback to
    // known instances sends the credentials of picoroute.conninfo only where connect_policy.h
    // allows it for such addresses.
    void set_addresses_from_catalog(bool from_catalog) { addresses_from_catalog_ = from_catalog; }

  private:
    void connect(const Topology &current);
    // Connects to the hosts of picoroute.conninfo; nullptr (and `errors` says why, *closed whether
    // the instance closed the connection at startup without an answer) on failure.
    PGconn *connect_configured(std::string &errors, bool *closed);
    // Runs one query on conn_ and returns its last result (a server error included). Throws
    // SourceError, dropping the connection, when the instance does not answer.
    ResultPtr run(const char *sql, int nparams, const char *const *params);
    // Runs the query of a catalog table; throws SourceError naming the table when it fails.
    ResultPtr fetch_table(const char *table, const char *sql);
    CatalogRows read_catalog(std::vector<std::string> &warnings);
    void read_bucket_maps(CatalogRows &rows, std::vector<std::string> &warnings);
    void drop_connection();

    LatchAction on_latch_;
    PGconn *conn_ = nullptr;
    std::string conn_instance_;            // "host:port" of conn_
    std::string last_instance_;            // the instance the last successful fetch read from
    std::string fallback_note_;            // why conn_ is not one of the configured hosts, or ""
    int64_t last_configured_attempt_ = 0;  // TimestampTz of the last try of the configured hosts
    bool addresses_from_catalog_ = false;
};

}  // namespace picoroute::pg
