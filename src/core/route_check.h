// Routing that verifies itself: before picoroute routes keyed statements of a table by the bucket
// it computes, it asks the cluster to EXPLAIN a keyed statement for a sample key and compares the
// bucket Picodata prints with its own. This file holds the pure parts: reading Picodata's
// `buckets = ...` line in every shipped EXPLAIN format, judging it against picoroute's bucket, the
// sample keys, the life of a verdict (pending, agreed, disagreed, unknown with backoff) and which
// entry of the bounded shared table a new verdict may take. The glue is src/pg/route_checks.h
// (shared memory) and src/pg/fdw/route_check.cpp (the remote EXPLAIN).
//
// Picodata's plain EXPLAIN ends with the statement's buckets at every release: FullExplain's
// Display in sql-planner/src/ir/explain.rs at 25.5.10 and 26.1.6 ("buckets = [1934]", "buckets
// <= [62,2132]" when only an upper bound is known, "buckets = any", "buckets = unknown"), and from
// 26.2.1-rc1 a "# Buckets" section whose last line is BucketsInfo's Display
// (sql-ir/src/ir/explain/execution_info.rs at 26.3.0, the same texts). Buckets are printed sorted,
// consecutive ones as ranges "a-b", joined by commas (buckets_repr); 26.2.1-rc1+ may also print
// "unknown(l..=r)" for a set only bounded in size.
#pragma once
#include "core/firewall.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace picoroute::route_check {

// ---- Picodata's answer
// ---------------------------------------------------------------------------

struct ExplainBuckets {
    enum class Kind {
        Missing,  // no buckets line: not a Picodata EXPLAIN, or an unknown format
        Exact,    // buckets = [..]
        AtMost,   // buckets <= [..]: an upper bound (several subtrees)
        Any,      // buckets = any: no sharded table (one node, any)
        Unknown,  // buckets = unknown, or a set of unknown members
    };
    Kind kind = Kind::Missing;
    std::vector<std::pair<uint32_t, uint32_t>> ranges;  // Exact, AtMost: inclusive, as printed
    std::string line;  // the line as received, trimmed ("" when missing)

    bool contains(uint32_t bucket) const;
    uint64_t count() const;  // buckets in `ranges`
};

// The last line of `lines` (the rows of EXPLAIN's one text column, or text with newlines inside
// rows) that begins with "buckets" followed by "=" or "<=". A line that does not parse gives Kind
// Unknown with its text.
ExplainBuckets parse_explain_buckets(const std::vector<std::string> &lines);

enum class Outcome { Agreed, Disagreed, Inconclusive };

struct Judgement {
    Outcome outcome = Outcome::Inconclusive;
    // Picodata's bucket when its answer names exactly one.
    std::optional<uint32_t> picodata_bucket;
    std::string reason;  // why Inconclusive, or what Picodata said when Disagreed
};

// Compares Picodata's answer for a statement fixing one sample key with picoroute's bucket `ours`
// for that key. Agreed: Picodata names exactly `ours` (or at most `ours`). Disagreed: Picodata's
// buckets (exact or an upper bound) leave `ours` out. Inconclusive otherwise: no line, any,
// unknown, an empty set, or several buckets including `ours` (Picodata did not route by the key).
Judgement judge(const ExplainBuckets &answer, uint32_t ours);

// ---- sample keys
// ---------------------------------------------------------------------------------

// The sample values, in the input form of a PostgreSQL type, for a key value of Picodata type
// `picodata_type` ("integer", "string", "boolean", "double", "decimal", "uuid", "datetime"): each
// chosen where hashing rules differ between versions or implementations (an integral and a
// fractional double, a decimal with a scale, a negative integer above one byte, non-ASCII text).
// Empty for an unknown type.
const std::vector<std::string> &sample_texts(std::string_view picodata_type);

// The sample keys of a key whose values have the given Picodata types, in key order: key i takes
// value i (modulo the count) of each column's samples; as many keys as the longest list. Empty when
// a type has no samples.
std::vector<std::vector<std::string>> key_samples(const std::vector<std::string> &picodata_types);

// "(1, 'picoroute')": a sample key as the view shows it (numbers and booleans bare, the rest
// quoted).
std::string format_sample(const std::vector<std::string> &picodata_types,
                          const std::vector<std::string> &values);

// "integer, string": the key's signature as the view and the messages show it.
std::string signature_text(const std::vector<std::string> &picodata_types);

// ---- the life of a verdict
// -----------------------------------------------------------------------

enum class State : uint32_t { Empty = 0, Pending = 1, Agreed = 2, Disagreed = 3, Unknown = 4 };
const char *state_name(State state);  // "pending", "agreed", "disagreed", "unknown" ("" for Empty)

struct Progress {
    int64_t claimed_at_ms = 0;  // Pending: when a backend took the check on
    int64_t retry_at_ms = 0;    // Unknown: when the next check may run
    uint32_t attempts = 0;      // checks that could not conclude, in a row
};

// A Pending check older than this was abandoned (its backend died or was cancelled before it could
// record anything): another backend takes it over.
inline constexpr int64_t kPendingStaleMs = 60000;
// Unknown: the first retry after this, doubling with each inconclusive check up to the cap.
inline constexpr int64_t kRetryFirstMs = 10000;
inline constexpr int64_t kRetryCapMs = 600000;

int64_t retry_delay_ms(uint32_t attempts);

enum class Step {
    ByBucket,            // route by picoroute's bucket (agreed, or nothing known yet)
    ThroughCoordinator,  // Picodata hashes differently: a coordinator routes by its own hashing
    Check,               // take the check on now (then route by its verdict)
};

// What a statement does with the verdict `state` at `now_ms`: no verdict, a stale Pending one or an
// Unknown one due for a retry is checked (when `may_check`; else routed by bucket); an agreed,
// fresh Pending or Unknown one is routed by bucket; a disagreed one through a coordinator.
Step next_step(State state, const Progress &progress, int64_t now_ms, bool may_check = true);

// After a check that could not conclude: one more attempt, the next retry after the backoff.
void note_inconclusive(Progress *progress, int64_t now_ms);

// ---- the bounded table of verdicts
// ---------------------------------------------------------------

struct SlotSummary {
    State state = State::Empty;
    bool current_version = false;  // its version is the one the new entry is for
    int64_t last_used_ms = 0;      // when a statement last consulted it
    int64_t claimed_at_ms = 0;     // Pending: when it was taken on
};

// The entry a new verdict may take: an empty one first, then the least recently used of the
// entries of another version, then of the agreed and unknown entries; an entry being checked (a
// fresh Pending) or a disagreement for the current version is never taken (a disagreement is
// what keeps its table's statements right). -1 when none may be taken: the table is full.
int pick_slot(const std::vector<SlotSummary> &slots, int64_t now_ms);

}  // namespace picoroute::route_check
