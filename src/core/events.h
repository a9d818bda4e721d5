// Topology events: the shape of Picodata's topology notifications (facts, section 5).
// A field left empty (std::nullopt) means "unchanged".
#pragma once
#include "core/firewall.h"

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace picoroute {

enum class Op { Replace, Delete };

struct ReplicasetEvent {
    Op op = Op::Replace;
    std::string replicaset_uuid;
    std::optional<std::string> tier;
    std::optional<std::string> current_master_uuid;
    std::optional<std::string> name;  // not in notifications; filled by the catalog source
};

struct InstanceEvent {
    Op op = Op::Replace;
    std::string instance_uuid;
    std::optional<std::string> replicaset_uuid;
    std::optional<std::string> current_state;  // e.g. "Online", "Offline"
    std::optional<std::string> address;        // pgproto address "host:port"
    std::optional<std::string> name;           // not in notifications; filled by the catalog source
    // The release the instance runs as it reports it (_pico_instance.picodata_version, e.g.
    // "26.1.6"); filled by the catalog source, optional in pushed events.
    std::optional<std::string> picodata_version;
};

// A bucket range [start, end] (inclusive) of a tier owned by a replicaset. Notifications only send
// Replace; the catalog source sends Delete for a range the rows no longer contain, which removes
// the known range of that tier starting at `start`.
struct BucketEvent {
    Op op = Op::Replace;
    std::string tier;
    std::string state;  // vshard state of the range, e.g. "active"
    uint32_t start = 0;
    uint32_t end = 0;
    std::string current_replicaset_uuid;
};

// Not a Picodata notification: tiers are static configuration, read once (seed 002).
struct TierEvent {
    std::string name;
    uint32_t bucket_count = 0;
    // _pico_tier.is_default: the tier a table goes to when its DDL names none; std::nullopt when
    // not said (a catalog without the column, a pushed event).
    std::optional<bool> is_default;
};

using Event = std::variant<ReplicasetEvent, InstanceEvent, BucketEvent, TierEvent>;

// A one-line human description, for logs and error messages.
std::string describe(const Event &event);

}  // namespace picoroute
