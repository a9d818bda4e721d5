// Statements that a dead master would stall (tier_stall.h).
extern "C" {
#include "postgres.h"

#include "utils/errcodes.h"
#include "utils/timestamp.h"
}

#include "pg/remote/tier_stall.h"

#include "core/capabilities.h"
#include "pg/guard.h"
#include "pg/map_store.h"

namespace picoroute::pg::remote {

std::string stalling_master(bool sharded, const Target &target, const std::string &tier_name,
                            ReadPref pref, const ConnParams &params) {
    if (!sharded || tier_name.empty())
        return "";
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    int32_t tier = view.find_tier(tier_name);
    int32_t rs = picoroute::routing::masterless_replicaset(view, tier);
    if (rs == kNone)
        return "";
    std::string version = params.picodata_version;
    if (version.empty())
        version = view.cluster_version().value_or("");
    bool local = caps::has(version, caps::Capability::LocalExecution);
    if (!picoroute::routing::lua_dispatched(view, tier, target, pref, local))
        return "";
    const ReplicasetRecord &record = view.replicaset(rs);
    return std::string(record.name.length > 0 ? view.str(record.name) : view.str(record.uuid));
}

void raise_stalled(const Target &target, const std::string &replicaset, const std::string &tier,
                   TimestampTz since, WriteLog *log) {
    long ms = TimestampDifferenceMilliseconds(since, GetCurrentTimestamp());
    throw SqlError(
        ERRCODE_CONNECTION_FAILURE,
        "picoroute: did not send the statement: replicaset " + replicaset + " of tier " + tier +
            " has no online master",
        "Target: " + describe(target) +
            ". A Picodata instance sends a statement to the storages of a tier only once the "
            "master of each of its replicasets is connected, and waits for that up to the "
            "statement's deadline (360 s); only a statement sent to the master of the replicaset "
            "that owns all its buckets runs there without that wait (26.1.1 and later). picoroute "
            "waited " +
            std::to_string(ms) +
            " ms for the topology map to show a master (picoroute.failover_wait). The statement "
            "was not sent anywhere, so it was not applied." +
            (log != nullptr ? " " + log->summary() : std::string()),
        "Start that master, or let the replicaset switch to another one; picoroute_instances "
        "shows which instances are online.");
}

}  // namespace picoroute::pg::remote
