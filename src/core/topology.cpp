// The topology model and the event-application algorithm of seeds 000 and 002 (picopyn's
// Topology), reproduced step by step. Every apply_* validates its event before touching any state,
// so a rejected event leaves the topology unchanged.
#include "core/topology.h"

#include "core/errors.h"

#include <algorithm>
#include <utility>

namespace picoroute {

bool Instance::operator==(const Instance &other) const {
    return uuid == other.uuid && name == other.name && replicaset_uuid == other.replicaset_uuid &&
           current_state == other.current_state && address == other.address;
}

bool Replicaset::operator==(const Replicaset &other) const {
    return uuid == other.uuid && name == other.name && tier == other.tier &&
           current_master_uuid == other.current_master_uuid;
}

bool BucketRange::operator==(const BucketRange &other) const {
    return start == other.start && end == other.end && replicaset_uuid == other.replicaset_uuid &&
           state == other.state;
}

bool Topology::operator==(const Topology &other) const {
    return instances_ == other.instances_ && replicasets_ == other.replicasets_ &&
           buckets_ == other.buckets_ && tiers_ == other.tiers_;
}

namespace {

[[noreturn]] void invalid(const std::string &message) {
    throw Error(ErrorKind::InvalidInput, message);
}

void require_tier_name(const std::optional<std::string> &tier, const std::string &what) {
    if (tier && tier->empty()) {
        invalid(what + ": tier name is empty");
    }
}

}  // namespace

void Topology::apply(const Event &event) {
    std::visit(
        [this](const auto &e) {
            using T = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<T, ReplicasetEvent>) {
                apply_replicaset(e);
            } else if constexpr (std::is_same_v<T, InstanceEvent>) {
                apply_instance(e);
            } else if constexpr (std::is_same_v<T, BucketEvent>) {
                apply_bucket(e);
            } else {
                apply_tier(e);
            }
        },
        event);
}

bool Topology::apply_all(const std::vector<Event> &events) {
    if (events.empty()) {
        return false;
    }
    Topology next = *this;
    for (size_t i = 0; i < events.size(); ++i) {
        try {
            next.apply(events[i]);
        } catch (const Error &error) {
            throw Error(
                error.kind(),
                "event " + std::to_string(i) + " (" + describe(events[i]) + "): " + error.what(),
                error.hint());
        }
    }
    if (next == *this) {
        return false;
    }
    *this = std::move(next);
    return true;
}

void Topology::clear() {
    instances_.clear();
    replicasets_.clear();
    buckets_.clear();
}

void Topology::apply_instance(const InstanceEvent &event) {
    if (event.instance_uuid.empty()) {
        invalid("instance event: instance uuid is empty");
    }
    if (event.op == Op::Delete) {
        instances_.erase(event.instance_uuid);
        return;
    }
    auto [it, inserted] = instances_.try_emplace(event.instance_uuid);
    Instance &instance = it->second;
    if (inserted) {
        instance.uuid = event.instance_uuid;
    }
    if (event.name) {
        instance.name = event.name;
    }
    if (event.replicaset_uuid) {
        instance.replicaset_uuid = event.replicaset_uuid;
    }
    if (event.current_state) {
        instance.current_state = event.current_state;
    }
    if (event.address) {
        instance.address = event.address;
    }
}

void Topology::apply_replicaset(const ReplicasetEvent &event) {
    if (event.replicaset_uuid.empty()) {
        invalid("replicaset event: replicaset uuid is empty");
    }
    require_tier_name(event.tier, "replicaset " + event.replicaset_uuid);

    if (event.op == Op::Delete) {
        auto it = replicasets_.find(event.replicaset_uuid);
        if (it == replicasets_.end()) {
            return;
        }
        std::optional<std::string> tier = it->second.tier;
        replicasets_.erase(it);
        auto tier_map = tier ? buckets_.find(*tier) : buckets_.end();
        if (tier_map != buckets_.end()) {
            // The tier's buckets move to the remaining replicasets in a way we cannot predict.
            tier_map->second.clear();
        }
        return;
    }

    auto existing = replicasets_.find(event.replicaset_uuid);
    Replicaset *replicaset = nullptr;
    if (existing == replicasets_.end()) {
        bool tier_already_known = false;
        if (event.tier) {
            for (const auto &[uuid, other] : replicasets_) {
                if (other.tier == event.tier) {
                    tier_already_known = true;
                    break;
                }
            }
        }
        replicaset = &replicasets_[event.replicaset_uuid];
        replicaset->uuid = event.replicaset_uuid;
        if (event.tier) {
            replicaset->tier = event.tier;
            if (tier_already_known) {
                // A replicaset joins a tier: its buckets are about to be redistributed.
                buckets_[*event.tier].clear();
            } else {
                buckets_.try_emplace(*event.tier);
            }
        }
    } else {
        // Known replicaset (e.g. master switched): the bucket map is not touched.
        replicaset = &existing->second;
        if (event.tier) {
            replicaset->tier = event.tier;
        }
    }
    if (event.name) {
        replicaset->name = event.name;
    }
    if (event.current_master_uuid) {
        replicaset->current_master_uuid = event.current_master_uuid;
    }
}

bool Topology::overlaps(const TierBucketMap &map, const BucketEvent &event) const {
    // Only two kinds of known ranges can intersect [start, end]: the one just before `start`
    // when it reaches `start`, and those starting within [start, end]. An exact redelivery (same
    // bounds, same replicaset) is not an overlap: every poll redelivers the whole tier.
    auto first_within = map.lower_bound(event.start);
    if (first_within != map.begin()) {
        const BucketRange &before = std::prev(first_within)->second;
        if (before.end >= event.start) {
            return true;
        }
    }
    auto past_end = map.upper_bound(event.end);
    for (auto it = first_within; it != past_end; ++it) {
        const BucketRange &known = it->second;
        if (known.start != event.start || known.end != event.end ||
            known.replicaset_uuid != event.current_replicaset_uuid) {
            return true;
        }
    }
    return false;
}

void Topology::apply_bucket(const BucketEvent &event) {
    const std::string what = "bucket event for tier \"" + event.tier + "\" range [" +
                             std::to_string(event.start) + ", " + std::to_string(event.end) + "]";
    if (event.tier.empty()) {
        invalid(what + ": tier name is empty");
    }
    if (event.start == 0) {
        invalid(what + ": bucket ids start at 1");
    }
    if (event.op == Op::Delete) {
        auto tier_map = buckets_.find(event.tier);
        if (tier_map != buckets_.end()) {
            tier_map->second.erase(event.start);
        }
        return;
    }
    if (event.start > event.end) {
        invalid(what + ": start is greater than end");
    }
    if (event.current_replicaset_uuid.empty()) {
        invalid(what + ": replicaset uuid is empty");
    }
    auto tier = tiers_.find(event.tier);
    if (tier != tiers_.end() && event.end > tier->second) {
        invalid(what + ": end is beyond the tier's bucket_count " + std::to_string(tier->second));
    }

    TierBucketMap &map = buckets_[event.tier];
    if (overlaps(map, event)) {
        // The map can no longer be trusted: forget it and rebuild from the following events.
        map.clear();
    }
    BucketRange &range = map[event.start];
    range.start = event.start;
    range.end = event.end;
    range.replicaset_uuid = event.current_replicaset_uuid;
    range.state = event.state;
}

void Topology::apply_tier(const TierEvent &event) {
    if (event.name.empty()) {
        invalid("tier event: tier name is empty");
    }
    // Tiers are static configuration: the first bucket_count seen stays.
    tiers_.try_emplace(event.name, event.bucket_count);
    buckets_.try_emplace(event.name);
}

const BucketRange *Topology::find_bucket_range(std::string_view tier, uint32_t bucket_id) const {
    auto tier_map = buckets_.find(tier);
    if (tier_map == buckets_.end()) {
        return nullptr;
    }
    const TierBucketMap &map = tier_map->second;
    // Ranges never overlap, so the last one starting at or before bucket_id is the only candidate.
    auto after = map.upper_bound(bucket_id);
    if (after == map.begin()) {
        return nullptr;
    }
    const BucketRange &range = std::prev(after)->second;
    return bucket_id <= range.end ? &range : nullptr;
}

const Instance *Topology::find_bucket_master(std::string_view tier, uint32_t bucket_id) const {
    const BucketRange *range = find_bucket_range(tier, bucket_id);
    if (range == nullptr) {
        return nullptr;
    }
    auto replicaset = replicasets_.find(range->replicaset_uuid);
    if (replicaset == replicasets_.end()) {
        return nullptr;
    }
    const std::optional<std::string> &master = replicaset->second.current_master_uuid;
    if (!master || master->empty()) {
        return nullptr;
    }
    auto instance = instances_.find(*master);
    return instance == instances_.end() ? nullptr : &instance->second;
}

std::vector<const Instance *> Topology::bucket_replicas(std::string_view tier,
                                                        uint32_t bucket_id) const {
    std::vector<const Instance *> result;
    const BucketRange *range = find_bucket_range(tier, bucket_id);
    if (range == nullptr) {
        return result;
    }
    const Instance *master = find_bucket_master(tier, bucket_id);
    if (master != nullptr) {
        result.push_back(master);
    }
    // instances_ is ordered by uuid, so the rest come out sorted.
    for (const auto &[uuid, instance] : instances_) {
        if (&instance != master && instance.replicaset_uuid == range->replicaset_uuid) {
            result.push_back(&instance);
        }
    }
    return result;
}

std::set<std::string> Topology::online_addresses() const {
    std::set<std::string> result;
    for (const auto &[uuid, instance] : instances_) {
        if (instance.is_online() && instance.address && !instance.address->empty()) {
            result.insert(*instance.address);
        }
    }
    return result;
}

std::set<std::string> Topology::known_tiers() const {
    std::set<std::string> result;
    for (const auto &[name, count] : tiers_) {
        result.insert(name);
    }
    return result;
}

}  // namespace picoroute
