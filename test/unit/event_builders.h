// Short constructors of topology events for the unit tests.
#pragma once

#include "core/events.h"

#include <cstdint>
#include <optional>
#include <string>

namespace picoroute::testing {

inline TierEvent tier(const std::string &name, uint32_t bucket_count) {
    TierEvent e;
    e.name = name;
    e.bucket_count = bucket_count;
    return e;
}

inline BucketEvent bucket(const std::string &tier_name, uint32_t start, uint32_t end,
                          const std::string &replicaset, const std::string &state = "active") {
    BucketEvent e;
    e.op = Op::Replace;
    e.tier = tier_name;
    e.state = state;
    e.start = start;
    e.end = end;
    e.current_replicaset_uuid = replicaset;
    return e;
}

inline BucketEvent bucket_delete(const std::string &tier_name, uint32_t start) {
    BucketEvent e;
    e.op = Op::Delete;
    e.tier = tier_name;
    e.start = start;
    e.end = start;
    return e;
}

inline ReplicasetEvent replicaset(const std::string &uuid, std::optional<std::string> tier_name,
                                  std::optional<std::string> master = std::nullopt,
                                  std::optional<std::string> name = std::nullopt) {
    ReplicasetEvent e;
    e.op = Op::Replace;
    e.replicaset_uuid = uuid;
    e.tier = std::move(tier_name);
    e.current_master_uuid = std::move(master);
    e.name = std::move(name);
    return e;
}

inline ReplicasetEvent replicaset_delete(const std::string &uuid) {
    ReplicasetEvent e;
    e.op = Op::Delete;
    e.replicaset_uuid = uuid;
    return e;
}

inline InstanceEvent instance(const std::string &uuid, std::optional<std::string> replicaset_uuid,
                              std::optional<std::string> state = std::string("Online"),
                              std::optional<std::string> address = std::nullopt,
                              std::optional<std::string> name = std::nullopt) {
    InstanceEvent e;
    e.op = Op::Replace;
    e.instance_uuid = uuid;
    e.replicaset_uuid = std::move(replicaset_uuid);
    e.current_state = std::move(state);
    e.address = std::move(address);
    e.name = std::move(name);
    return e;
}

}  // namespace picoroute::testing
