// Catalog rows of one poll -> the events that move a topology to the state the rows describe.
#include "core/catalog.h"

#include "core/address.h"
#include "core/errors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <limits>
#include <set>
#include <unordered_map>

namespace picoroute {

namespace {

using nlohmann::json;

[[noreturn]] void bad_catalog(const std::string &message, std::string hint = {}) {
    throw Error(ErrorKind::InvalidCatalog, message, std::move(hint));
}

bool is_wildcard_host(const std::string &host) {
    return host.empty() || host == "0.0.0.0" || host == "::" || host == "[::]" || host == "*";
}

// An advertised pgproto address, with Picodata's default port when it names none.
std::string pgproto_address(const std::string &host, const std::string &port) {
    return join_host_port(host, port.empty() ? kDefaultPgprotoPort : port);
}

bool wildcard(const HostPort &hp) {
    return is_wildcard_host(hp.host) || (hp.bracketed && hp.host == "::");
}

// A non-negative integer that fits uint32_t, as text.
std::optional<uint32_t> parse_u32(const std::string &text) {
    if (text.empty() || text.size() > 10) {
        return std::nullopt;
    }
    uint64_t value = 0;
    for (char c : text) {
        if (!std::isdigit(static_cast<unsigned char>(c))) {
            return std::nullopt;
        }
        value = value * 10 + static_cast<uint64_t>(c - '0');
    }
    if (value > std::numeric_limits<uint32_t>::max()) {
        return std::nullopt;
    }
    return static_cast<uint32_t>(value);
}

// A JSON number that is an integer in 1..UINT32_MAX.
std::optional<uint32_t> json_bucket_id(const json &value) {
    if (value.is_number_unsigned()) {
        uint64_t v = value.get<uint64_t>();
        if (v <= std::numeric_limits<uint32_t>::max()) {
            return static_cast<uint32_t>(v);
        }
    } else if (value.is_number_integer()) {
        int64_t v = value.get<int64_t>();
        if (v >= 0 && v <= static_cast<int64_t>(std::numeric_limits<uint32_t>::max())) {
            return static_cast<uint32_t>(v);
        }
    }
    return std::nullopt;
}

struct ParsedInstance {
    std::string uuid;
    Field name, raft_id, replicaset_uuid, picodata_version;
    std::string state;
};

std::string row_label(const char *table, size_t index) {
    return std::string(table) + " row " + std::to_string(index);
}

}  // namespace

std::string parse_instance_state(const std::string &text) {
    // Picodata sends ["Online", 1] (variant, incarnation). A bare variant is accepted too, either
    // as a JSON string ("Online") or as plain text (Online), so a simplified catalog still works.
    json doc = json::parse(text, nullptr, false);
    std::string variant;
    if (doc.is_discarded()) {
        bool plain = !text.empty() && std::all_of(text.begin(), text.end(), [](char c) {
            return std::isalpha(static_cast<unsigned char>(c)) != 0;
        });
        if (!plain) {
            bad_catalog("current_state '" + text + "' is not valid json",
                        "expected a pair such as [\"Online\", 1]");
        }
        variant = text;
    } else if (doc.is_string()) {
        variant = doc.get<std::string>();
    } else if (doc.is_array() && !doc.empty() && doc.size() <= 2 && doc[0].is_string()) {
        variant = doc[0].get<std::string>();
    } else {
        bad_catalog("current_state '" + text + "' is not a [variant, incarnation] pair",
                    "expected a pair such as [\"Online\", 1]");
    }
    if (variant.empty()) {
        bad_catalog("current_state '" + text + "' has an empty variant");
    }
    return variant;
}

std::string resolve_pgproto_address(const Field &pgproto, const Field &iproto) {
    if (!pgproto) {
        return "";
    }
    std::optional<HostPort> pg = split_address(*pgproto);
    if (!pg) {
        return "";
    }
    if (!wildcard(*pg)) {
        return pgproto_address(pg->host, pg->port);
    }
    if (!iproto) {
        return "";
    }
    std::optional<HostPort> ip = split_address(*iproto);
    if (!ip || wildcard(*ip)) {
        return "";
    }
    return pgproto_address(ip->host, pg->port);
}

std::vector<BucketEvent> parse_bucket_json(const std::string &tier, const std::string &text) {
    const std::string where = "_pico_bucket('" + tier + "')";
    json doc = json::parse(text, nullptr, false);
    if (doc.is_discarded()) {
        bad_catalog(where + " returned malformed json");
    }
    if (!doc.is_array()) {
        bad_catalog(where + " returned json that is not an array");
    }
    std::vector<BucketEvent> events;
    events.reserve(doc.size());
    for (size_t i = 0; i < doc.size(); ++i) {
        const json &item = doc[i];
        const std::string elem = where + " element " + std::to_string(i);
        if (!item.is_object()) {
            bad_catalog(elem + " is not an object");
        }
        auto number = [&](const char *key) {
            auto it = item.find(key);
            if (it == item.end()) {
                bad_catalog(elem + ": key \"" + key + "\" is missing");
            }
            std::optional<uint32_t> value = json_bucket_id(*it);
            if (!value) {
                bad_catalog(elem + ": key \"" + key + "\" must be a non-negative integer");
            }
            return *value;
        };
        BucketEvent event;
        event.op = Op::Replace;
        event.tier = tier;
        event.start = number("bucket_id_start");
        event.end = number("bucket_id_end");
        auto uuid = item.find("current_replicaset_uuid");
        if (uuid == item.end() || !uuid->is_string() || uuid->get<std::string>().empty()) {
            bad_catalog(elem + ": key \"current_replicaset_uuid\" must be a non-empty string");
        }
        event.current_replicaset_uuid = uuid->get<std::string>();
        auto state = item.find("state");
        if (state == item.end()) {
            event.state = "active";
        } else if (state->is_string()) {
            event.state = state->get<std::string>();
        } else {
            bad_catalog(elem + ": key \"state\" must be a string");
        }
        if (event.start < 1 || event.start > event.end) {
            bad_catalog(elem + ": bad range [" + std::to_string(event.start) + ", " +
                        std::to_string(event.end) + "]");
        }
        events.push_back(std::move(event));
    }
    std::sort(events.begin(), events.end(),
              [](const BucketEvent &a, const BucketEvent &b) { return a.start < b.start; });
    for (size_t i = 1; i < events.size(); ++i) {
        if (events[i].start <= events[i - 1].end) {
            bad_catalog(where + ": ranges [" + std::to_string(events[i - 1].start) + ", " +
                        std::to_string(events[i - 1].end) + "] and [" +
                        std::to_string(events[i].start) + ", " + std::to_string(events[i].end) +
                        "] overlap");
        }
    }
    return events;
}

namespace {

// The pgproto and iproto addresses of each peer, by raft_id.
struct Peer {
    Field pgproto, iproto;
};
using Peers = std::unordered_map<std::string, Peer>;

Peers peer_addresses(const CatalogRows &rows) {
    Peers peers;
    for (const PeerAddressRow &row : rows.peer_addresses) {
        if (!row.raft_id || !row.address || !row.connection_type) {
            continue;
        }
        if (*row.connection_type == "pgproto") {
            peers[*row.raft_id].pgproto = row.address;
        } else if (*row.connection_type == "iproto") {
            peers[*row.raft_id].iproto = row.address;
        }
    }
    return peers;
}

// The instances that are not Expelled, by uuid, and the uuid of every name; Expelled instances
// count as absent but still resolve a master name as a last resort.
struct ParsedInstances {
    std::map<std::string, ParsedInstance> by_uuid;
    std::unordered_map<std::string, std::string> uuid_by_name, expelled_uuid_by_name;

    // The uuid of the instance named `name`, "" when none is known.
    std::string uuid_of(const Field &name) const {
        if (!name) {
            return "";
        }
        if (auto found = uuid_by_name.find(*name); found != uuid_by_name.end()) {
            return found->second;
        }
        auto gone = expelled_uuid_by_name.find(*name);
        return gone != expelled_uuid_by_name.end() ? gone->second : "";
    }
};

ParsedInstance parse_instance(const InstanceRow &row, size_t i) {
    if (!row.uuid || row.uuid->empty()) {
        bad_catalog(row_label("_pico_instance", i) + ": uuid is null or empty");
    }
    const std::string label = "_pico_instance: instance " + *row.uuid;
    if (!row.current_state) {
        bad_catalog(label + ": current_state is null");
    }
    ParsedInstance parsed;
    try {
        parsed.state = parse_instance_state(*row.current_state);
    } catch (const Error &error) {
        bad_catalog(label + ": " + error.what(), error.hint());
    }
    parsed.uuid = *row.uuid;
    parsed.name = row.name;
    parsed.raft_id = row.raft_id;
    parsed.replicaset_uuid = row.replicaset_uuid;
    if (row.picodata_version && !row.picodata_version->empty()) {
        parsed.picodata_version = row.picodata_version;
    }
    return parsed;
}

ParsedInstances parse_instances(const CatalogRows &rows) {
    ParsedInstances out;
    for (size_t i = 0; i < rows.instances.size(); ++i) {
        ParsedInstance parsed = parse_instance(rows.instances[i], i);
        if (parsed.state == "Expelled") {
            if (parsed.name) {
                out.expelled_uuid_by_name.emplace(*parsed.name, parsed.uuid);
            }
            continue;
        }
        if (parsed.name) {
            out.uuid_by_name[*parsed.name] = parsed.uuid;
        }
        out.by_uuid[parsed.uuid] = std::move(parsed);
    }
    return out;
}

// Replicasets that are not expelled, keyed by uuid so the events come out in a stable order.
std::map<std::string, const ReplicasetRow *> parse_replicasets(const CatalogRows &rows) {
    std::map<std::string, const ReplicasetRow *> replicasets;
    for (size_t i = 0; i < rows.replicasets.size(); ++i) {
        const ReplicasetRow &row = rows.replicasets[i];
        if (!row.uuid || row.uuid->empty()) {
            bad_catalog(row_label("_pico_replicaset", i) + ": uuid is null or empty");
        }
        if (row.tier && row.tier->empty()) {
            bad_catalog("_pico_replicaset: replicaset " + *row.uuid + ": tier is empty");
        }
        if (row.state && *row.state == "expelled") {
            continue;
        }
        replicasets[*row.uuid] = &row;
    }
    return replicasets;
}

// bucket_count of each tier.
std::map<std::string, uint32_t> parse_tiers(const CatalogRows &rows) {
    std::map<std::string, uint32_t> tiers;
    for (size_t i = 0; i < rows.tiers.size(); ++i) {
        const TierRow &row = rows.tiers[i];
        if (!row.name || row.name->empty()) {
            bad_catalog(row_label("_pico_tier", i) + ": name is null or empty");
        }
        std::optional<uint32_t> count =
            row.bucket_count ? parse_u32(*row.bucket_count) : std::nullopt;
        if (!count) {
            bad_catalog("_pico_tier: tier " + *row.name + ": bucket_count '" +
                        row.bucket_count.value_or("NULL") +
                        "' is not a non-negative integer that fits 32 bits");
        }
        tiers.emplace(*row.name, *count);
    }
    return tiers;
}

// _pico_tier.is_default of the tier `name` as a boolean's text ("t", "true"); std::nullopt when
// the column is absent or null.
std::optional<bool> tier_is_default(const CatalogRows &rows, const std::string &name) {
    for (const TierRow &row : rows.tiers) {
        if (row.name && *row.name == name && row.is_default) {
            const std::string &v = *row.is_default;
            if (v == "t" || v == "true" || v == "1") {
                return true;
            }
            if (v == "f" || v == "false" || v == "0") {
                return false;
            }
        }
    }
    return std::nullopt;
}

// The bucket ranges listed for each tier that was read, parsed before anything is emitted so that
// a bad answer produces no events. A range beyond the tier's bucket_count (the known count, unless
// it is 0: a tier without buckets yet takes the listed count) is refused.
std::map<std::string, std::vector<BucketEvent>> parse_bucket_listings(
    const CatalogRows &rows, const Topology &current,
    const std::map<std::string, uint32_t> &tiers) {
    std::map<std::string, std::vector<BucketEvent>> bucket_events;
    for (const auto &[tier, text] : rows.bucket_json) {
        std::vector<BucketEvent> parsed = parse_bucket_json(tier, text);
        std::optional<uint32_t> count;
        if (auto known = current.tiers().find(tier);
            known != current.tiers().end() && known->second != 0) {
            count = known->second;
        } else if (auto listed = tiers.find(tier); listed != tiers.end()) {
            count = listed->second;
        }
        if (count && !parsed.empty() && parsed.back().end > *count) {
            bad_catalog("_pico_bucket('" + tier + "'): range [" +
                        std::to_string(parsed.back().start) + ", " +
                        std::to_string(parsed.back().end) + "] is beyond bucket_count " +
                        std::to_string(*count));
        }
        bucket_events[tier] = std::move(parsed);
    }
    return bucket_events;
}

// Deletes of the known replicasets that are gone, then a Replace of every listed one.
void add_replicaset_events(const Topology &current,
                           const std::map<std::string, const ReplicasetRow *> &replicasets,
                           const ParsedInstances &instances, std::vector<Event> &events) {
    for (const auto &[uuid, replicaset] : current.replicasets()) {
        if (replicasets.count(uuid) == 0) {
            events.push_back(
                ReplicasetEvent{Op::Delete, uuid, std::nullopt, std::nullopt, std::nullopt});
        }
    }
    for (const auto &[uuid, row] : replicasets) {
        events.push_back(ReplicasetEvent{Op::Replace, uuid, row->tier,
                                         instances.uuid_of(row->current_master_name), row->name});
    }
}

// The pgproto address of an instance from its peer addresses, "" when none is known. The map
// decides where credentials go: an address that is not a TCP host:port is dropped (the instance
// stays, with no address) and reported in `warnings`.
std::string instance_address(const std::string &uuid, const ParsedInstance &parsed,
                             const Peers &peers, std::vector<std::string> *warnings) {
    std::string address;
    if (parsed.raft_id) {
        auto peer = peers.find(*parsed.raft_id);
        if (peer != peers.end()) {
            address = resolve_pgproto_address(peer->second.pgproto, peer->second.iproto);
        }
    }
    std::string why;
    if (!address.empty() && !parse_tcp_address(address, &why)) {
        if (warnings != nullptr) {
            warnings->push_back("_pico_peer_address: address \"" + utf8_truncate(address, 100) +
                                "\" of instance " + uuid + " rejected: " + why +
                                " (picoroute accepts only TCP addresses host:port)");
        }
        address.clear();
    }
    return address;
}

// Deletes of the known instances that are gone, then a Replace of every listed one.
void add_instance_events(const Topology &current, const ParsedInstances &instances,
                         const Peers &peers, std::vector<std::string> *warnings,
                         std::vector<Event> &events) {
    for (const auto &[uuid, instance] : current.instances()) {
        if (instances.by_uuid.count(uuid) == 0) {
            InstanceEvent event;
            event.op = Op::Delete;
            event.instance_uuid = uuid;
            events.push_back(std::move(event));
        }
    }
    for (const auto &[uuid, parsed] : instances.by_uuid) {
        InstanceEvent event;
        event.op = Op::Replace;
        event.instance_uuid = uuid;
        event.name = parsed.name;
        event.replicaset_uuid = parsed.replicaset_uuid;
        event.current_state = parsed.state;
        event.address = instance_address(uuid, parsed, peers, warnings);
        event.picodata_version = parsed.picodata_version;
        events.push_back(std::move(event));
    }
}

// A tier's listing is complete: every known range that the listing does not hold exactly is
// deleted first, so that the listed ranges that follow never overlap a known one (an overlap
// would clear the tier's map, dropping the ranges applied before it) and the map ends up holding
// exactly the listing.
void add_bucket_events(const Topology &current, const std::string &tier,
                       std::vector<BucketEvent> &listing, std::vector<Event> &events) {
    std::map<uint32_t, const BucketEvent *> listed;
    for (const BucketEvent &event : listing) {
        listed[event.start] = &event;
    }
    if (auto known = current.buckets().find(tier); known != current.buckets().end()) {
        // Ranges whose start is gone first, then those the listing changes.
        for (bool start_gone : {true, false}) {
            for (const auto &[start, range] : known->second) {
                auto same = listed.find(start);
                if ((same == listed.end()) != start_gone) {
                    continue;
                }
                bool kept = same != listed.end() && same->second->end == range.end &&
                            same->second->current_replicaset_uuid == range.replicaset_uuid;
                if (!kept) {
                    events.push_back(
                        BucketEvent{Op::Delete, tier, "", start, range.end, range.replicaset_uuid});
                }
            }
        }
    }
    for (BucketEvent &event : listing) {
        events.push_back(std::move(event));
    }
}

}  // namespace

std::vector<Event> events_from_catalog(const CatalogRows &rows, const Topology &current,
                                       std::vector<std::string> *warnings) {
    // Every row is checked before any event is produced.
    Peers peers = peer_addresses(rows);
    ParsedInstances instances = parse_instances(rows);
    std::map<std::string, const ReplicasetRow *> replicasets = parse_replicasets(rows);
    std::map<std::string, uint32_t> tiers = parse_tiers(rows);
    std::map<std::string, std::vector<BucketEvent>> listings =
        parse_bucket_listings(rows, current, tiers);

    std::vector<Event> events;
    add_replicaset_events(current, replicasets, instances, events);
    add_instance_events(current, instances, peers, warnings, events);
    for (const auto &[name, count] : tiers) {
        events.push_back(TierEvent{name, count, tier_is_default(rows, name)});
    }
    for (auto &[tier, listing] : listings) {
        add_bucket_events(current, tier, listing, events);
    }
    return events;
}

}  // namespace picoroute
