// The lookup step of this session: the routing decisions of core/routing/ on the current map,
// with the session's salt (one session keeps one choice among candidates, sessions spread over
// them), and their reports raised as errors. The FDW, picoroute_exec and the remote layer ask
// here; the decisions themselves, and their unit tests, are the core's.
#pragma once

extern "C" {
#include "postgres.h"
}

#include "core/routing/failover.h"
#include "core/routing/grouping.h"
#include "core/routing/reports.h"
#include "core/routing/target.h"
#include "core/routing/text.h"
#include "core/snapshot.h"
#include "pg/guard.h"

#include <set>
#include <string>
#include <vector>

namespace picoroute::pg {

using routing::describe;
using routing::parse_read_pref;
using routing::read_pref_name;
using routing::ReadPref;
using routing::Retry;
using routing::Role;
using routing::Target;
using routing::with_bucket_filter;

// The session's salt for the choices among candidates.
uint64_t session_salt();

// A report of the core as the error to throw.
SqlError report_error(const routing::Report &report);

// The map of the moment as a statement's failover sees it (core/routing/failover.h): the current
// map (valid until the next current_map()), `tier` by name, `pref`, and the server's
// picodata_version option `version` ("": the detected one).
routing::MapScope map_scope(const std::string &tier, ReadPref pref, const std::string &version);

// The instance that should run a statement on `bucket`, or false when the map does not know the
// bucket's owner or its (online) master.
bool bucket_target(const SnapshotView &view, int32_t tier, uint32_t bucket, ReadPref pref,
                   Target *out);
// Any online instance, masters first, skipping `exclude`. Throws when there is none.
Target coordinator_target(const SnapshotView &view, const std::set<std::string> &exclude = {});
// The instance that coordinates a statement without a sharding key (or on a global table): an
// online member of the tier chosen per session, a master for writes and 'leader' reads, a
// replica for 'replica' reads when there is one, any member for 'any'. Throws when none is online.
Target spread_target(const SnapshotView &view, int32_t tier, ReadPref pref, bool write);
// The master of every replicaset that owns buckets of the tier, with the bucket ranges it owns.
// Throws, naming the replicaset, when one has no online master with an address, or when the map
// does not cover every bucket of the tier (a scatter over masters must not miss rows).
std::vector<Target> master_targets(const SnapshotView &view, int32_t tier);
// Groups buckets by the instance that runs them (buckets the map does not know go to one
// coordinator). Targets come out in address order; buckets sorted.
std::vector<Target> group_buckets(const SnapshotView &view, int32_t tier,
                                  const std::set<uint32_t> &buckets, ReadPref pref);
// The instance that runs a statement on one bucket (picoroute_exec): its owner, else a
// coordinator. Throws when no instance is online.
Target point_target(const SnapshotView &view, int32_t tier, uint32_t bucket, ReadPref pref);
// Whether the statement of `target` touches one replicaset of tier `tier` (by name) by the current
// map (routing::one_replicaset).
bool one_replicaset(const Target &target, const std::string &tier);
// Where a read refused for not being a leader read goes as one (routing::leader_target), by the
// current map; `tier` by name.
Target leader_target(const Target &old, const std::string &tier);
// The lookups of routing::group_by_owner on `view`: owners per `pref`; the coordinator of the
// members without an owner: one of the tier's (spread_target) when `spread`, else any online
// instance.
routing::OwnerLookups owner_lookups(const SnapshotView &view, int32_t tier, ReadPref pref,
                                    bool spread);

}  // namespace picoroute::pg
