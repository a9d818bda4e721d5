// Keys and rows grouped by the instance that owns their bucket (see grouping.h).
#include "core/routing/grouping.h"

#include <algorithm>
#include <map>
#include <string>

namespace picoroute::routing {

std::vector<Group> group_by_owner(int n,
                                  const std::function<std::optional<uint32_t>(int)> &bucket_of,
                                  const OwnerLookups &lookups) {
    // By target address; a coordinator's members apart, after the owner's group at its address.
    std::map<std::string, Group> groups;
    std::optional<Target> coordinator;
    for (int i = 0; i < n; i++) {
        std::optional<uint32_t> bucket = bucket_of(i);
        Target target;
        std::string key;
        if (!bucket || !lookups.owner(*bucket, &target)) {
            if (!coordinator) {
                coordinator = lookups.coordinator();
                coordinator->sent = Sent::Coordinator;
            }
            target = *coordinator;
            key = target.address + '\x01';
        } else {
            key = target.address;
        }
        auto [it, inserted] = groups.emplace(key, Group{target, {}});
        it->second.members.push_back(i);
        if (bucket)
            it->second.target.buckets.push_back(*bucket);
    }
    std::vector<Group> out;
    out.reserve(groups.size());
    for (auto &[key, group] : groups) {
        std::vector<uint32_t> &buckets = group.target.buckets;
        std::sort(buckets.begin(), buckets.end());
        buckets.erase(std::unique(buckets.begin(), buckets.end()), buckets.end());
        if (group.target.sent != Sent::Coordinator)
            group.target.sent = group.members.size() > 1 ? Sent::KeyBatch : Sent::RoutedByKey;
        out.push_back(std::move(group));
    }
    return out;
}

Target member_target(const Group &group) {
    Target target = group.target;
    if (target.sent != Sent::Coordinator)
        target.sent = Sent::RoutedByKey;
    return target;
}

}  // namespace picoroute::routing
