#include "core/connection_budget.h"

#include <algorithm>

namespace picoroute {

BudgetStep budget_step(const BudgetCheck &check) {
    if (check.budget <= 0 || check.open_everywhere < static_cast<uint64_t>(check.budget))
        return BudgetStep::Open;
    if (check.own_idle_left)
        return BudgetStep::CloseOwnIdle;
    // Every place is this backend's own and busy: nobody else can free one.
    if (check.open_here >= static_cast<uint64_t>(check.budget))
        return BudgetStep::Fail;
    return check.waited_ms < check.wait_bound_ms ? BudgetStep::Wait : BudgetStep::Fail;
}

int64_t budget_wait_bound_ms(int64_t statement_timeout_ms, int64_t statement_elapsed_ms,
                             int64_t failover_wait_ms) {
    if (statement_timeout_ms > 0) {
        int64_t margin = std::min<int64_t>(statement_timeout_ms / 10, 100);
        return std::max<int64_t>(statement_timeout_ms - margin - statement_elapsed_ms, 0);
    }
    return failover_wait_ms > 0 ? failover_wait_ms : 0;
}

std::string budget_exceeded_detail(const std::string &address, const BudgetCheck &check) {
    std::string out = "picoroute.max_connections_per_instance is " + std::to_string(check.budget) +
                      " and " + std::to_string(check.open_everywhere) +
                      " connections to instance " + address + " are open in all sessions (" +
                      std::to_string(check.open_here) + " in this one)";
    if (check.open_here >= static_cast<uint64_t>(check.budget))
        return out + "; this session holds them all, busy with its own statements.";
    return out + "; none was closed within " + std::to_string(check.waited_ms) + " ms.";
}

}  // namespace picoroute
