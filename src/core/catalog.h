// Picodata catalog rows (facts, section 1) -> topology events. One poll reads the tables below by
// column name; this module turns the rows into the events that move the current topology to the
// state the rows describe, in the order replicaset -> instance -> bucket (deletes of each kind
// first), with a delete event for every known entry the rows no longer contain.
#pragma once
#include "core/firewall.h"

#include "core/events.h"
#include "core/topology.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace picoroute {

// A text column as libpq returns it; std::nullopt is SQL NULL.
using Field = std::optional<std::string>;

// The queries a poll runs, columns selected by name (columns were added between releases). Every
// column of _pico_instance is asked for so that one a release lacks (picodata_version) comes back
// absent instead of failing the poll; the answer is read by column name.
inline constexpr const char *kInstanceQuery = "SELECT * FROM _pico_instance";
inline constexpr const char *kPeerAddressQuery =
    "SELECT raft_id, address, connection_type FROM _pico_peer_address";
inline constexpr const char *kReplicasetQuery =
    "SELECT name, uuid, current_master_name, tier, state FROM _pico_replicaset";
inline constexpr const char *kTierQuery = "SELECT * FROM _pico_tier";  // is_default: 25.4.1+
inline constexpr const char *kBucketQuery = "SELECT _pico_bucket($1)";

struct InstanceRow {
    Field name, uuid, raft_id, replicaset_uuid, current_state, tier;
    Field picodata_version;  // null when the catalog has no such column
};
struct PeerAddressRow {
    Field raft_id, address, connection_type;
};
struct ReplicasetRow {
    Field name, uuid, current_master_name, tier, state;
};
struct TierRow {
    Field name, bucket_count;
    Field is_default;  // "t"/"true" for the default tier; null when the catalog has no such column
};

struct CatalogRows {
    std::vector<InstanceRow> instances;
    std::vector<PeerAddressRow> peer_addresses;
    std::vector<ReplicasetRow> replicasets;
    std::vector<TierRow> tiers;
    // tier -> the json text returned by _pico_bucket(tier). A tier missing here was not read (the
    // call failed or the tier has no buckets): its known ranges are left alone.
    std::map<std::string, std::string> bucket_json;
};

// Parses `current_state` json such as ["Online",1] and returns the variant ("Online").
// Throws Error(InvalidCatalog).
std::string parse_instance_state(const std::string &json);

// Resolves the pgproto address of an instance: a wildcard host (0.0.0.0, ::, [::], *, empty) is
// replaced by the host of the iproto address. Returns "" when no usable address is known.
std::string resolve_pgproto_address(const Field &pgproto, const Field &iproto);

// Parses the json returned by _pico_bucket(tier) into bucket events (op Replace). Throws
// Error(InvalidCatalog) naming the tier for malformed json, missing keys, wrong types, or a range
// with start < 1 or start > end.
std::vector<BucketEvent> parse_bucket_json(const std::string &tier, const std::string &json);

// Rows of one poll -> events against `current`. Instances in state Expelled and replicasets in
// state `expelled` count as absent. `current_master_name` is resolved to the master's uuid through
// the instance rows ("" when the name matches no instance). Throws Error(InvalidCatalog) naming the
// table and the row for a row that cannot be understood (missing uuid, bad state json, non-numeric
// bucket_count, ...); nothing is produced then.
// The bucket events of a tier that was read make its map equal to the listing: known ranges the
// listing does not hold exactly are deleted before the listed ranges are replaced. An instance
// address that is not a TCP host:port (address.h) is dropped and described in `warnings`.
std::vector<Event> events_from_catalog(const CatalogRows &rows, const Topology &current,
                                       std::vector<std::string> *warnings = nullptr);

}  // namespace picoroute
