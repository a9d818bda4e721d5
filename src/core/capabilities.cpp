// Named capabilities per Picodata release (see capabilities.h). Each range names where it was read
// in Picodata's source (file:line@tag in the picodata/picodata repository).
#include "core/capabilities.h"

#include <cctype>
#include <tuple>
#include <utility>

namespace picoroute::caps {

namespace {

// Reads the digits at `pos` into *out; false when there are none.
bool read_number(std::string_view text, size_t *pos, uint32_t *out) {
    size_t start = *pos;
    uint64_t value = 0;
    while (*pos < text.size() && text[*pos] >= '0' && text[*pos] <= '9') {
        value = value * 10 + static_cast<uint64_t>(text[*pos] - '0');
        if (value > UINT32_MAX)
            return false;
        (*pos)++;
    }
    *out = static_cast<uint32_t>(value);
    return *pos > start;
}

bool consume(std::string_view text, size_t *pos, std::string_view word) {
    if (text.substr(*pos, word.size()) != word)
        return false;
    *pos += word.size();
    return true;
}

// "-N-g<hex>" after a tag (the hash may be left out): *commits = N.
bool read_describe(std::string_view text, size_t *pos, uint32_t *commits) {
    size_t at = *pos;
    if (!consume(text, &at, "-") || !read_number(text, &at, commits))
        return false;
    if (consume(text, &at, "-g")) {
        size_t hex = at;
        while (at < text.size() && std::isxdigit(static_cast<unsigned char>(text[at])))
            at++;
        if (at == hex)
            return false;
    }
    *pos = at;
    return true;
}

auto key(const Version &v) {
    // A release sorts after its candidates.
    uint32_t rc = v.rc == 0 ? UINT32_MAX : v.rc;
    return std::make_tuple(v.major, v.minor, v.patch, rc, v.commits);
}

// One release line: 26.1.1 ... 26.1.6; 26.2.1-rc1, 26.2.1-rc2.
bool same_line(const Version &a, const Version &b) {
    return a.major == b.major && a.minor == b.minor;
}

}  // namespace

bool operator<(const Version &a, const Version &b) {
    return key(a) < key(b);
}

bool operator==(const Version &a, const Version &b) {
    return key(a) == key(b);
}

std::optional<Version> parse_version(std::string_view text) {
    size_t pos = 0;
    (void)consume(text, &pos, "picodata ");
    Version v;
    if (!read_number(text, &pos, &v.major) || !consume(text, &pos, ".") ||
        !read_number(text, &pos, &v.minor))
        return std::nullopt;
    if (consume(text, &pos, ".") && !read_number(text, &pos, &v.patch))
        return std::nullopt;
    size_t at = pos;
    if ((consume(text, &at, "-rc") || consume(text, &at, "rc")) && read_number(text, &at, &v.rc) &&
        v.rc > 0)
        pos = at;
    (void)read_describe(text, &pos, &v.commits);
    (void)consume(text, &pos, "-dirty");
    if (pos != text.size())
        return std::nullopt;
    return v;
}

std::string to_string(const Version &v) {
    std::string out =
        std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.patch);
    if (v.rc > 0)
        out += "-rc" + std::to_string(v.rc);
    if (v.commits > 0)
        out += "-" + std::to_string(v.commits);
    return out;
}

const std::vector<Release> &releases() {
    // Each a tag with a release commit and a dated entry at the top of its CHANGELOG.md. 25.6.0,
    // 26.1.0, 26.2.0 and 26.3.0 are not releases: each opens a development line (its commit "start
    // 26.x release series" or "bump version", its CHANGELOG's top entry "Unreleased").
    static const std::vector<Release> table = {
        {"25.5.1", "CHANGELOG.md:11@25.5.1"},
        {"25.5.2", "CHANGELOG.md:11@25.5.2"},
        {"25.5.3", "CHANGELOG.md:12@25.5.3"},
        {"25.5.4", "CHANGELOG.md:11@25.5.4"},
        {"25.5.5", "CHANGELOG.md:11@25.5.5"},
        {"25.5.6", "CHANGELOG.md:11@25.5.6"},
        {"25.5.7", "CHANGELOG.md:11@25.5.7"},
        {"25.5.8", "CHANGELOG.md:11@25.5.8"},
        {"25.5.9", "CHANGELOG.md:11@25.5.9"},
        {"25.5.10", "CHANGELOG.md:11@25.5.10"},
        {"26.1.1", "CHANGELOG.md:11@26.1.1"},
        {"26.1.2", "CHANGELOG.md:11@26.1.2"},
        {"26.1.3", "CHANGELOG.md:11@26.1.3"},
        {"26.1.4", "CHANGELOG.md:11@26.1.4"},
        {"26.1.5", "CHANGELOG.md:11@26.1.5"},
        {"26.1.6",
         "CHANGELOG.md:11@26.1.6 (headed [25.1.6], a typo: the tag's commit is "
         "'release: 26.1.6')"},
        {"26.2.1-rc1", "CHANGELOG.md:11@26.2.1-rc1"},
        {"26.2.1-rc2", "CHANGELOG.md:11@26.2.1-rc2"},
    };
    return table;
}

const std::vector<CapabilityRow> &capability_table() {
    static const std::vector<CapabilityRow> table = {
        {Capability::PruneByBucketId,
         "prune_by_bucket_id",
         {{"26.2.1-rc2", "26.2.1-rc2",
           "collect_buckets_from_bucket_id_eq, crates/sql-ir/src/ir/bucket.rs:306@26.2.1-rc2 "
           "(CHANGELOG.md:18@26.2.1-rc2, !3537); absent at 26.2.1-rc1 and 26.1.6, and at the "
           "development tag 26.3.0 (master has it from commit def426247, 26.3.0-115)"}}},
        {Capability::Forward,
         "forward",
         {{"26.2.1-rc1", "26.2.1-rc2",
           "option \"forward\", src/pgproto/client/startup.rs:108@26.2.1-rc1 and "
           ":108@26.2.1-rc2; absent at 26.1.6"}}},
        {Capability::StmtInvalidation,
         "stmt_invalidation",
         {{"26.1.1", "26.1.6",
           "PICO_STMT_INVALIDATION, src/pgproto/client/startup.rs:55@26.1.1 to :55@26.1.6; "
           "absent at 25.5.10"},
          {"26.2.1-rc1", "26.2.1-rc2",
           "src/pgproto/client/startup.rs:55@26.2.1-rc1 and :55@26.2.1-rc2"}}},
        {Capability::ReadPreference,
         "read_preference",
         {{"26.1.1", "26.1.6",
           "option \"read_preference\", src/pgproto/client/startup.rs:100@26.1.1 to "
           ":100@26.1.6; absent at 25.5.10"},
          {"26.2.1-rc1", "26.2.1-rc2",
           "src/pgproto/client/startup.rs:100@26.2.1-rc1 and :100@26.2.1-rc2"}}},
        {Capability::LocalExecution,
         "local_execution",
         {{"26.1.1", "26.1.6",
           "CHANGELOG.md:96@26.1.1 (a local SQL execution path); its metric "
           "pico_sql_local_query_total, src/metrics.rs:343@26.1.1 to :343@26.1.6, absent at the "
           "development tag 26.1.0"},
          {"26.2.1-rc1", "26.2.1-rc2", "src/metrics.rs:407@26.2.1-rc1 and :407@26.2.1-rc2"}}},
        {Capability::IntegralDoubleHash,
         "integral_double_hash",
         {{"26.1.1", "26.1.6",
           "CHANGELOG.md:207@26.1.1 to :321@26.1.6 (Hashing behavior changed for DOUBLE type "
           "fields; the code is in the tarantool-sys submodule); absent at 25.5.10"},
          {"26.2.1-rc1", "26.2.1-rc2", "CHANGELOG.md:829@26.2.1-rc1 and :924@26.2.1-rc2"}}},
        {Capability::DnfChainLimit,
         "dnf_chain_limit",
         {{"26.1.6", "26.1.6",
           "MAX_DNF_CHAINS, sql-planner/src/ir/transformation/dnf.rs:90@26.1.6; absent at "
           "26.1.5"},
          {"26.2.1-rc1", "26.2.1-rc2",
           "sql-ir/src/ir/transformation/dnf.rs:90@26.2.1-rc1, "
           "crates/sql-ir/src/ir/transformation/dnf.rs:90@26.2.1-rc2"}}},
        {Capability::SwitchoverRefusal,
         "switchover_refusal",
         {{"26.1.2", "26.1.6",
           "\"retry is required: \" in proc_sql_execute, src/sql.rs:2827@26.1.2 to "
           ":2829@26.1.6; absent at 26.1.1"},
          {"26.2.1-rc1", "26.2.1-rc2", "src/sql.rs:2910@26.2.1-rc1 and :2987@26.2.1-rc2"}}},
        // Read by the emulator only (its EXPLAIN); picoroute's route check reads every format.
        {Capability::ExplainSections,
         "explain_sections",
         {{"26.2.1-rc1", "26.2.1-rc2",
           "\"# Buckets\" section, test/int/sql/explain.sql:47@26.2.1-rc1 and :47@26.2.1-rc2; "
           "column EXPLAIN, src/pgproto/backend/describe.rs:363@26.2.1-rc1 and :362@26.2.1-rc2; "
           "absent at 26.1.6 (buckets = [...], explain.sql:44@26.1.6; column QUERY PLAN, "
           "describe.rs:372@26.1.6)"}}},
        {Capability::ExplainInsertBuckets,
         "explain_insert_buckets",
         {{"26.1.1", "26.1.6",
           "try_calculate_sharded_insert_buckets, "
           "sql-planner/src/executor/bucket_discovery.rs:101@26.1.1 to :130@26.1.6; absent at "
           "25.5.10 (buckets = unknown: can_estimate_buckets, "
           "sql-planner/src/ir/explain/execution_info.rs:165@25.5.10)"},
          {"26.2.1-rc1", "26.2.1-rc2",
           "sql-executor/src/executor/bucket_discovery.rs:130@26.2.1-rc1, "
           "crates/sql-executor/src/executor/bucket_discovery.rs:147@26.2.1-rc2"}}},
    };
    return table;
}

bool is_release(std::string_view text) {
    for (const Release &r : releases())
        if (text == r.version)
            return true;
    return false;
}

std::string releases_text() {
    std::string out;
    const std::vector<Release> &all = releases();
    for (size_t i = 0; i < all.size();) {
        std::optional<Version> first = parse_version(all[i].version);
        size_t j = i;
        while (j + 1 < all.size() && first && same_line(*first, *parse_version(all[j + 1].version)))
            j++;
        out += std::string(out.empty() ? "" : ", ") + all[i].version;
        if (j > i + 1)
            out += std::string(" to ") + all[j].version;
        else if (j == i + 1)
            out += std::string(", ") + all[j].version;
        i = j + 1;
    }
    return out;
}

namespace {

// The tables parsed once (has() runs per picoroute_bucket_id call): every release, and the ranges
// of each capability. The unit test checks that every text of the tables parses.
struct ParsedTables {
    std::vector<Version> releases;
    std::vector<std::pair<Capability, std::vector<std::pair<Version, Version>>>> ranges;
};

const ParsedTables &parsed_tables() {
    static const ParsedTables tables = [] {
        ParsedTables out;
        for (const Release &r : releases())
            if (std::optional<Version> v = parse_version(r.version))
                out.releases.push_back(*v);
        for (const CapabilityRow &row : capability_table()) {
            std::vector<std::pair<Version, Version>> ranges;
            for (const ReleaseRange &range : row.releases) {
                std::optional<Version> first = parse_version(range.first);
                std::optional<Version> last = parse_version(range.last);
                if (first && last)
                    ranges.emplace_back(*first, *last);
            }
            out.ranges.emplace_back(row.capability, std::move(ranges));
        }
        return out;
    }();
    return tables;
}

}  // namespace

std::optional<Version> governing_release(const Version &version) {
    std::optional<Version> newest;
    for (const Version &v : parsed_tables().releases)
        if (!(version < v) && (!newest || *newest < v))
            newest = v;
    return newest;
}

const char *capability_name(Capability capability) {
    for (const CapabilityRow &row : capability_table())
        if (row.capability == capability)
            return row.name;
    return "";
}

std::optional<std::string> lowest_version(const std::vector<std::string> &versions) {
    std::optional<std::string> lowest_text;
    std::optional<Version> lowest;
    for (const std::string &text : versions) {
        std::optional<Version> v = parse_version(text);
        if (v && (!lowest || *v < *lowest)) {
            lowest = v;
            lowest_text = text;
        }
    }
    return lowest_text;
}

bool has(const Version &version, Capability capability) {
    std::optional<Version> release = governing_release(version);
    if (!release)
        return false;
    for (const auto &[cap, ranges] : parsed_tables().ranges) {
        if (cap != capability)
            continue;
        for (const auto &[first, last] : ranges)
            if (*release >= first && !(last < *release))
                return true;
    }
    return false;
}

bool has(std::string_view version, Capability capability) {
    std::optional<Version> v = parse_version(version);
    return v && has(*v, capability);
}

CapabilitySet::CapabilitySet(std::string_view version) {
    std::optional<Version> v = parse_version(version);
    if (!v)
        return;
    static_assert(static_cast<uint32_t>(Capability::ExplainInsertBuckets) < 32,
                  "a CapabilitySet holds 32 capabilities");
    for (const CapabilityRow &row : capability_table())
        if (caps::has(*v, row.capability))
            bits_ |= bit(row.capability);
}

}  // namespace picoroute::caps
