// The routing of one statement (see statement.h).
#include "core/routing/statement.h"

#include "core/bucket_hash.h"
#include "core/capabilities.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

namespace picoroute::routing {

namespace {

// The product of the key values, capped: stops multiplying once it exceeds the cap.
size_t key_combinations(const KeyValues &keys) {
    size_t combos = 1;
    for (size_t i = 0; i < keys.counts.size() && combos <= kMaxKeyCombinations; i++)
        combos *= keys.counts[i];
    return combos;
}

// The buckets of every combination of key values (first column slowest); each value is encoded
// once.
std::set<uint32_t> key_buckets(const KeyValues &keys, size_t combos, uint32_t bucket_count) {
    size_t nkeys = keys.counts.size();
    // Column by column, flat: value v of column i at first[i] + v.
    std::vector<size_t> first(nkeys, 0);
    size_t total = 0;
    for (size_t i = 0; i < nkeys; i++) {
        first[i] = total;
        total += keys.counts[i];
    }
    std::vector<std::optional<std::string>> encoded(total);
    std::set<uint32_t> buckets;
    std::vector<size_t> index(nkeys, 0);
    for (size_t c = 0; c < combos; c++) {
        std::string bytes;
        for (size_t i = 0; i < nkeys; i++) {
            std::optional<std::string> &value = encoded[first[i] + index[i]];
            if (!value)
                value = keys.encode(i, index[i]);
            bytes += *value;
        }
        buckets.insert(bucket_id_for_bytes(bytes, bucket_count));
        for (size_t i = nkeys; i-- > 0;) {
            if (++index[i] < keys.counts[i])
                break;
            index[i] = 0;
        }
    }
    return buckets;
}

// "bucket 7 -> addr (master of replicaset r); buckets 8, 9 -> ..."
std::string describe_groups(const std::vector<Target> &targets) {
    std::string out;
    for (const Target &target : targets) {
        if (!out.empty())
            out += "; ";
        out += target.buckets.size() == 1 ? "bucket " : "buckets ";
        for (size_t i = 0; i < target.buckets.size(); i++)
            out += (i ? ", " : "") + std::to_string(target.buckets[i]);
        out += " -> " + describe(target);
    }
    return out;
}

// "scatter to the 2 masters of tier "t": a:1 (buckets 1-1500 in 3 statements), b:1 (buckets
// 1501-3000 in 3 statements)": the masters before split_by_chains, with the statements each gets.
std::string describe_masters(const std::string &tier, const std::vector<Target> &masters,
                             const std::vector<Target> &pieces) {
    std::string out =
        "scatter to the " + std::to_string(masters.size()) + " masters of tier \"" + tier + "\":";
    for (size_t i = 0; i < masters.size(); i++) {
        out += (i ? ", " : " ") + masters[i].address + " (buckets";
        for (size_t r = 0; r < masters[i].ranges.size(); r++)
            out += (r ? ", " : " ") + std::to_string(masters[i].ranges[r].first) + "-" +
                   std::to_string(masters[i].ranges[r].second);
        auto statements = std::count_if(pieces.begin(), pieces.end(), [&](const Target &p) {
            return p.address == masters[i].address;
        });
        if (statements > 1)
            out += " in " + std::to_string(statements) + " statements";
        out += ")";
    }
    return out;
}

// Why a 'masters' scatter cannot be sent where Picodata restricts a statement by bucket_id, or ""
// when it can: a key list combined with bucket lists; a WHERE clause over Picodata's chain limit
// with a single bucket; for a write, a master whose bucket list would expand the WHERE clause
// beyond the limit (Picodata would then ask every replicaset, from each master). A read is split
// into statements within the limit instead (split_by_chains).
std::string masters_refusal(const StatementInfo &st, const std::vector<Target> &masters) {
    if (st.keys)
        return "scatter 'masters' is not combined with a list of sharding keys; ";
    for (const Target &m : masters) {
        size_t chains = dnf_chains(st.where_chains, m);
        bool split = !st.write && st.where_chains <= caps::kDnfMostChains;
        if (chains <= caps::kDnfMostChains || split)
            continue;
        return "scatter 'masters': the buckets of " + m.address + " expand the WHERE clause to " +
               std::to_string(chains) + " OR-of-AND chains, more than Picodata expands (" +
               std::to_string(caps::kDnfMostChains) + "); ";
    }
    return "";
}

// A statement without a key: every master of the tier, or one coordinator.
void route_keyless(const StatementInfo &st, const StatementLookups &lookups, ReadPref pref,
                   StatementRoute *out) {
    std::string note;
    if (st.scatter_masters && !st.prune_by_bucket_id) {
        // Where a bucket_id filter does not restrict a statement, every master would run a
        // cluster-wide query (N x N storage queries), so one coordinator does it once.
        note =
            "scatter 'masters' needs a Picodata version that restricts a statement by bucket_id "
            "(26.2.1-rc2); ";
    } else if (st.scatter_masters) {
        std::vector<Target> masters = lookups.masters();
        note = masters_refusal(st, masters);
        if (note.empty()) {
            // A read whose bucket lists are over the chain limit goes to each master in several
            // statements, each within it (read one after the other on the master's connection).
            out->targets = st.write ? masters : split_by_chains(masters, st.where_chains);
            for (Target &t : out->targets)
                t.sent = Sent::MastersScatter;
            out->retry = Retry::Never;
            out->description = describe_masters(st.tier, masters, out->targets);
            return;
        }
    }
    Target c = lookups.spread(pref, st.write);
    c.sent = Sent::Coordinator;
    out->description = note + "scatter through coordinator " + c.address;
    out->targets = {c};
}

// Several owners of a keyed statement's buckets: the statement goes once to the first of them,
// which routes it by its key (each owner sent the whole key list would answer for all of it).
void send_once(StatementRoute *out, bool describe) {
    if (out->targets.size() <= 1)
        return;
    Target first = out->targets[0];
    for (size_t i = 1; i < out->targets.size(); i++)
        first.buckets.insert(first.buckets.end(), out->targets[i].buckets.begin(),
                             out->targets[i].buckets.end());
    std::sort(first.buckets.begin(), first.buckets.end());
    if (describe)
        out->description += ": sent once to " + first.address + ", which routes it by the key";
    out->targets = {first};
}

}  // namespace

KeyValues encoded_key_values(std::vector<std::vector<std::string>> columns) {
    KeyValues keys;
    for (const auto &column : columns)
        keys.counts.push_back(column.size());
    keys.encode = [columns = std::move(columns)](size_t column, size_t index) {
        return columns[column][index];
    };
    return keys;
}

StatementRoute route_statement(const StatementInfo &st, const StatementLookups &lookups) {
    StatementRoute out;
    ReadPref pref = st.write ? ReadPref::Leader : st.read_pref;
    out.retry = st.write ? Retry::Write : Retry::Read;
    if (st.global) {
        Target c = lookups.spread(pref, st.write);
        c.sent = Sent::Coordinator;
        if (st.describe)
            out.description = "global table: " + describe(c);
        out.targets = {c};
        return out;
    }
    if (st.keys) {
        size_t combos = key_combinations(*st.keys);
        if (combos == 0) {
            out.description = "no row can match the sharding key condition: nothing sent";
            return out;
        }
        if (st.hashing_disagrees) {
            Target c = lookups.spread(pref, st.write);
            c.sent = Sent::Coordinator;
            out.keyless = false;
            out.description =
                "Picodata hashes this sharding key differently (picoroute_route_checks): "
                "through coordinator " +
                c.address + ", which routes it by its own hashing";
            out.targets = {c};
            return out;
        }
        if (combos <= kMaxKeyCombinations && st.bucket_count > 0) {
            out.targets = lookups.group(key_buckets(*st.keys, combos, st.bucket_count), pref);
            for (Target &t : out.targets)  // the buckets the map does not know: a coordinator
                t.sent = t.role == Role::Coordinator ? Sent::Coordinator : Sent::RoutedByKey;
            out.keyless = false;
            if (st.describe)
                out.description = describe_groups(out.targets);
            send_once(&out, st.describe);
            return out;
        }
    }
    route_keyless(st, lookups, pref, &out);
    return out;
}

std::vector<Target> split_by_chains(const std::vector<Target> &masters, size_t where_chains) {
    size_t per_piece =
        std::max<size_t>(caps::kDnfMostChains / std::max<size_t>(where_chains, 1), 1);
    std::vector<std::vector<Target>> by_master;
    for (const Target &m : masters) {
        std::vector<Target> pieces;
        Target piece = m;
        piece.ranges.clear();
        size_t in_piece = 0;
        for (const auto &[start, end] : m.ranges) {
            for (uint32_t from = start; from <= end;) {
                size_t take = std::min(size_t{end} - from + 1, per_piece - in_piece);
                auto to = static_cast<uint32_t>(from + take - 1);
                piece.ranges.emplace_back(from, to);
                in_piece += take;
                if (in_piece == per_piece) {
                    pieces.push_back(piece);
                    piece.ranges.clear();
                    in_piece = 0;
                }
                if (to == end)
                    break;
                from = to + 1;
            }
        }
        if (!piece.ranges.empty() || pieces.empty())
            pieces.push_back(std::move(piece));
        by_master.push_back(std::move(pieces));
    }
    std::vector<Target> out;
    for (size_t round = 0;; round++) {
        bool any = false;
        for (const auto &pieces : by_master) {
            if (round < pieces.size()) {
                out.push_back(pieces[round]);
                any = true;
            }
        }
        if (!any)
            break;
    }
    return out;
}

size_t dnf_chains(size_t where_chains, const Target &target) {
    size_t buckets = target.buckets.size();
    for (const auto &[start, end] : target.ranges)
        buckets += end >= start ? size_t{end} - start + 1 : 0;
    if (buckets == 0)
        return where_chains;
    if (where_chains > SIZE_MAX / buckets)
        return SIZE_MAX;
    return where_chains * buckets;
}

}  // namespace picoroute::routing
