// Where one routed statement goes, as a pure decision: a global table to one coordinator, the
// product of the sharding-key values to the owners of their buckets, a statement without a key to
// one coordinator or to every master (scatter 'masters', only where Picodata restricts a statement
// by bucket_id), with the text EXPLAIN shows, how each target is reached (Sent) and which failures
// are sent again (Retry). The topology lookups are given by the caller (src/pg/lookup.h passes
// the session's, which raise the errors), so the decision itself needs no map and no server.
#pragma once
#include "core/firewall.h"
#include "core/routing/target.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace picoroute::routing {

// Above this many combinations of key values, a statement is not routed by its key (it goes out
// as a statement without a key).
inline constexpr size_t kMaxKeyCombinations = 4096;

// The sharding-key values of one execution, column by column in hashing order.
struct KeyValues {
    std::vector<size_t> counts;  // values per key column (0: no row can match)
    // The encoded bytes (core/bucket_hash.h KeyEncoder) of value `index` of key column `column`.
    // Called at most once per value, only for the values a bucket is computed from, in the order
    // of the product (first column slowest). May throw (the glue's conversion errors).
    std::function<std::string(size_t column, size_t index)> encode;
};

// Every value of every column as already encoded bytes.
KeyValues encoded_key_values(std::vector<std::vector<std::string>> columns);

struct StatementInfo {
    bool global = false;  // distribution 'global'
    bool write = false;
    ReadPref read_pref = ReadPref::Leader;  // the server's; writes always go to masters
    bool scatter_masters = false;           // server option scatter 'masters'
    bool prune_by_bucket_id = false;        // the version restricts a statement by bucket_id
    std::string tier;                       // its name, for the description
    uint32_t bucket_count = 0;              // of the tier
    std::optional<KeyValues> keys;          // when the clauses fix every key column
    // The OR-of-AND chains Picodata expands the statement's own WHERE clause into (1: none, or a
    // conjunction of simple terms), before any bucket filter.
    size_t where_chains = 1;
    // Whether anyone will read the description: false leaves it empty for a keyed statement or
    // a global table (the point statements), with the same targets.
    bool describe = true;
    // Picodata hashes these key values differently from picoroute (the route check,
    // core/route_check.h): a keyed statement goes through a coordinator, which routes it by its
    // own hashing, instead of to the owner of picoroute's bucket.
    bool hashing_disagrees = false;
};

// The topology lookups of the decision (each may throw when the map cannot answer).
struct StatementLookups {
    std::function<Target(ReadPref pref, bool write)> spread;  // routing::spread_target
    std::function<std::vector<Target>()> masters;             // routing::master_targets, Ok
    // routing::group_buckets, with the unknown buckets on a coordinator.
    std::function<std::vector<Target>(const std::set<uint32_t> &buckets, ReadPref pref)> group;
};

struct StatementRoute {
    std::vector<Target> targets;  // none when no row can match; each says how it is reached (sent)
    bool keyless = true;          // sent without a sharding key (scatter, global table)
    Retry retry = Retry::Read;
    std::string description;  // what EXPLAIN and errors show (see StatementInfo::describe)
};

// The statement's targets. A statement that fixes the sharding key carries no bucket filter
// (Picodata routes it by its key, and a filter would turn a bucket computed differently into an
// empty answer): the owner of its buckets gets it, and when they have several owners, the first of
// them gets it once and routes it on. Only a 'masters' scatter restricts each master to its ranges.
// A key Picodata hashes differently (hashing_disagrees) goes to one coordinator, as keyed.
StatementRoute route_statement(const StatementInfo &statement, const StatementLookups &lookups);

// The OR-of-AND chains of "(<where>) AND bucket_id IN (<the target's buckets>)" as Picodata expands
// it (an IN list is rewritten as ORs): `where_chains` times the number of buckets (the target's
// buckets, or every bucket of its ranges), `where_chains` when it has none. Saturates at SIZE_MAX.
size_t dnf_chains(size_t where_chains, const Target &target);

// The masters of a 'masters' scatter, each split into targets of consecutive bucket ranges (same
// address and replicaset) of at most kDnfMostChains / where_chains buckets, so that no statement
// expands beyond Picodata's chain limit; a master within it stays one target, and one without
// ranges stays as it is. The pieces alternate between the masters (each master's first piece, then
// each one's second, ...), each master's in its bucket order: a reader that takes them in turn
// has one statement running at every master while it reads another master's answer.
std::vector<Target> split_by_chains(const std::vector<Target> &masters, size_t where_chains);

}  // namespace picoroute::routing
