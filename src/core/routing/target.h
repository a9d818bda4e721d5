// The routing decision as pure functions of a topology snapshot: which instance runs a statement
// on a bucket, which instance coordinates a statement without a sharding key, which masters a
// 'masters' scatter asks, and the bucket filter each of them gets. No PostgreSQL, no I/O: the
// glue turns the outcomes into errors (src/pg/remote/routing.cpp) and runs the statements on their
// instances, with retries (src/pg/remote/remote_exec.cpp).
#pragma once
#include "core/firewall.h"
#include "core/snapshot.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace picoroute::routing {

enum class ReadPref { Leader, Replica, Any };
enum class Role { Master, Replica, Coordinator };

struct Target {
    std::string address;
    std::string replicaset;       // uuid; "" for a coordinator
    std::string replicaset_name;  // its name (the uuid when the name is unknown), for messages
    std::string instance;         // name (or uuid when the name is unknown)
    Role role = Role::Coordinator;
    std::vector<uint32_t> buckets;  // the buckets this target answers for; empty: no bucket filter
    // For a master of a 'masters' scatter: the bucket ranges its replicaset owns, so that every
    // row is read once even where an instance would answer for the whole cluster.
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
};

// "address (master <instance> of replicaset <name>)" and the like.
std::string describe(const Target &target);

// The instance that should run a statement on `bucket`: the owner's master, or for 'replica' and
// 'any' one of the owner's online members chosen by `salt` (a session keeps its choice). False
// when the map does not know the bucket's owner or its online master.
bool bucket_target(const SnapshotView &view, int32_t tier, uint32_t bucket, ReadPref pref,
                   uint64_t salt, Target *out);

// Any online instance with an address, masters first, skipping the addresses in `exclude`.
std::optional<Target> any_online(const SnapshotView &view,
                                 const std::set<std::string> &exclude = {});

// The coordinator of a statement without a sharding key (or on a global table): an online member
// of the tier (of any tier when the tier has none) chosen by `salt`, among the masters for writes
// and 'leader' reads, the replicas for 'replica' reads (masters when there is none), everyone
// for 'any'. nullopt when no instance is online.
std::optional<Target> spread_target(const SnapshotView &view, int32_t tier, ReadPref pref,
                                    bool write, uint64_t salt);

// The masters of a 'masters' scatter: one per replicaset that owns buckets of the tier (a
// replicaset without buckets is never asked: without a bucket filter it would answer for the
// whole cluster), each with its ranges, in address order.
struct MastersPlan {
    enum class Status {
        Ok,
        NoOnlineMaster,  // `replicaset` has no online master with an address
        Incomplete,      // the map does not know the owner of every bucket (`covered` known)
        NoReplicasets,   // the tier has no bucket owner at all
    };
    Status status = Status::Ok;
    std::vector<Target> targets;
    int32_t replicaset = kNone;  // for NoOnlineMaster
    uint32_t covered = 0;        // buckets with a known owner
};
MastersPlan master_targets(const SnapshotView &view, int32_t tier);

// Buckets grouped by the instance that runs them, in address order, buckets sorted; the buckets
// whose owner the map does not know are returned apart.
struct BucketGroups {
    std::vector<Target> targets;
    std::vector<uint32_t> unknown;
};
BucketGroups group_buckets(const SnapshotView &view, int32_t tier,
                           const std::set<uint32_t> &buckets, ReadPref pref, uint64_t salt);

// `sql` restricted to the target's buckets: "<sql> WHERE|AND bucket_id = N" / "IN (...)"; a
// master's ranges are written as the IN list of all their buckets, because Picodata (26.2.1-rc2)
// restricts a statement to the owners of the buckets of "bucket_id = N" or "IN (...)" while
// BETWEEN is only a row filter. No filter when the target has neither. `column` names the bucket
// column (a join's "r1"."bucket_id").
std::string with_bucket_filter(const std::string &sql, bool has_where, const Target &target,
                               const std::string &column = "bucket_id");

// A dead master stalls its tier. Picodata's coordinator sends a statement to the storages through
// Lua (src/sql/dispatch.lua, one_step_dispatch and two_step_dispatch, 25.5.1 to 26.3.0), which
// first waits for the master of every replicaset of the tier to be connected, up to the
// statement's deadline (360 s, DEFAULT_QUERY_TIMEOUT in src/sql/router.rs; nothing changes it),
// reads and writes alike; after a deadline spent waiting, the statement fails with
// "dql timeout exceeded" once sent to the live masters (a write may then be applied there).
// Versions with local execution (26.1.1+) run a statement whose buckets all belong to the
// receiving instance's replicaset on that instance, without Lua (should_single_rs_dispatch_locally
// in src/sql/dispatch.rs): at the replicaset's master for 'leader' (and every write), at a replica
// for 'replica', anywhere in it for 'any'; a statement without a sharding key only on a tier of
// one replicaset.
//
// Whether `target` runs a statement on its buckets (empty: no sharding key) through Lua.
bool lua_dispatched(const SnapshotView &view, int32_t tier, const Target &target, ReadPref pref,
                    bool local_execution);
// A replicaset of the tier (its index) whose master the map does not show online, or kNone.
int32_t masterless_replicaset(const SnapshotView &view, int32_t tier);

}  // namespace picoroute::routing
