// The routing decision: which instance runs a remote statement (running statements on their
// instances, with the failure rules below, is remote_exec.h).
//
// - A bucket goes to the master of the replicaset that owns it (or, for reads, to a replica or any
//   member per read_preference). A bucket the map does not know goes to a coordinator: any online
//   instance (masters first), which Picodata lets run any statement.
// - Unreachable instance: the worker is woken and, for a read or for a statement that was never
//   sent, the map is refreshed (bounded wait) and the statement runs once more on the new owner or
//   on a coordinator. A write that may have reached the server is never sent again.
// - Scatter over all masters never returns a partial answer: any failure fails the whole call.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
}

#include "core/routing/target.h"
#include "core/snapshot.h"
#include "pg/remote/connection.h"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace picoroute::pg::remote {

// The decisions themselves are pure functions in core/routing/target.h; these wrappers give them
// the session (its pid spreads sessions over candidates) and turn their outcomes into errors.
using ReadPref = picoroute::routing::ReadPref;
using Role = picoroute::routing::Role;
using Target = picoroute::routing::Target;
using picoroute::routing::describe;
using picoroute::routing::with_bucket_filter;

ReadPref parse_read_pref(const char *value);  // defaults to Leader for nullptr
const char *read_pref_name(ReadPref pref);

// The instance that should run a statement on `bucket`, or false when the map does not know the
// bucket's owner or its (online) master.
bool bucket_target(const SnapshotView &view, int32_t tier, uint32_t bucket, ReadPref pref,
                   Target *out);
// Whether one of `buckets` belongs, by the map, to a replicaset that has no usable instance to run
// it (no online master, or for `pref` no online member): a switchover is under way, and a
// statement for those buckets waits for it (picoroute.failover_wait) rather than asking a
// coordinator, which would fail or stall the same way. Buckets the map does not know are not.
bool awaiting_master(const SnapshotView &view, int32_t tier, const std::vector<uint32_t> &buckets,
                     ReadPref pref);
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

}  // namespace picoroute::pg::remote
