// The topology model and the event-application algorithm of seeds 000 and 002 (picopyn's
// Topology), reproduced step by step. Every apply_* validates its event before touching any state,
// so a rejected event leaves the topology unchanged.
#include "core/topology.h"

#include "core/address.h"
#include "core/capabilities.h"
#include "core/errors.h"

#include <algorithm>
#include <utility>

namespace picoroute {

bool Instance::operator==(const Instance &other) const {
    return uuid == other.uuid && name == other.name && replicaset_uuid == other.replicaset_uuid &&
           current_state == other.current_state && address == other.address &&
           picodata_version == other.picodata_version;
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
           buckets_ == other.buckets_ && tiers_ == other.tiers_ &&
           default_tier_ == other.default_tier_;
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

// Every way an event can be rejected is a check on the event itself and on the tiers' bucket
// counts, so a batch is validated first (with the counts it would produce) and then applied in
// place: no copy of the topology is needed to make apply_all all-or-nothing.
void Topology::check(const Event &event, TierCounts &counts) {
    std::visit(
        [&counts](const auto &e) {
            using T = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<T, ReplicasetEvent>) {
                if (e.replicaset_uuid.empty()) {
                    invalid("replicaset event: replicaset uuid is empty");
                }
                require_tier_name(e.tier, "replicaset " + e.replicaset_uuid);
            } else if constexpr (std::is_same_v<T, InstanceEvent>) {
                if (e.instance_uuid.empty()) {
                    invalid("instance event: instance uuid is empty");
                }
                // The map decides where credentials go: only a TCP host:port (or "", unknown).
                std::string why;
                if (e.address && !e.address->empty() && !parse_tcp_address(*e.address, &why)) {
                    invalid("instance " + e.instance_uuid + ": address \"" +
                            utf8_truncate(*e.address, 100) + "\" rejected: " + why +
                            " (picoroute accepts only TCP addresses host:port)");
                }
            } else if constexpr (std::is_same_v<T, BucketEvent>) {
                check_bucket(e, counts);
            } else {
                if (e.name.empty()) {
                    invalid("tier event: tier name is empty");
                }
                // The first non-zero count seen stays (see apply_tier).
                auto [it, added] = counts.try_emplace(e.name, e.bucket_count);
                if (!added && it->second == 0) {
                    it->second = e.bucket_count;
                }
            }
        },
        event);
}

void Topology::check_bucket(const BucketEvent &event, const TierCounts &counts) {
    auto what = [&event] {
        return "bucket event for tier \"" + event.tier + "\" range [" +
               std::to_string(event.start) + ", " + std::to_string(event.end) + "]";
    };
    if (event.tier.empty()) {
        invalid(what() + ": tier name is empty");
    }
    if (event.start == 0) {
        invalid(what() + ": bucket ids start at 1");
    }
    if (event.op == Op::Delete) {
        return;
    }
    if (event.start > event.end) {
        invalid(what() + ": start is greater than end");
    }
    if (event.current_replicaset_uuid.empty()) {
        invalid(what() + ": replicaset uuid is empty");
    }
    auto tier = counts.find(event.tier);
    if (tier != counts.end() && event.end > tier->second) {
        invalid(what() + ": end is beyond the tier's bucket_count " + std::to_string(tier->second));
    }
}

bool Topology::apply_checked(const Event &event) {
    return std::visit(
        [this](const auto &e) {
            using T = std::decay_t<decltype(e)>;
            if constexpr (std::is_same_v<T, ReplicasetEvent>) {
                return apply_replicaset(e);
            } else if constexpr (std::is_same_v<T, InstanceEvent>) {
                return apply_instance(e);
            } else if constexpr (std::is_same_v<T, BucketEvent>) {
                return apply_bucket(e);
            } else {
                return apply_tier(e);
            }
        },
        event);
}

void Topology::apply(const Event &event) {
    TierCounts counts = tiers_;
    check(event, counts);
    apply_checked(event);
}

bool Topology::apply_all(const std::vector<Event> &events) {
    return apply_all(events, 0, events.size());
}

bool Topology::apply_all(const std::vector<Event> &events, size_t begin, size_t end) {
    end = std::min(end, events.size());
    TierCounts counts = tiers_;
    for (size_t i = begin; i < end; ++i) {
        try {
            check(events[i], counts);
        } catch (const Error &error) {
            throw Error(
                error.kind(),
                "event " + std::to_string(i) + " (" + describe(events[i]) + "): " + error.what(),
                error.hint());
        }
    }
    bool changed = false;
    for (size_t i = begin; i < end; ++i) {
        changed |= apply_checked(events[i]);
    }
    return changed;
}

void Topology::clear() {
    instances_.clear();
    replicasets_.clear();
    buckets_.clear();
}

namespace {

// Sets `field` to `value` when one is given; true when that changed it.
template <typename T>
bool update(std::optional<T> &field, const std::optional<T> &value) {
    if (!value || field == value) {
        return false;
    }
    field = value;
    return true;
}

}  // namespace

bool Topology::apply_instance(const InstanceEvent &event) {
    if (event.op == Op::Delete) {
        return instances_.erase(event.instance_uuid) > 0;
    }
    auto [it, inserted] = instances_.try_emplace(event.instance_uuid);
    Instance &instance = it->second;
    if (inserted) {
        instance.uuid = event.instance_uuid;
    }
    bool changed = inserted;
    changed |= update(instance.name, event.name);
    changed |= update(instance.replicaset_uuid, event.replicaset_uuid);
    changed |= update(instance.current_state, event.current_state);
    changed |= update(instance.address, event.address);
    changed |= update(instance.picodata_version, event.picodata_version);
    return changed;
}

bool Topology::apply_replicaset(const ReplicasetEvent &event) {
    if (event.op == Op::Delete) {
        auto it = replicasets_.find(event.replicaset_uuid);
        if (it == replicasets_.end()) {
            return false;
        }
        std::optional<std::string> tier = it->second.tier;
        replicasets_.erase(it);
        auto tier_map = tier ? buckets_.find(*tier) : buckets_.end();
        if (tier_map != buckets_.end()) {
            // The tier's buckets move to the remaining replicasets in a way we cannot predict.
            tier_map->second.clear();
        }
        return true;
    }

    auto existing = replicasets_.find(event.replicaset_uuid);
    Replicaset *replicaset = nullptr;
    bool changed = false;
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
        changed = true;
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
        changed |= update(replicaset->tier, event.tier);
    }
    changed |= update(replicaset->name, event.name);
    changed |= update(replicaset->current_master_uuid, event.current_master_uuid);
    return changed;
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

bool Topology::apply_bucket(const BucketEvent &event) {
    if (event.op == Op::Delete) {
        auto tier_map = buckets_.find(event.tier);
        return tier_map != buckets_.end() && tier_map->second.erase(event.start) > 0;
    }
    auto [tier_map, created] = buckets_.try_emplace(event.tier);
    TierBucketMap &map = tier_map->second;
    bool changed = created;
    if (overlaps(map, event)) {
        // The map can no longer be trusted: forget it and rebuild from the following events.
        map.clear();
        changed = true;
    }
    auto [it, inserted] = map.try_emplace(event.start);
    BucketRange &range = it->second;
    if (inserted || range.end != event.end ||
        range.replicaset_uuid != event.current_replicaset_uuid || range.state != event.state) {
        range.start = event.start;
        range.end = event.end;
        range.replicaset_uuid = event.current_replicaset_uuid;
        range.state = event.state;
        changed = true;
    }
    return changed;
}

bool Topology::apply_tier(const TierEvent &event) {
    // Tiers are static configuration: the first bucket_count seen stays. A tier first listed with
    // bucket_count 0 (it held no sharded data yet) takes the count it is listed with later.
    auto [tier, added] = tiers_.try_emplace(event.name, event.bucket_count);
    if (!added && tier->second == 0 && event.bucket_count != 0) {
        tier->second = event.bucket_count;
        added = true;
    }
    added |= buckets_.try_emplace(event.name).second;
    if (event.is_default.value_or(false) && default_tier_ != event.name) {
        default_tier_ = event.name;
        added = true;
    } else if (!event.is_default.value_or(true) && default_tier_ == event.name) {
        default_tier_.reset();
        added = true;
    }
    return added;
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

std::optional<std::string> Topology::cluster_version() const {
    std::vector<std::string> versions;
    for (const auto &[uuid, instance] : instances_) {
        if (instance.is_online() && instance.picodata_version) {
            versions.push_back(*instance.picodata_version);
        }
    }
    return caps::lowest_version(versions);
}

}  // namespace picoroute
