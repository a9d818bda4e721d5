// Named capabilities per Picodata version (see capabilities.h). Each row names where it was read
// in Picodata's source (the picodata/picodata repository, at the release tags).
#include "core/capabilities.h"

#include <cctype>
#include <tuple>

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

bool same_series(const Version &a, const Version &b) {
    return a.major == b.major && a.minor == b.minor;
}

bool series_before(const Version &a, const Version &b) {
    return std::make_pair(a.major, a.minor) < std::make_pair(b.major, b.minor);
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

const std::vector<CapabilityRow> &capability_table() {
    static const std::vector<CapabilityRow> table = {
        // CHANGELOG.md at 26.2.1-rc2 (!3537 "avoid full scatter-gather for WHERE bucket_id =
        // <CONST>"); not in 26.2.1-rc1 nor in the 26.3.0 tag; on master from commit def426247,
        // which git describe names 26.3.0-115-gdef426247.
        {Capability::PruneByBucketId, "prune_by_bucket_id", {"26.2.1-rc2", "26.3.0-115"}},
        // src/pgproto/client/startup.rs at 26.2.1-rc1 and 26.3.0 (option "forward"); absent at
        // 26.2.0.
        {Capability::Forward, "forward", {"26.2.1-rc1"}},
        // src/pgproto/client/startup.rs at 26.1.0 (pico_stmt_invalidation); absent at 25.6.0 and
        // 25.5.10. 26.1.0 is the tag that starts the series; its first release is 26.1.1.
        {Capability::StmtInvalidation, "stmt_invalidation", {"26.1.0"}},
        // src/pgproto/client/startup.rs at 26.1.0 (read_preference); absent at 25.6.0, 25.5.10.
        {Capability::ReadPreference, "read_preference", {"26.1.0"}},
        // CHANGELOG.md at 26.1.1 ("a local SQL execution path"); its metric
        // pico_sql_local_query_total is in src/metrics.rs at 26.1.1, not at 26.1.0.
        {Capability::LocalExecution, "local_execution", {"26.1.1"}},
        // CHANGELOG.md at 26.1.1 ("Hashing behavior changed for DOUBLE type fields"); the entry is
        // already at the 26.1.0 tag, not at 25.6.0.
        {Capability::IntegralDoubleHash, "integral_double_hash", {"26.1.0"}},
        // MAX_DNF_CHAINS = 512: sql-planner/src/ir/transformation/dnf.rs at 26.1.6 (absent at
        // 26.1.5); sql-ir/src/ir/transformation/dnf.rs at 26.2.1-rc1 and 26.3.0 (absent at 26.2.0).
        {Capability::DnfChainLimit, "dnf_chain_limit", {"26.1.6", "26.2.1-rc1"}},
        // "retry is required: DML was sent to the replica during master switchover" in
        // src/sql.rs at 26.1.2, 26.1.6, 26.2.1-rc1 and 26.3.0; absent at 26.1.1 and 26.2.0, where
        // such a write fails with tarantool's "Can't modify data on a read-only instance".
        {Capability::SwitchoverRefusal, "switchover_refusal", {"26.1.2", "26.2.1-rc1"}},
        // TableOption::Unlogged in src/schema.rs (the column _pico_table.opts with it) and the
        // refusal of non-leader reads of such tables in src/sql/dispatch.rs, at the 26.1.0 tag;
        // absent at 25.6.0 and 25.5.10 (no opts column in _pico_table there).
        {Capability::UnloggedTables, "unlogged_tables", {"26.1.0"}},
        // ConcatInfixOp on a Pratt tier of its own between the comparisons and + -: commit
        // 1505d6ea7 in 26.2.1-rc2 (crates/sql-frontend/.../expression_parser.rs:117), 27cbad323 =
        // 26.3.0-49 on master; at 26.2.1-rc1 and the 26.3.0 tag it shares the tier of * / %.
        {Capability::ConcatBelowAdditive, "concat_below_additive", {"26.2.1-rc2", "26.3.0-49"}},
        // "scalar aggregate with empty buckets set": commit 14c819875 in 26.2.1-rc2, 9f9068217 =
        // 26.3.0-114 on master (src/sql/router.rs bucket_dispatch runs the plan on any node);
        // before, the reduce stage sums nothing and count(*) answers NULL (test/int/sql/
        // eliminate_motion.sql, scalar-agg-1, at 26.1.6, 26.2.1-rc1 and 26.3.0).
        {Capability::EmptySetAggregate, "empty_set_aggregate", {"26.2.1-rc2", "26.3.0-114"}},
    };
    return table;
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
    for (const CapabilityRow &row : capability_table()) {
        if (row.capability != capability)
            continue;
        std::optional<Version> last;
        for (const char *text : row.since) {
            std::optional<Version> first = parse_version(text);
            if (first && (same_series(*first, version) || series_before(*first, version)))
                last = first;
        }
        if (!last)
            return false;
        return !same_series(*last, version) || version >= *last;
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
    static_assert(static_cast<uint32_t>(Capability::SwitchoverRefusal) < 32,
                  "a CapabilitySet holds 32 capabilities");
    for (const CapabilityRow &row : capability_table())
        if (caps::has(*v, row.capability))
            bits_ |= bit(row.capability);
}

}  // namespace picoroute::caps
