// The shared connection budget (picoroute.max_connections_per_instance): what a backend does when
// it is about to open a connection to an instance, given how many connections to it are open in
// all backends and in its own. Plain arithmetic on counts, so that every case has a unit test; the
// shared counters, the waiting and the error are the glue's (pg/stats/connections.cpp).
#pragma once
#include "core/firewall.h"

#include <cstdint>
#include <string>

namespace picoroute {

// What the glue knows at one step of an admission.
struct BudgetCheck {
    int64_t budget = 0;            // the setting; 0 or less: no limit
    uint64_t open_everywhere = 0;  // connections to the instance open in all backends
    uint64_t open_here = 0;        // of them, this backend's
    bool own_idle_left = false;    // this backend may still have an idle one it could close
    int64_t waited_ms = 0;         // since the admission began to wait
    int64_t wait_bound_ms = 0;     // how long it may wait (budget_wait_bound_ms)
};

enum class BudgetStep {
    Open,          // under the budget: take a place and open
    CloseOwnIdle,  // close an idle connection of this backend to the instance first, then check
                   // again
    Wait,          // wait for another backend to close one, then check again
    Fail,          // give up: too_many_connections
};

BudgetStep budget_step(const BudgetCheck &check);

// How long an admission that begins to wait now may wait, in milliseconds (0: it fails at once).
// With statement_timeout set (positive): what is left of it since the statement began, less a
// margin (a tenth, at most 100 ms), so that the budget's error, which names the instance, comes
// before the timeout's cancel. Else picoroute.failover_wait.
int64_t budget_wait_bound_ms(int64_t statement_timeout_ms, int64_t statement_elapsed_ms,
                             int64_t failover_wait_ms);

// The error's detail: the instance, the budget, what is open, how long it waited.
std::string budget_exceeded_detail(const std::string &address, const BudgetCheck &check);

}  // namespace picoroute
