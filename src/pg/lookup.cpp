// The lookup step of this session (see lookup.h).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
}

#include "pg/lookup.h"

#include "pg/map_store.h"

#include <optional>
#include <utility>

namespace picoroute::pg {

uint64_t session_salt() {
    // One session keeps one choice; sessions spread over the candidates. Mixed (splitmix64), as
    // consecutive backends' pids often share their parity.
    uint64_t x = static_cast<uint64_t>(MyProcPid) ^ (static_cast<uint64_t>(MyStartTimestamp) << 20);
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

SqlError report_error(const routing::Report &report) {
    const std::string &s = report.sqlstate;
    int code = s.size() == 5 ? MAKE_SQLSTATE(s[0], s[1], s[2], s[3], s[4]) : ERRCODE_INTERNAL_ERROR;
    return SqlError(code, report.message, report.detail, report.hint);
}

routing::MapScope map_scope(const std::string &tier, ReadPref pref, const std::string &version) {
    routing::MapScope scope;
    scope.view = current_map().view;
    scope.tier = tier;
    scope.pref = pref;
    scope.salt = session_salt();
    scope.version = version;
    return scope;
}

bool bucket_target(const SnapshotView &view, int32_t tier, uint32_t bucket, ReadPref pref,
                   Target *out) {
    return routing::bucket_target(view, tier, bucket, pref, session_salt(), out);
}

Target coordinator_target(const SnapshotView &view, const std::set<std::string> &exclude) {
    if (std::optional<Target> t = routing::any_online(view, exclude))
        return std::move(*t);
    throw report_error(routing::no_coordinator(exclude));
}

Target spread_target(const SnapshotView &view, int32_t tier, ReadPref pref, bool write) {
    if (std::optional<Target> t = routing::spread_target(view, tier, pref, write, session_salt()))
        return std::move(*t);
    return coordinator_target(view);  // raises the error
}

std::vector<Target> master_targets(const SnapshotView &view, int32_t tier) {
    routing::MastersPlan plan = routing::master_targets(view, tier);
    if (plan.status != routing::MastersPlan::Status::Ok)
        throw report_error(routing::masters_unavailable(view, tier, plan));
    return std::move(plan.targets);
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

Target point_target(const SnapshotView &view, int32_t tier, uint32_t bucket, ReadPref pref) {
    if (std::optional<Target> t = routing::point_target(view, tier, bucket, pref, session_salt()))
        return std::move(*t);
    return coordinator_target(view);  // raises the error
}

bool one_replicaset(const Target &target, const std::string &tier) {
    if (target.buckets.size() == 1)
        return true;  // no map needed
    if (target.buckets.empty() || tier.empty())
        return false;
    const SnapshotView &view = *current_map().view;
    return routing::one_replicaset(view, view.find_tier(tier), target);
}

Target leader_target(const Target &old, const std::string &tier) {
    if (old.role != Role::Replica || old.buckets.empty() || tier.empty())
        return old;
    const SnapshotView &view = *current_map().view;
    return routing::leader_target(view, view.find_tier(tier), old, session_salt());
}

routing::OwnerLookups owner_lookups(const SnapshotView &view, int32_t tier, ReadPref pref,
                                    bool spread) {
    routing::OwnerLookups lookups;
    lookups.owner = [&view, tier, pref](uint32_t bucket, Target *out) {
        return bucket_target(view, tier, bucket, pref, out);
    };
    lookups.coordinator = [&view, tier, pref, spread] {
        return spread ? spread_target(view, tier, pref, false) : coordinator_target(view);
    };
    return lookups;
}

}  // namespace picoroute::pg
