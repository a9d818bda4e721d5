// What each Picodata version can do: the version string Picodata reports, parsed, the releases
// Picodata shipped, and one table of named capabilities with the releases that have each. The data
// is also in src/core/capabilities.json, which the emulator reads; a unit test keeps the two equal.
#pragma once
#include "core/firewall.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace picoroute::caps {

// A Picodata version as its build reports it (git describe): "25.5.1", "26.2.1-rc2" (also
// "26.2.1rc1"), "26.1.1-12-gabcdef" (12 commits after the tag), "26.2.1-rc2-3-gabc", with an
// optional "-dirty" and an optional "picodata " prefix (version() returns "picodata 26.2.1-rc2"
// from 26.2.1-rc1 on, src/info.rs:147@26.2.1-rc1; the bare version before). "X.Y" stands for X.Y.0.
// Ordered as released: 26.2.1-rc1 < 26.2.1-rc2 < 26.2.1 < 26.2.1-4-gabc.
struct Version {
    uint32_t major = 0, minor = 0, patch = 0;
    uint32_t rc = 0;       // release candidate number, 0 for a release
    uint32_t commits = 0;  // commits after the tag
};
bool operator<(const Version &a, const Version &b);
bool operator==(const Version &a, const Version &b);
inline bool operator>=(const Version &a, const Version &b) {
    return !(a < b);
}
// nullopt for a missing or unrecognised version: such a version has no capability.
std::optional<Version> parse_version(std::string_view text);
std::string to_string(const Version &v);
// The lowest of `versions` as reported (the text itself, "25.5.10" of {"26.1.6", "25.5.10"}): what
// a cluster whose instances report them can do. Texts that do not parse (an instance that reports
// nothing) are skipped; std::nullopt when none parses.
std::optional<std::string> lowest_version(const std::vector<std::string> &versions);

enum class Capability {
    PruneByBucketId,       // bucket_id = N / IN (...) restricts a statement to the owners
    Forward,               // session option forward (off: refuse statements owned elsewhere)
    StmtInvalidation,      // startup option pico_stmt_invalidation (42999 on stale statements)
    ReadPreference,        // read_preference as startup option and in OPTION (...)
    LocalExecution,        // a single-bucket statement at its owner runs there (no second hop)
    IntegralDoubleHash,    // a double equal to an integer hashes as that integer
    DnfChainLimit,         // above kDnfMostChains OR-of-AND chains a statement goes everywhere
    SwitchoverRefusal,     // a write reaching a demoted master is refused with "retry is required"
    ExplainSections,       // plain EXPLAIN prints "# Logical plan" / "# Buckets" sections
    ExplainInsertBuckets,  // EXPLAIN of an INSERT ... VALUES names the buckets of its rows
};

// Picodata's MAX_DNF_CHAINS (sql-planner/src/ir/transformation/dnf.rs:90@26.1.6,
// sql-ir/src/ir/transformation/dnf.rs:90@26.2.1-rc1). get_dnf_chains checks it after popping a
// chain off its stack (result.len() + stack.len() > MAX_DNF_CHAINS, dnf.rs:218-221@26.1.6): the
// chains built and pending then number one less than the chains of the whole clause, so a clause
// of 513 chains is still expanded and one of 514 is not.
inline constexpr size_t kDnfChainLimit = 512;
// The most OR-of-AND chains a WHERE clause may expand into and still be routed by Picodata.
inline constexpr size_t kDnfMostChains = kDnfChainLimit + 1;

// A release Picodata shipped (capabilities.json "releases"), as its build reports itself.
struct Release {
    const char *version;
    const char *source;  // where it was read: its CHANGELOG entry (file:line@tag)
};
// Every shipped release, ascending.
const std::vector<Release> &releases();
// Whether `text` names one of releases() exactly as the build reports it ("26.2.1-rc2").
bool is_release(std::string_view text);
// "25.5.1 to 25.5.10, 26.1.1 to 26.1.6, 26.2.1-rc1, 26.2.1-rc2": releases() by line, for messages.
std::string releases_text();
// The release whose capabilities `version` has: the newest release at or before it in version
// order (26.3.0-115-gdef426247 -> 26.2.1-rc2, 26.1.7 -> 26.1.6); nullopt before the first.
std::optional<Version> governing_release(const Version &version);

// Releases `first` to `last` (inclusive, one release line) have a capability.
struct ReleaseRange {
    const char *first;
    const char *last;
    const char *source;  // file:line@tag where it was read, for each end
};

struct CapabilityRow {
    Capability capability;
    const char *name;  // as in capabilities.json
    std::vector<ReleaseRange> releases;
};
const std::vector<CapabilityRow> &capability_table();
const char *capability_name(Capability capability);

// Whether `version` has `capability`: whether its governing_release() lies in one of the
// capability's ranges. A version before every release has none. Why this rule is safe where it
// guesses (a build between tags, a release newer than the table): picoroute acts on three
// capabilities, and a wrong "has" of any of them costs work, never an answer:
// - PruneByBucketId lets scatter 'masters' send each master a statement restricted to its own
//   bucket_id ranges; where Picodata does not prune, each master runs its statement over the whole
//   cluster, filtered by the same bucket_id ranges: the same rows, N x N storage queries.
// - IntegralDoubleHash decides the bucket of a double key: a wrong bucket sends the statement to
//   another instance, which routes it by its key (a hop); no statement that fixes its key carries
//   a bucket filter. It also decides picoroute_bucket_id's answer for doubles.
// - StmtInvalidation lets a connection keep named statements; the rule grants it only to versions
//   at or after 26.1.1, and every release since has it.
// ExplainSections and ExplainInsertBuckets shape the emulator's EXPLAIN only: picoroute's route
// check reads every format and judges an answer it cannot use as inconclusive (route_check.h).
// The rule takes nothing away from a later build that Picodata may add, so a capability that a
// future release drops would be assumed there: the table must then get that release.
bool has(const Version &version, Capability capability);
// A version string that does not parse has no capability.
bool has(std::string_view version, Capability capability);

class CapabilitySet {
  public:
    CapabilitySet() = default;
    explicit CapabilitySet(std::string_view version);
    bool has(Capability capability) const { return (bits_ & bit(capability)) != 0; }
    uint32_t bits() const { return bits_; }

  private:
    static uint32_t bit(Capability capability) {
        return uint32_t{1} << static_cast<uint32_t>(capability);
    }
    uint32_t bits_ = 0;
};

}  // namespace picoroute::caps
