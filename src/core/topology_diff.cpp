// Changes between two topologies (see topology_diff.h).
#include "core/topology_diff.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

namespace picoroute {

const char *change_kind_name(ChangeKind kind) {
    switch (kind) {
        case ChangeKind::TierAdded:
            return "tier_added";
        case ChangeKind::ReplicasetAdded:
            return "replicaset_added";
        case ChangeKind::ReplicasetRemoved:
            return "replicaset_removed";
        case ChangeKind::MasterSwitched:
            return "master_switched";
        case ChangeKind::InstanceAdded:
            return "instance_added";
        case ChangeKind::InstanceRemoved:
            return "instance_removed";
        case ChangeKind::InstanceStateChanged:
            return "instance_state_changed";
        case ChangeKind::InstanceAddressChanged:
            return "instance_address_changed";
        case ChangeKind::InstanceVersionChanged:
            return "instance_version_changed";
        case ChangeKind::BucketsMapped:
            return "buckets_mapped";
        case ChangeKind::BucketsMoved:
            return "buckets_moved";
        case ChangeKind::BucketsUnmapped:
            return "buckets_unmapped";
        case ChangeKind::ClusterVersionChanged:
            return "cluster_version_changed";
        case ChangeKind::SourceSwitched:
            return "source_switched";
        case ChangeKind::RefreshFailed:
            return "refresh_failed";
        case ChangeKind::RefreshRecovered:
            return "refresh_recovered";
        case ChangeKind::EventsDropped:
            return "events_dropped";
    }
    return "unknown";
}

namespace {

const std::string &value(const std::optional<std::string> &field) {
    static const std::string empty;
    return field ? *field : empty;
}

// Names as one topology knows them: the uuid where it knows no name.
class Names {
  public:
    explicit Names(const Topology &t) : t_(t) {}

    std::string replicaset(const std::string &uuid) const {
        auto it = t_.replicasets().find(uuid);
        if (it == t_.replicasets().end() || value(it->second.name).empty())
            return uuid;
        return *it->second.name;
    }
    std::string instance(const std::string &uuid) const {
        auto it = t_.instances().find(uuid);
        if (it == t_.instances().end() || value(it->second.name).empty())
            return uuid;
        return *it->second.name;
    }
    std::string tier_of_replicaset(const std::string &uuid) const {
        auto it = t_.replicasets().find(uuid);
        return it == t_.replicasets().end() ? std::string() : value(it->second.tier);
    }
    // An instance's replicaset (name) and that replicaset's tier.
    void place(const Instance &instance, TopologyChange *change) const {
        const std::string &rs = value(instance.replicaset_uuid);
        change->replicaset = rs.empty() ? std::string() : replicaset(rs);
        change->tier = rs.empty() ? std::string() : tier_of_replicaset(rs);
    }

  private:
    const Topology &t_;
};

void diff_tiers(const Topology &before, const Topology &after, std::vector<TopologyChange> *out) {
    for (const auto &[name, count] : after.tiers()) {
        if (before.tiers().count(name) != 0)
            continue;
        TopologyChange c;
        c.kind = ChangeKind::TierAdded;
        c.tier = name;
        c.new_value = std::to_string(count);
        out->push_back(std::move(c));
    }
}

void diff_replicasets(const Topology &before, const Topology &after,
                      std::vector<TopologyChange> *out) {
    Names was(before), is(after);
    for (const auto &[uuid, rs] : before.replicasets()) {
        if (after.replicasets().count(uuid) != 0)
            continue;
        TopologyChange c;
        c.kind = ChangeKind::ReplicasetRemoved;
        c.tier = value(rs.tier);
        c.replicaset = was.replicaset(uuid);
        out->push_back(std::move(c));
    }
    for (const auto &[uuid, rs] : after.replicasets()) {
        auto old = before.replicasets().find(uuid);
        const std::string &master = value(rs.current_master_uuid);
        TopologyChange c;
        c.tier = value(rs.tier);
        c.replicaset = is.replicaset(uuid);
        c.new_value = master.empty() ? std::string() : is.instance(master);
        if (old == before.replicasets().end()) {
            c.kind = ChangeKind::ReplicasetAdded;
        } else if (value(old->second.current_master_uuid) != master) {
            const std::string &old_master = value(old->second.current_master_uuid);
            c.kind = ChangeKind::MasterSwitched;
            c.instance = c.new_value;
            c.old_value = old_master.empty() ? std::string() : was.instance(old_master);
        } else {
            continue;
        }
        out->push_back(std::move(c));
    }
}

// State, address and version of an instance known before and after.
void diff_instance(const Instance &old, const Instance &now, const Names &is,
                   std::vector<TopologyChange> *out) {
    const std::pair<ChangeKind, const std::optional<std::string> Instance::*> fields[] = {
        {ChangeKind::InstanceStateChanged, &Instance::current_state},
        {ChangeKind::InstanceAddressChanged, &Instance::address},
        {ChangeKind::InstanceVersionChanged, &Instance::picodata_version},
    };
    for (const auto &[kind, field] : fields) {
        if (value(old.*field) == value(now.*field))
            continue;
        TopologyChange c;
        c.kind = kind;
        is.place(now, &c);
        c.instance = is.instance(now.uuid);
        c.old_value = value(old.*field);
        c.new_value = value(now.*field);
        out->push_back(std::move(c));
    }
}

void diff_instances(const Topology &before, const Topology &after,
                    std::vector<TopologyChange> *out) {
    Names was(before), is(after);
    for (const auto &[uuid, instance] : before.instances()) {
        if (after.instances().count(uuid) != 0)
            continue;
        TopologyChange c;
        c.kind = ChangeKind::InstanceRemoved;
        was.place(instance, &c);
        c.instance = was.instance(uuid);
        c.old_value = value(instance.current_state);
        out->push_back(std::move(c));
    }
    for (const auto &[uuid, instance] : after.instances()) {
        auto old = before.instances().find(uuid);
        if (old != before.instances().end()) {
            diff_instance(old->second, instance, is, out);
            continue;
        }
        TopologyChange c;
        c.kind = ChangeKind::InstanceAdded;
        is.place(instance, &c);
        c.instance = is.instance(uuid);
        c.new_value = value(instance.current_state);
        out->push_back(std::move(c));
    }
}

// The uuid of the replicaset owning `bucket` in `ranges`, "" when no range holds it.
const std::string &owner_at(const TierBucketMap *ranges, uint64_t bucket) {
    static const std::string none;
    if (ranges == nullptr || bucket > UINT32_MAX)
        return none;
    auto it = ranges->upper_bound(static_cast<uint32_t>(bucket));
    if (it == ranges->begin())
        return none;
    --it;
    return it->second.end >= bucket ? it->second.replicaset_uuid : none;
}

const TierBucketMap *ranges_of(const Topology &t, const std::string &tier) {
    auto it = t.buckets().find(tier);
    return it == t.buckets().end() ? nullptr : &it->second;
}

// Buckets of one tier whose owner changed, adjacent buckets with the same change merged.
void diff_tier_buckets(const std::string &tier, const Topology &before, const Topology &after,
                       std::vector<TopologyChange> *out) {
    const TierBucketMap *old_ranges = ranges_of(before, tier);
    const TierBucketMap *new_ranges = ranges_of(after, tier);
    // Ownership is constant between consecutive boundaries of either map.
    std::set<uint64_t> bounds;
    for (const TierBucketMap *ranges : {old_ranges, new_ranges}) {
        if (ranges == nullptr)
            continue;
        for (const auto &[start, range] : *ranges) {
            bounds.insert(start);
            bounds.insert(static_cast<uint64_t>(range.end) + 1);
        }
    }
    Names was(before), is(after);
    std::string last_from, last_to;
    bool open = false;  // the last change of `out` is this tier's and may grow
    for (auto it = bounds.begin(); it != bounds.end() && std::next(it) != bounds.end(); ++it) {
        const std::string &from = owner_at(old_ranges, *it);
        const std::string &to = owner_at(new_ranges, *it);
        if (from == to) {
            open = false;
            continue;
        }
        uint32_t first = static_cast<uint32_t>(*it);
        uint32_t last = static_cast<uint32_t>(*std::next(it) - 1);
        if (open && from == last_from && to == last_to && out->back().bucket_end + 1 == first) {
            out->back().bucket_end = last;
            continue;
        }
        TopologyChange c;
        c.kind = from.empty() ? ChangeKind::BucketsMapped
                 : to.empty() ? ChangeKind::BucketsUnmapped
                              : ChangeKind::BucketsMoved;
        c.tier = tier;
        c.bucket_start = first;
        c.bucket_end = last;
        c.from_replicaset = from.empty() ? std::string() : was.replicaset(from);
        c.to_replicaset = to.empty() ? std::string() : is.replicaset(to);
        out->push_back(std::move(c));
        last_from = from;
        last_to = to;
        open = true;
    }
}

void diff_buckets(const Topology &before, const Topology &after, std::vector<TopologyChange> *out) {
    std::set<std::string> tiers;
    for (const Topology *t : {&before, &after})
        for (const auto &[tier, ranges] : t->buckets())
            tiers.insert(tier);
    for (const std::string &tier : tiers)
        diff_tier_buckets(tier, before, after, out);
}

}  // namespace

std::vector<TopologyChange> diff_topologies(const Topology &before, const Topology &after) {
    std::vector<TopologyChange> out;
    diff_tiers(before, after, &out);
    diff_replicasets(before, after, &out);
    diff_instances(before, after, &out);
    diff_buckets(before, after, &out);
    std::string old_version = before.cluster_version().value_or("");
    std::string new_version = after.cluster_version().value_or("");
    if (old_version != new_version) {
        TopologyChange c;
        c.kind = ChangeKind::ClusterVersionChanged;
        c.old_value = old_version;
        c.new_value = new_version;
        out.push_back(std::move(c));
    }
    return out;
}

}  // namespace picoroute
