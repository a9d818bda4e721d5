// What picoroute tells the user when a routed statement cannot run, as pure functions returning
// the texts of a PostgreSQL error (a Report: SQLSTATE, message, detail, hint) or of a part of its
// DETAIL. The remote layer and the lookups of src/pg/ only attach them to the error they raise.
#pragma once
#include "core/firewall.h"
#include "core/routing/target.h"
#include "core/routing/write_log.h"
#include "core/snapshot.h"

#include <cstddef>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace picoroute::routing {

// An error to raise.
struct Report {
    std::string sqlstate;  // five characters
    std::string message;
    std::string detail;
    std::string hint;
};

inline constexpr const char *kConnectionFailure = "08006";       // nothing was applied
inline constexpr const char *kCompletionUnknown = "40003";       // a write may have been applied
inline constexpr const char *kNotInPrerequisiteState = "55000";  // the map is not ready

// No online instance (but those `unreachable`) can coordinate a statement.
Report no_coordinator(const std::set<std::string> &unreachable);
// Why the masters of a 'masters' scatter cannot be asked (`plan` is not Ok): a replicaset without
// an online master, a map that does not know the owner of every bucket, a tier without
// replicasets.
Report masters_unavailable(const SnapshotView &view, int32_t tier, const MastersPlan &plan);

// The hint of a failure of a scatter over masters (it is never sent again).
extern const char *const kMastersScatterHint;
// `address` could not be reached for the statement of `target` (libpq's `message`).
Report unreachable(const Target &target, const std::string &address, const std::string &message,
                   const std::string &hint);
// The connection to `address` broke after a write was sent there: its outcome is unknown
// (40003, not a connection failure, which a client may take for "nothing happened" and retry);
// what `log` knows of the other instances follows.
Report lost_write(const Target &target, const std::string &address, const std::string &message,
                  const WriteLog *log);
// A statement for `target` not sent because `replicaset` of `tier` had no master for `waited_ms`
// (picoroute.failover_wait): its cause, that it was not applied, and what the log (a write's)
// holds.
Report stalled(const Target &target, const std::string &replicaset, const std::string &tier,
               int64_t waited_ms, const WriteLog *log);
// What the retries of a failed statement did, for the error that ends them.
std::string retried_for(int64_t ms);
// A streamed read lost its connection after `delivered` rows: it is not run again.
Report lost_mid_scan(const Target &target, size_t delivered, const std::string &message);

// What a write interrupted after it was sent did, instance by instance.
std::string abandoned_summary(const std::vector<Abandoned> &abandoned);
// What an interrupted read leaves behind: statements that run on (Picodata cannot cancel them);
// "" when none does.
std::string running_reads(const std::vector<Abandoned> &abandoned);
// The DETAIL added to an interrupt (a cancel, statement_timeout) that came while statements ran:
// for a write (`log` given), what became of each and what the log holds (recorded first); for a
// read, the statements that run on. "" when there is nothing to say.
std::string interrupted_detail(WriteLog *log, const std::vector<Abandoned> &abandoned);

// The context of a remote error: "remote SQL on Picodata instance <address> (replicaset <r>):
// <sql>".
std::string remote_context(const std::string &address, const std::string &replicaset,
                           const std::string &sql);
// The elapsed time between two instants in microseconds, in milliseconds rounded up (as
// PostgreSQL's TimestampDifferenceMilliseconds counts it); 0 when `to` is not later.
int64_t elapsed_ms(int64_t from, int64_t to);

}  // namespace picoroute::routing
