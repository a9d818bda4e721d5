// The verdicts of the route check in shared memory (core/route_check.h says what is checked): one
// entry per foreign table (of a database), key signature, detected Picodata version and double
// rule, shared by every backend, so the cluster is asked once per table signature and version,
// not once per session. The table holds picoroute.max_route_checks entries, sized at server start;
// when no entry can be taken (core::pick_slot) a verdict is not recorded and its statements are
// routed unchecked, with a WARNING (route_check.cpp).
//
// The hot path costs one atomic read: each entry carries a word (incarnation << 8 | state) written
// last, and a backend keeps, per key, the entry and incarnation it found; while the incarnation
// still matches, an agreed or disagreed state needs no lock. Everything else (finding an entry,
// taking a check on, recording it, listing) runs under one LWLock.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

#include "core/route_check.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace picoroute::pg {

// picoroute.route_check (on: check) and picoroute.max_route_checks (entries; server start).
extern bool setting_route_check;
extern int setting_max_route_checks;
// Defines both (the capacity only while preloading); called by define_settings().
void define_route_check_settings();

// Shared memory, from the library's shmem hooks (picoroute.cpp): the size to request, and the
// table's creation or attachment (called with AddinShmemInitLock held).
Size route_checks_shmem_size();
void route_checks_shmem_init();

// What a verdict is about. The database is the backend's own.
struct CheckKey {
    Oid relid = InvalidOid;  // the foreign table
    uint8_t rule = 0;        // picoroute's hashing rule for it (HashRule)
    std::string signature;   // "integer, string": the Picodata types of the key values
    std::string version;     // the detected Picodata version, "" when none is known
};

// What a statement finds (core::Step), plus Full: no entry could be taken.
enum class CheckStep { ByBucket, ThroughCoordinator, Check, Full };

// A check this backend took on: record() its result with the same ticket.
struct CheckTicket {
    int slot = -1;
    uint64_t incarnation = 0;
};

// The verdict for `key` as a statement must follow it now. Check: this backend took the check on
// (the entry is Pending, *ticket set): run it and record() the result. With `may_check` false (an
// EXPLAIN) nothing is taken on or created. *entry, when given, is set to the entry consulted, for
// entry_step. A pending or unknown verdict not yet due costs no lock either. C++ context.
CheckStep consult_check(const CheckKey &key, bool may_check, CheckTicket *ticket,
                        CheckTicket *entry = nullptr);
// The hot path of a caller that keeps the entry consult_check gave for a key: the step, read
// without the lock, or nullopt when consult_check must be asked (the entry was taken for another
// key, or a check is due).
std::optional<CheckStep> entry_step(const CheckTicket &entry, bool may_check);

// The result of a check, as recorded.
struct CheckResult {
    route_check::State state = route_check::State::Unknown;  // Agreed, Disagreed or Unknown
    std::string table;             // the foreign table's name, as the view shows it
    std::string sample;            // format_sample of the key asked about
    int64_t picoroute_bucket = 0;  // 0: none
    int64_t picodata_bucket = 0;   // 0: none (or not a single bucket)
    std::string detail;            // Picodata's buckets line, or why the check did not conclude
};
// Records the result of the check `ticket` took on (nothing when the entry was taken for another
// key meanwhile). An Unknown result schedules the next attempt (core::note_inconclusive).
void record_check(const CheckTicket &ticket, const CheckResult &result);

// One entry, for the view.
struct CheckRow {
    Oid dbid = InvalidOid;
    Oid relid = InvalidOid;
    CheckKey key;
    route_check::State state = route_check::State::Empty;
    CheckResult result;
    TimestampTz checked_at = 0;  // when the last check ended (0: none yet)
    TimestampTz next_check = 0;  // Unknown: when the next may run
    uint32_t attempts = 0;
};
std::vector<CheckRow> list_checks();
// The capacity (picoroute.max_route_checks at server start).
int route_checks_capacity();

}  // namespace picoroute::pg
