// The shared table of route-check verdicts (see route_checks.h).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/shmem.h"
#include "utils/guc.h"
#include "utils/timestamp.h"
}

#include "core/address.h"
#include "pg/guard.h"
#include "pg/route_checks.h"

#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>

namespace picoroute::pg {

bool setting_route_check = true;
int setting_max_route_checks = 1024;

namespace {

using route_check::State;

struct Slot {
    // (incarnation << 8) | state, written last: the hot path reads it without the lock.
    pg_atomic_uint64 word;
    // Pending: when the check is taken to be abandoned; Unknown: when the next may run. Before it,
    // the hot path routes by bucket without the lock.
    pg_atomic_uint64 due_ms;
    // Everything below is read and written under the lock.
    Oid dbid;
    Oid relid;
    uint8 rule;
    char signature[128];
    char version[64];
    route_check::Progress progress;
    int64 last_used_ms;
    TimestampTz checked_at;
    int64 picoroute_bucket;
    int64 picodata_bucket;
    char table[2 * NAMEDATALEN + 8];
    char sample[160];
    char detail[320];
};

struct Header {
    LWLock lock;
    int capacity;
    uint64 next_incarnation;
};

Header *header = nullptr;
Slot *slots = nullptr;  // capacity entries, after the header

State state_of(uint64 word) {
    return static_cast<State>(word & 0xff);
}

uint64 incarnation_of(uint64 word) {
    return word >> 8;
}

void set_word(Slot *slot, uint64 incarnation, State state) {
    pg_atomic_write_u64(&slot->word, (incarnation << 8) | static_cast<uint64>(state));
}

template <size_t N>
void copy_text(char (&field)[N], const std::string &value) {
    std::string text = utf8_truncate(value, N - 1);
    memcpy(field, text.c_str(), text.size() + 1);
}

int64 now_ms() {
    return GetCurrentTimestamp() / 1000;
}

// Holds the table's lock for its lifetime (LWLockAcquire may only fail by ERROR on a broken lock).
class TableLock {
  public:
    explicit TableLock(LWLockMode mode) {
        pg_call([mode] { LWLockAcquire(&header->lock, mode); });
    }
    ~TableLock() { LWLockRelease(&header->lock); }
    TableLock(const TableLock &) = delete;
    TableLock &operator=(const TableLock &) = delete;
};

bool same_key(const Slot &slot, const CheckKey &key) {
    return state_of(pg_atomic_read_u64(const_cast<pg_atomic_uint64 *>(&slot.word))) !=
               State::Empty &&
           slot.dbid == MyDatabaseId && slot.relid == key.relid && slot.rule == key.rule &&
           key.signature == slot.signature && key.version == slot.version;
}

// This backend's entry and incarnation for each key it consulted: the hot path.
struct Cached {
    int slot;
    uint64 incarnation;
};
std::unordered_map<std::string, Cached> &local_cache() {
    static std::unordered_map<std::string, Cached> cache;
    return cache;
}

std::string cache_key(const CheckKey &key) {
    return std::to_string(key.relid) + '/' + std::to_string(key.rule) + '/' + key.signature + '/' +
           key.version;
}

CheckStep step_of(route_check::Step step) {
    switch (step) {
        case route_check::Step::ThroughCoordinator:
            return CheckStep::ThroughCoordinator;
        case route_check::Step::Check:
            return CheckStep::Check;
        case route_check::Step::ByBucket:
            break;
    }
    return CheckStep::ByBucket;
}

// Takes the check of `slot` on (under the lock).
void take_on(int i, int64 now, CheckTicket *ticket) {
    Slot &slot = slots[i];
    uint64 incarnation = incarnation_of(pg_atomic_read_u64(&slot.word));
    slot.progress.claimed_at_ms = now;
    pg_atomic_write_u64(&slot.due_ms, static_cast<uint64>(now + route_check::kPendingStaleMs));
    set_word(&slot, incarnation, State::Pending);
    *ticket = CheckTicket{i, incarnation};
}

// The step of an entry whose incarnation still matches, without the lock; nullopt when it must be
// looked at under the lock (no longer this key, or a check is due).
std::optional<CheckStep> lock_free_step(const CheckTicket &entry, bool may_check) {
    if (entry.slot < 0 || entry.slot >= header->capacity)
        return std::nullopt;
    Slot &slot = slots[entry.slot];
    uint64 word = pg_atomic_read_u64(&slot.word);
    if (incarnation_of(word) != entry.incarnation)
        return std::nullopt;
    switch (state_of(word)) {
        case State::Agreed:
            return CheckStep::ByBucket;
        case State::Disagreed:
            return CheckStep::ThroughCoordinator;
        case State::Pending:
        case State::Unknown:
            if (!may_check || static_cast<uint64>(now_ms()) < pg_atomic_read_u64(&slot.due_ms))
                return CheckStep::ByBucket;
            return std::nullopt;
        case State::Empty:
            break;
    }
    return std::nullopt;
}

// A new entry for `key` (under the exclusive lock), or -1 when the table is full.
int new_entry(const CheckKey &key, int64 now) {
    std::vector<route_check::SlotSummary> summaries(header->capacity);
    for (int i = 0; i < header->capacity; i++) {
        const Slot &s = slots[i];
        summaries[i].state = state_of(pg_atomic_read_u64(&slots[i].word));
        summaries[i].current_version = key.version == s.version;
        summaries[i].last_used_ms = s.last_used_ms;
        summaries[i].claimed_at_ms = s.progress.claimed_at_ms;
    }
    int i = route_check::pick_slot(summaries, now);
    if (i < 0)
        return -1;
    Slot &slot = slots[i];
    uint64 incarnation = ++header->next_incarnation;
    set_word(&slot, incarnation, State::Empty);
    slot.dbid = MyDatabaseId;
    slot.relid = key.relid;
    slot.rule = key.rule;
    copy_text(slot.signature, key.signature);
    copy_text(slot.version, key.version);
    slot.progress = route_check::Progress{};
    slot.last_used_ms = now;
    slot.checked_at = 0;
    slot.picoroute_bucket = slot.picodata_bucket = 0;
    slot.table[0] = slot.sample[0] = slot.detail[0] = '\0';
    slot.progress.claimed_at_ms = now;
    pg_atomic_write_u64(&slot.due_ms, static_cast<uint64>(now + route_check::kPendingStaleMs));
    set_word(&slot, incarnation, State::Pending);
    return i;
}

}  // namespace

void define_route_check_settings() {
    DefineCustomBoolVariable(
        "picoroute.route_check",
        "Checks picoroute's bucket of each foreign table's sharding key against Picodata's own.",
        "Before keys of a table are routed by the bucket picoroute computes, the cluster is asked "
        "to EXPLAIN a statement fixing a sample key, once per table, key types and Picodata "
        "version; where the buckets differ, that table's keyed statements go through a "
        "coordinator. off: keyed statements are routed by picoroute's bucket unchecked.",
        &setting_route_check, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    if (process_shared_preload_libraries_in_progress)
        DefineCustomIntVariable("picoroute.max_route_checks",
                                "Capacity of the shared table of route-check verdicts.",
                                "One entry per foreign table, key types and Picodata version.",
                                &setting_max_route_checks, 1024, 1, 1000000, PGC_POSTMASTER, 0,
                                nullptr, nullptr, nullptr);
}

Size route_checks_shmem_size() {
    return add_size(MAXALIGN(sizeof(Header)),
                    mul_size(sizeof(Slot), static_cast<Size>(setting_max_route_checks)));
}

void route_checks_shmem_init() {
    bool found = false;
    header = static_cast<Header *>(
        ShmemInitStruct("picoroute route checks", route_checks_shmem_size(), &found));
    slots = reinterpret_cast<Slot *>(reinterpret_cast<char *>(header) + MAXALIGN(sizeof(Header)));
    if (!found) {
        memset(static_cast<void *>(header), 0, route_checks_shmem_size());
        int tranche = LWLockNewTrancheId();
        LWLockInitialize(&header->lock, tranche);
        header->capacity = setting_max_route_checks;
        for (int i = 0; i < header->capacity; i++) {
            pg_atomic_init_u64(&slots[i].word, 0);
            pg_atomic_init_u64(&slots[i].due_ms, 0);
        }
    }
    LWLockRegisterTranche(header->lock.tranche, "picoroute_route_checks");
}

CheckStep consult_check(const CheckKey &requested, bool may_check, CheckTicket *ticket,
                        CheckTicket *entry) {
    if (header == nullptr)
        return CheckStep::ByBucket;
    // As an entry keeps it: a very long signature (a key of many columns) is cut there.
    CheckKey key = requested;
    key.signature = utf8_truncate(key.signature, sizeof(Slot::signature) - 1);
    key.version = utf8_truncate(key.version, sizeof(Slot::version) - 1);
    std::string k = cache_key(key);
    auto &cache = local_cache();
    auto it = cache.find(k);
    if (it != cache.end()) {
        CheckTicket cached{it->second.slot, it->second.incarnation};
        if (std::optional<CheckStep> step = lock_free_step(cached, may_check)) {
            if (entry != nullptr)
                *entry = cached;
            return *step;
        }
    }
    TableLock lock(LW_EXCLUSIVE);
    int64 now = now_ms();
    for (int i = 0; i < header->capacity; i++) {
        Slot &slot = slots[i];
        if (!same_key(slot, key))
            continue;
        uint64 word = pg_atomic_read_u64(&slot.word);
        slot.last_used_ms = now;
        if (cache.size() > 10000)
            cache.clear();
        cache[k] = Cached{i, incarnation_of(word)};
        if (entry != nullptr)
            *entry = CheckTicket{i, incarnation_of(word)};
        CheckStep step =
            step_of(route_check::next_step(state_of(word), slot.progress, now, may_check));
        if (step == CheckStep::Check)
            take_on(i, now, ticket);
        return step;
    }
    if (!may_check)
        return CheckStep::ByBucket;
    int i = new_entry(key, now);
    if (i < 0)
        return CheckStep::Full;
    uint64 incarnation = incarnation_of(pg_atomic_read_u64(&slots[i].word));
    if (cache.size() > 10000)
        cache.clear();
    cache[k] = Cached{i, incarnation};
    *ticket = CheckTicket{i, incarnation};
    if (entry != nullptr)
        *entry = *ticket;
    return CheckStep::Check;
}

std::optional<CheckStep> entry_step(const CheckTicket &entry, bool may_check) {
    if (header == nullptr)
        return CheckStep::ByBucket;
    return lock_free_step(entry, may_check);
}

void record_check(const CheckTicket &ticket, const CheckResult &result) {
    if (header == nullptr || ticket.slot < 0 || ticket.slot >= header->capacity)
        return;
    TableLock lock(LW_EXCLUSIVE);
    Slot &slot = slots[ticket.slot];
    if (incarnation_of(pg_atomic_read_u64(&slot.word)) != ticket.incarnation)
        return;  // taken for another key meanwhile
    int64 now = now_ms();
    if (result.state == State::Unknown)
        route_check::note_inconclusive(&slot.progress, now);
    else
        slot.progress.attempts = 0;
    pg_atomic_write_u64(&slot.due_ms, result.state == State::Unknown
                                          ? static_cast<uint64>(slot.progress.retry_at_ms)
                                          : 0);
    slot.checked_at = GetCurrentTimestamp();
    slot.picoroute_bucket = result.picoroute_bucket;
    slot.picodata_bucket = result.picodata_bucket;
    copy_text(slot.table, result.table);
    copy_text(slot.sample, result.sample);
    copy_text(slot.detail, result.detail);
    set_word(&slot, ticket.incarnation, result.state);
}

std::vector<CheckRow> list_checks() {
    std::vector<CheckRow> rows;
    if (header == nullptr)
        return rows;
    TableLock lock(LW_SHARED);
    for (int i = 0; i < header->capacity; i++) {
        const Slot &s = slots[i];
        State state = state_of(pg_atomic_read_u64(&slots[i].word));
        if (state == State::Empty)
            continue;
        CheckRow row;
        row.dbid = s.dbid;
        row.relid = s.relid;
        row.key = CheckKey{s.relid, s.rule, s.signature, s.version};
        row.state = state;
        row.result =
            CheckResult{state, s.table, s.sample, s.picoroute_bucket, s.picodata_bucket, s.detail};
        row.checked_at = s.checked_at;
        row.next_check =
            state == State::Unknown ? static_cast<TimestampTz>(s.progress.retry_at_ms) * 1000 : 0;
        row.attempts = s.progress.attempts;
        rows.push_back(std::move(row));
    }
    return rows;
}

int route_checks_capacity() {
    return header == nullptr ? 0 : header->capacity;
}

}  // namespace picoroute::pg
