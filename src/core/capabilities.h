// What each Picodata version can do: the version string Picodata reports, parsed, and one table of
// named capabilities with the first version that has each. The data is also in
// src/core/capabilities.json, which the emulator reads; a unit test keeps the two equal.
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
// optional "-dirty" and an optional "picodata " prefix (what version() returns). "X.Y" stands for
// X.Y.0. Ordered as released: 26.2.1-rc1 < 26.2.1-rc2 < 26.2.1 < 26.2.1-4-gabc.
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
    PruneByBucketId,      // bucket_id = N / IN (...) restricts a statement to the owners
    Forward,              // session option forward (off: refuse statements owned elsewhere)
    StmtInvalidation,     // startup option pico_stmt_invalidation (42999 on stale statements)
    ReadPreference,       // read_preference as startup option and in OPTION (...)
    LocalExecution,       // a single-bucket statement at its owner runs there (no second hop)
    IntegralDoubleHash,   // a double equal to an integer hashes as that integer
    DnfChainLimit,        // above kDnfChainLimit OR-of-AND chains a statement goes everywhere
    SwitchoverRefusal,    // a write reaching a demoted master is refused with "retry is required"
    UnloggedTables,       // CREATE UNLOGGED TABLE, _pico_table.opts; leader-only reads of them
    ConcatBelowAdditive,  // || binds below + and - (as in PostgreSQL), not with * / %
    EmptySetAggregate,    // a scalar aggregate over an empty bucket set runs (count gives 0)
};
inline constexpr size_t kDnfChainLimit = 512;

struct CapabilityRow {
    Capability capability;
    const char *name;  // as in capabilities.json
    // The first version with it in each release series where it appeared, ascending. A version
    // has it when the last entry of its series or of an earlier series is not later than it.
    std::vector<const char *> since;
};
const std::vector<CapabilityRow> &capability_table();
const char *capability_name(Capability capability);

bool has(const Version &version, Capability capability);
// A version string that does not parse has no capability.
bool has(std::string_view version, Capability capability);

// Every capability of one version, looked up once (the table walk and the version parsing stay
// out of a per-statement path): has(c) answers what caps::has(version, c) answers.
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
