// The routing decisions of the glue: session-aware wrappers of core/routing/target.h (see
// routing.h).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
}

#include "pg/remote/routing.h"

#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/worker_status.h"
#include "pg/settings.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace picoroute::pg::remote {

ReadPref parse_read_pref(const char *value) {
    if (value == nullptr || strcmp(value, "leader") == 0)
        return ReadPref::Leader;
    if (strcmp(value, "replica") == 0)
        return ReadPref::Replica;
    return ReadPref::Any;
}

const char *read_pref_name(ReadPref pref) {
    switch (pref) {
        case ReadPref::Leader:
            return "leader";
        case ReadPref::Replica:
            return "replica";
        case ReadPref::Any:
            return "any";
    }
    return "leader";
}

namespace {

uint64_t session_salt() {
    // One session keeps one choice; sessions spread over the candidates. Mixed (splitmix64), as
    // consecutive backends' pids often share their parity.
    uint64_t x = static_cast<uint64_t>(MyProcPid) ^ (static_cast<uint64_t>(MyStartTimestamp) << 20);
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

}  // namespace

bool bucket_target(const SnapshotView &view, int32_t tier, uint32_t bucket, ReadPref pref,
                   Target *out) {
    return routing::bucket_target(view, tier, bucket, pref, session_salt(), out);
}

bool awaiting_master(const SnapshotView &view, int32_t tier, const std::vector<uint32_t> &buckets,
                     ReadPref pref) {
    if (tier == kNone)
        return false;
    for (uint32_t bucket : buckets) {
        int32_t range = view.find_range(tier, bucket);
        if (range == kNone || view.range(range).replicaset == kNone)
            continue;
        Target t;
        if (!bucket_target(view, tier, bucket, pref, &t))
            return true;
    }
    return false;
}

Target coordinator_target(const SnapshotView &view, const std::set<std::string> &exclude) {
    if (std::optional<Target> t = routing::any_online(view, exclude))
        return *t;
    throw SqlError(
        ERRCODE_CONNECTION_FAILURE,
        "picoroute: no online Picodata instance to coordinate the statement",
        exclude.empty() ? std::string()
                        : "Unreachable: " +
                              [&] {
                                  std::string s;
                                  for (const auto &a : exclude)
                                      s += (s.empty() ? "" : ", ") + a;
                                  return s;
                              }(),
        "Check picoroute_instances and picoroute_status.");
}

Target spread_target(const SnapshotView &view, int32_t tier, ReadPref pref, bool write) {
    if (std::optional<Target> t = routing::spread_target(view, tier, pref, write, session_salt()))
        return *t;
    return coordinator_target(view);  // raises the error
}

std::vector<Target> master_targets(const SnapshotView &view, int32_t tier) {
    routing::MastersPlan plan = routing::master_targets(view, tier);
    const TierRecord &t = view.tier(tier);
    switch (plan.status) {
        case routing::MastersPlan::Status::Ok:
            return std::move(plan.targets);
        case routing::MastersPlan::Status::NoOnlineMaster: {
            const ReplicasetRecord &rec = view.replicaset(plan.replicaset);
            int32_t master = rec.master;
            std::string name(rec.name.length > 0 ? view.str(rec.name) : view.str(rec.uuid));
            const InstanceRecord *inst = master == kNone ? nullptr : &view.instance(master);
            throw SqlError(
                ERRCODE_CONNECTION_FAILURE,
                "picoroute: replicaset \"" + name + "\" (" + std::string(view.str(rec.uuid)) +
                    ") of tier \"" + std::string(view.str(t.name)) + "\" has no online master",
                inst == nullptr ? "The map knows no master for it."
                                : "Its master " +
                                      std::string(inst->name.length > 0 ? view.str(inst->name)
                                                                        : view.str(inst->uuid)) +
                                      " is not online.",
                "A scan with scatter 'masters' needs every master; no partial "
                "result is returned. Retry after the switchover, or use scatter "
                "'coordinator'.");
        }
        case routing::MastersPlan::Status::Incomplete:
            throw SqlError(
                ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "picoroute: the topology map does not know the owner of every bucket of tier "
                "\"" +
                    std::string(view.str(t.name)) + "\"",
                std::to_string(plan.covered) + " of " + std::to_string(t.bucket_count) +
                    " buckets have a known replicaset.",
                "A scan with scatter 'masters' would miss rows. Retry after the next "
                "refresh (picoroute_refresh), or use scatter 'coordinator'.");
        case routing::MastersPlan::Status::NoReplicasets:
            break;
    }
    throw SqlError(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                   "picoroute: tier \"" + std::string(view.str(t.name)) +
                       "\" has no replicasets in the topology map",
                   {}, "See picoroute_replicasets and picoroute_status.");
}

std::vector<Target> group_buckets(const SnapshotView &view, int32_t tier,
                                  const std::set<uint32_t> &buckets, ReadPref pref) {
    routing::BucketGroups groups =
        routing::group_buckets(view, tier, buckets, pref, session_salt());
    if (!groups.unknown.empty()) {
        Target c = coordinator_target(view);
        c.buckets = std::move(groups.unknown);
        groups.targets.push_back(std::move(c));
    }
    return std::move(groups.targets);
}

}  // namespace picoroute::pg::remote
