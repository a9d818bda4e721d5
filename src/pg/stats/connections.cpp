// What this backend holds of the shared connection counts (connections.h): the place each of its
// connections (or admissions under way) takes in its instance's connections_open, and its slot in
// picoroute_stat_connections. Given back at close, when an admission is abandoned, and at exit.
extern "C" {
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/proc.h"
#include "utils/errcodes.h"
#include "utils/timestamp.h"
}

#include "core/connection_budget.h"
#include "pg/guard.h"
#include "pg/settings.h"
#include "pg/stats/conn_slots.h"
#include "pg/stats/connections.h"
#include "pg/stats/store.h"

#include <string>
#include <unordered_map>

namespace picoroute::pg::stats {

namespace {

struct Held {
    InstanceSlot *instance;
    int32 slot;  // in picoroute_stat_connections; -1: unlisted
};

// Allocated once and never freed: destructors that run at process exit may still look them up
// (after the exit callback, which sets `exited`: they then do nothing).
struct Local {
    std::unordered_map<const void *, Held> connections;
    std::unordered_map<InstanceSlot *, int64> admitting;  // places taken, connection not open yet
};
Local *local = nullptr;
bool exit_callback_registered = false;
bool exited = false;

// How often a waiting admission looks at the count again.
constexpr long kBudgetPollMs = 10;

void give_back(const Held &held) {
    pg_atomic_sub_fetch_u64(&held.instance->connections_open, 1);
    if (held.slot < 0)
        pg_atomic_sub_fetch_u64(&held.instance->connections_unlisted, 1);
    else
        free_connection_slot(held.slot);
}

void give_back_everything(int, Datum) {
    exited = true;
    if (local == nullptr)
        return;
    for (auto &[key, held] : local->connections)
        give_back(held);
    local->connections.clear();
    for (auto &[instance, count] : local->admitting)
        if (count > 0)
            pg_atomic_sub_fetch_u64(&instance->connections_open, static_cast<uint64>(count));
    local->admitting.clear();
}

// Throws (PgError, bad_alloc) when the backend cannot keep its books.
void prepare_books() {
    if (local == nullptr)
        local = new Local();
    if (!exit_callback_registered) {
        pg_call([] { before_shmem_exit(give_back_everything, 0); });
        exit_callback_registered = true;
    }
}

uint64 open_here(InstanceSlot *instance) {
    uint64 n = 0;
    for (const auto &[key, held] : local->connections)
        n += held.instance == instance ? 1 : 0;
    return n;
}

// Takes a place when the count is under the budget (or there is none): compare-and-swap, so that
// the budget holds exactly under any number of backends. Returns the count seen otherwise.
bool try_take_place(InstanceSlot *instance, int64 budget, uint64 *seen) {
    uint64 open = pg_atomic_read_u64(&instance->connections_open);
    for (;;) {
        if (budget > 0 && open >= static_cast<uint64>(budget)) {
            *seen = open;
            return false;
        }
        if (pg_atomic_compare_exchange_u64(&instance->connections_open, &open, open + 1))
            return true;
    }
}

// One latch wait of kBudgetPollMs; a cancel, statement_timeout or termination is a PgError.
void wait_a_little() {
    pg_call([] {
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, kBudgetPollMs,
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
    });
}

[[noreturn]] void too_many(std::string_view address, const BudgetCheck &check) {
    std::string where(address);
    throw SqlError(ERRCODE_TOO_MANY_CONNECTIONS,
                   "picoroute: too many connections to instance " + where,
                   budget_exceeded_detail(where, check),
                   "Raise picoroute.max_connections_per_instance, or end the transactions or "
                   "sessions that hold connections to it (picoroute_stat_connections lists them).");
}

// Takes a place for a connection to `address` in `instance`'s count, within the budget.
void admit(InstanceSlot *instance, std::string_view address,
           const std::function<bool()> &close_own_idle) {
    BudgetCheck check;
    check.own_idle_left = true;
    TimestampTz began = 0;
    bool counted_wait = false;
    for (;;) {
        check.budget = setting_max_connections_per_instance;
        if (try_take_place(instance, check.budget, &check.open_everywhere))
            return;
        check.open_here = open_here(instance);
        TimestampTz now = GetCurrentTimestamp();
        if (began == 0)  // the wait would begin now
            check.wait_bound_ms = budget_wait_bound_ms(
                StatementTimeout,
                TimestampDifferenceMilliseconds(GetCurrentStatementStartTimestamp(), now),
                setting_failover_wait);
        else
            check.waited_ms = TimestampDifferenceMilliseconds(began, now);
        switch (budget_step(check)) {
            case BudgetStep::Open:
                break;  // the budget was raised meanwhile: try again
            case BudgetStep::CloseOwnIdle:
                check.own_idle_left = close_own_idle();
                break;
            case BudgetStep::Wait:
                if (began == 0)
                    began = now;
                if (!counted_wait && setting_track_statistics)
                    pg_atomic_fetch_add_u64(&instance->counters[I_BUDGET_WAITS], 1);
                counted_wait = true;
                wait_a_little();
                break;
            case BudgetStep::Fail:
                too_many(address, check);
        }
    }
}

}  // namespace

Admission::Admission(std::string_view address, const std::function<bool()> &close_own_idle)
    : address_(address) {
    if (exited)
        return;
    InstanceSlot *instance = instance_slot(address);
    if (instance == nullptr)
        return;  // not preloaded: nothing is shared, nothing is limited
    prepare_books();
    int64 &admitting = local->admitting[instance];
    admit(instance, address, close_own_idle);
    admitting++;
    slot_ = instance;
}

Admission::~Admission() {
    if (slot_ == nullptr || exited)
        return;
    local->admitting[slot_]--;
    pg_atomic_sub_fetch_u64(&slot_->connections_open, 1);
}

void Admission::opened(const void *connection, std::string_view user, std::string_view server,
                       TimestampTz since) noexcept {
    if (slot_ == nullptr || exited)
        return;
    InstanceSlot *instance = slot_;
    Held held{instance, -1};
    try {
        held.slot = take_connection_slot(address_, user, server, since);
        local->connections.emplace(connection, held);
    } catch (...) {
        free_connection_slot(held.slot);
        return;  // not remembered: the destructor gives the place back
    }
    if (held.slot < 0)
        pg_atomic_fetch_add_u64(&instance->connections_unlisted, 1);
    if (setting_track_statistics)
        pg_atomic_fetch_add_u64(&instance->counters[I_CONNECTIONS_OPENED], 1);
    local->admitting[instance]--;
    slot_ = nullptr;
}

const char *connection_state_name(uint32_t state) {
    switch (static_cast<ConnectionState>(state)) {
        case ConnectionState::Idle:
            return "idle";
        case ConnectionState::Active:
            return "active";
        case ConnectionState::IdleInTransaction:
            return "idle in transaction";
        case ConnectionState::IdleInFailedTransaction:
            return "idle in transaction (aborted)";
    }
    return "unknown";
}

void connection_state(const void *connection, bool busy, PGTransactionStatusType transaction,
                      uint64_t statements, uint64_t prepared) noexcept {
    if (exited || local == nullptr)
        return;
    auto it = local->connections.find(connection);
    if (it == local->connections.end() || it->second.slot < 0)
        return;
    ConnectionState state = ConnectionState::Idle;
    if (busy || transaction == PQTRANS_ACTIVE)
        state = ConnectionState::Active;
    else if (transaction == PQTRANS_INTRANS)
        state = ConnectionState::IdleInTransaction;
    else if (transaction == PQTRANS_INERROR)
        state = ConnectionState::IdleInFailedTransaction;
    update_connection_slot(it->second.slot, static_cast<uint32>(state), statements, prepared);
}

void connection_closed(const void *connection) noexcept {
    if (exited || local == nullptr)
        return;
    auto it = local->connections.find(connection);
    if (it == local->connections.end())
        return;
    give_back(it->second);
    local->connections.erase(it);
}

bool budget_reached(const void *connection) noexcept {
    int budget = setting_max_connections_per_instance;
    if (budget <= 0 || exited || local == nullptr)
        return false;
    auto it = local->connections.find(connection);
    return it != local->connections.end() &&
           pg_atomic_read_u64(&it->second.instance->connections_open) >=
               static_cast<uint64>(budget);
}

}  // namespace picoroute::pg::stats
