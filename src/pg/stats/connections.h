// Every backend's connections to Picodata instances, as the remote layer reports them: counted per
// instance in picoroute_stat_instances (connections_open, connections_unlisted,
// connection_budget_waits), listed one by one in picoroute_stat_connections, and admitted within
// picoroute.max_connections_per_instance.
//
// The remote layer's calls, for each connection it opens:
//   before opening it            Admission admission(address, close_own_idle): takes a place in
//                                the instance's count of open connections, closing an idle
//                                connection of this backend or waiting for another backend when
//                                the budget is reached; throws SqlError(too_many_connections)
//                                when the wait ends with no place
//   once it is open              admission.opened(connection, ...): the place is the connection's
//                                (an Admission destroyed without it gives its place back)
//   after each statement         connection_state(connection, ...)
//   when it is closed            connection_closed(connection)
//   at the end of a transaction  budget_reached(connection): then the remote layer closes it
//                                when idle (a cached connection must not hold a place that other
//                                sessions wait for)
// `connection` is only a key (the remote layer's Connection). A backend that exits gives back
// every place it holds (a before_shmem_exit callback), whatever it was doing; a backend killed
// outright makes the postmaster reinitialise shared memory. Counting and listing work while
// picoroute.track_statistics is off; only connection_budget_waits follows it.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
#include "libpq-fe.h"
}

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace picoroute::pg::stats {

struct InstanceSlot;

// The slots of picoroute_stat_connections, from the library's shmem hooks (picoroute.cpp).
Size connection_slots_shmem_size();
void connection_slots_shmem_init();

class Admission {
  public:
    // Waits (polling its latch, checking for interrupts: a cancel or statement_timeout is a
    // PgError) while the budget is reached; `close_own_idle` closes one idle connection of this
    // backend to `address` and returns true, or returns false when it has none.
    Admission(std::string_view address, const std::function<bool()> &close_own_idle);
    ~Admission();
    Admission(const Admission &) = delete;
    Admission &operator=(const Admission &) = delete;

    // The connection was opened: the place is its own until connection_closed(connection).
    void opened(const void *connection, std::string_view user, std::string_view server,
                TimestampTz since) noexcept;

  private:
    std::string address_;
    InstanceSlot *slot_ = nullptr;  // nullptr: not preloaded, or the place was handed on
};

// What a connection is doing, as picoroute_stat_connections.state names it.
enum class ConnectionState : uint32_t { Idle, Active, IdleInTransaction, IdleInFailedTransaction };
const char *connection_state_name(uint32_t state);

// After a statement was sent on the connection or its answer read: `busy` while one is in flight,
// else what libpq knows of the remote transaction; the statements run on it, the named statements
// prepared on it.
void connection_state(const void *connection, bool busy, PGTransactionStatusType transaction,
                      uint64_t statements, uint64_t prepared) noexcept;
void connection_closed(const void *connection) noexcept;

// True when picoroute.max_connections_per_instance is set and the connection's instance has that
// many connections open (all backends): an idle one is then not kept past its transaction, so
// that sessions waiting for a place get one.
bool budget_reached(const void *connection) noexcept;

}  // namespace picoroute::pg::stats
