// A dead master stalls its tier (core/routing/target.h, lua_dispatched): while the map shows a
// replicaset of a tier without an online master, a statement that a Picodata instance would
// dispatch through Lua waits there for that master, up to the statement's deadline (360 s), and
// then fails with "dql timeout exceeded" after it was sent to the live masters (a write may be
// applied there). picoroute does not send such a statement: run_jobs holds it like a statement
// whose own buckets have no master, within picoroute.failover_wait, and when the map still shows no
// master then, fails with the true cause, never sent (raise_stalled). A statement that runs on
// Picodata's local path (26.1.1+: its buckets all belong to the replicaset of the master it is sent
// to) and a statement on a global table do not wait, and are sent as usual.
#pragma once

extern "C" {
#include "postgres.h"
#include "datatype/timestamp.h"
}

#include "pg/remote/connect.h"
#include "pg/remote/routing.h"
#include "pg/remote/write_ledger.h"

#include <string>

namespace picoroute::pg::remote {

// The replicaset (its name) whose missing master would make Picodata's instance `target` wait
// before running a statement (`sharded`: on a sharded table of tier `tier`, with read preference
// `pref`), or "" when it would not wait. The version that decides the local path is the server's
// picodata_version option, else the one the map detects.
std::string stalling_master(bool sharded, const Target &target, const std::string &tier,
                            ReadPref pref, const ConnParams &params);

// The error for a statement for `target` not sent because `replicaset` had no master within
// picoroute.failover_wait (counted from `since`): its cause, that it was not applied, and what the
// statement's log (when it writes) holds.
[[noreturn]] void raise_stalled(const Target &target, const std::string &replicaset,
                                const std::string &tier, TimestampTz since, WriteLog *log);

}  // namespace picoroute::pg::remote
