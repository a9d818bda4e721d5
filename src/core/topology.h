// The client-side model of a Picodata cluster and the event-application algorithm of the seed
// documents (000: bucket map, 002: topology). Not thread-safe; owned by the background worker (or
// by one call of picoroute_apply_events) and published as a flat snapshot (snapshot.h).
#pragma once
#include "core/firewall.h"

#include "core/events.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace picoroute {

inline constexpr std::string_view kOnlineState = "Online";

struct Instance {
    std::string uuid;
    std::optional<std::string> name;
    std::optional<std::string> replicaset_uuid;
    std::optional<std::string> current_state;
    std::optional<std::string> address;           // pgproto "host:port"
    std::optional<std::string> picodata_version;  // as the instance reports it
    bool is_online() const { return current_state && *current_state == kOnlineState; }
    bool operator==(const Instance &other) const;
};

struct Replicaset {
    std::string uuid;
    std::optional<std::string> name;
    std::optional<std::string> tier;
    std::optional<std::string> current_master_uuid;
    bool operator==(const Replicaset &other) const;
};

struct BucketRange {
    uint32_t start = 0;
    uint32_t end = 0;  // inclusive
    std::string replicaset_uuid;
    std::string state;
    bool operator==(const BucketRange &other) const;
};

// Ranges of one tier keyed by their first bucket; ranges of a tier never overlap.
using TierBucketMap = std::map<uint32_t, BucketRange>;

class Topology {
  public:
    // Applies one event exactly as the seeds specify. Throws Error(InvalidInput) for an event that
    // cannot be applied (empty uuid, start == 0, start > end, end beyond the tier's bucket_count
    // when the tier is known); the topology is then unchanged.
    void apply(const Event &event);

    // Applies a batch all-or-nothing: every event is validated before any is applied, so on an
    // error the topology is left as it was before the call. Returns true when anything changed.
    bool apply_all(const std::vector<Event> &events);
    // The same for events[begin, end); errors number the events as in the whole vector.
    bool apply_all(const std::vector<Event> &events, size_t begin, size_t end);

    // Forgets instances, replicasets and bucket ranges; keeps tiers (seed 002).
    void clear();

    // Master instance of the replicaset owning `bucket_id` in `tier`, or nullptr when the range,
    // the replicaset, its master or the master instance is unknown. O(log ranges).
    const Instance *find_bucket_master(std::string_view tier, uint32_t bucket_id) const;
    // The range holding `bucket_id`, or nullptr.
    const BucketRange *find_bucket_range(std::string_view tier, uint32_t bucket_id) const;
    // Every known instance of the replicaset owning the bucket, master first, then by uuid.
    std::vector<const Instance *> bucket_replicas(std::string_view tier, uint32_t bucket_id) const;
    // Addresses of instances in the Online state.
    std::set<std::string> online_addresses() const;
    // Names of the known tiers.
    std::set<std::string> known_tiers() const;
    // The version the cluster can be relied on for: the lowest reported by an Online instance
    // (caps::lowest_version), std::nullopt when none reports one that parses.
    std::optional<std::string> cluster_version() const;

    const std::map<std::string, Instance> &instances() const { return instances_; }
    const std::map<std::string, Replicaset> &replicasets() const { return replicasets_; }
    // tier name -> its ranges; a tier present with an empty map is known but has no ranges yet.
    const std::map<std::string, TierBucketMap, std::less<>> &buckets() const { return buckets_; }
    // tier name -> bucket_count.
    const std::map<std::string, uint32_t, std::less<>> &tiers() const { return tiers_; }
    // The tier the catalog flags as the default one (_pico_tier.is_default), when it says.
    const std::optional<std::string> &default_tier() const { return default_tier_; }

    bool operator==(const Topology &other) const;

  private:
    using TierCounts = std::map<std::string, uint32_t, std::less<>>;
    // Throws Error(InvalidInput) for an event that cannot be applied; `counts` are the tiers'
    // bucket counts as the events before it leave them.
    static void check(const Event &event, TierCounts &counts);
    static void check_bucket(const BucketEvent &event, const TierCounts &counts);
    // Apply a checked event; each returns true when it changed the topology.
    bool apply_checked(const Event &event);
    bool apply_replicaset(const ReplicasetEvent &event);
    bool apply_instance(const InstanceEvent &event);
    bool apply_bucket(const BucketEvent &event);
    bool apply_tier(const TierEvent &event);
    bool overlaps(const TierBucketMap &map, const BucketEvent &event) const;

    std::map<std::string, Instance> instances_;
    std::map<std::string, Replicaset> replicasets_;
    std::map<std::string, TierBucketMap, std::less<>> buckets_;
    std::map<std::string, uint32_t, std::less<>> tiers_;
    std::optional<std::string> default_tier_;
};

}  // namespace picoroute
