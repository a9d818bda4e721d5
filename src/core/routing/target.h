// Which instance runs a statement, as pure functions of a topology snapshot: the owner of a
// bucket, the coordinator of a statement without a sharding key, the masters a 'masters' scatter
// asks, the buckets a switchover leaves without a master and the statements a dead master would
// stall. No PostgreSQL, no I/O: src/pg/lookup.h gives them the session's salt and raises their
// reports (core/routing/reports.h) as errors; src/pg/remote/ sends the statements there.
#pragma once
#include "core/firewall.h"
#include "core/snapshot.h"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace picoroute::routing {

enum class ReadPref { Leader, Replica, Any };
enum class Role { Master, Replica, Coordinator };

// A server's read_preference option as a ReadPref (Leader for nullptr and for any other text), and
// its name.
ReadPref parse_read_pref(const char *value);
const char *read_pref_name(ReadPref pref);

// How a statement was routed: the routing decision says it with each target (what the statistics
// of picoroute_stat_instances and picoroute_stat_tables distinguish).
enum class Sent : uint32_t {
    RoutedByKey,     // to the owner of its buckets (a sharding key or a bucket_id fixed them)
    Coordinator,     // to one instance that runs it for the whole cluster (no key, a global table)
    MastersScatter,  // to every master, each for its own buckets (scatter 'masters')
    KeyBatch,        // several keys (a key list) or INSERT rows grouped for one owner
    Chunk,           // a chunk of buckets of a keyless read over its row bound
};

// Which failures of a statement are sent again (core/routing/failover.h).
enum class Retry {
    Read,   // after any connection failure, and after a refusal before running
    Write,  // only when never sent, or refused before running on its one replicaset
    Never,  // a scatter over masters: any failure is final
};

struct Target {
    std::string address;
    std::string replicaset;       // uuid; "" for a coordinator
    std::string replicaset_name;  // its name (the uuid when the name is unknown), for messages
    std::string instance;         // name (or uuid when the name is unknown)
    Role role = Role::Coordinator;
    Sent sent = Sent::Coordinator;  // how the statement sent there was routed
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

// ---- the decisions of the failover (core/routing/failover.h) and of the glue ------------------

// Whether one of `buckets` belongs, by the map, to a replicaset that has no usable instance to run
// it (no online master, or for `pref` no online member): a switchover is under way, and a
// statement for those buckets waits for it (picoroute.failover_wait) rather than asking a
// coordinator, which would fail or stall the same way. Buckets the map does not know are not.
bool awaiting_master(const SnapshotView &view, int32_t tier, const std::vector<uint32_t> &buckets,
                     ReadPref pref, uint64_t salt);
// Whether the statement of `target` touches one replicaset: one bucket, or buckets that all
// belong to one replicaset of `tier` by the map. A statement without buckets (keyless) is not
// known to.
bool one_replicaset(const SnapshotView &view, int32_t tier, const Target &target);
// Where a read Picodata refused for not being a leader read goes as a leader read: the master of
// its buckets' owner when it had been sent to a replica of that owner, else where it went (any
// instance coordinates a leader read).
Target leader_target(const SnapshotView &view, int32_t tier, const Target &old, uint64_t salt);
// The instance that runs a statement on one bucket (picoroute_exec): its owner (per `pref`), else
// a coordinator (any online instance, masters first), the bucket in `buckets` either way. nullopt
// when no instance is online.
std::optional<Target> point_target(const SnapshotView &view, int32_t tier, uint32_t bucket,
                                   ReadPref pref, uint64_t salt);
// picoroute_exec's connections: the read_preference their startup options name ("any" for a
// read_only call, unless the session learned that its reads must be leader reads), and the
// preference its bucket is looked up with, from the one the connection names ("" for none).
const char *exec_read_preference(bool read_only, bool leader_reads_learned);
ReadPref exec_read_pref(std::string_view read_preference, bool read_only);

}  // namespace picoroute::routing
