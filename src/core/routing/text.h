// The text of a routed statement, as each target gets it: a master's bucket filter, a pushed
// tail, a scan's LIMIT and the OPTION clause, in that order; the key lists of batched lookups
// (IN lists of $n, padded so that a few texts serve every batch); and the {buckets} placeholders
// of picoroute_exec_masters. Pure functions: the glue writes the SQL of the table and the OPTION
// clause of its options, this decides where each part goes.
#pragma once
#include "core/firewall.h"
#include "core/routing/target.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace picoroute::routing {

// `sql` restricted to the target's buckets: "<sql> WHERE|AND bucket_id = N" / "IN (...)"; a
// master's ranges are written as the IN list of all their buckets, because Picodata (26.2.1-rc2)
// restricts a statement to the owners of the buckets of "bucket_id = N" or "IN (...)" while
// BETWEEN is only a row filter. No filter when the target has neither. `column` names the bucket
// column (a join's "r1"."bucket_id").
std::string with_bucket_filter(const std::string &sql, bool has_where, const Target &target,
                               const std::string &column = "bucket_id");

// The parts of a routed statement (a scan, a pushed join or upper relation, a direct
// modification).
struct StatementText {
    std::string sql;                   // SELECT ... FROM ... [WHERE ...]
    bool has_where = false;            // sql has a WHERE clause
    std::string column = "bucket_id";  // the bucket filter's column
    std::string tail;                  // GROUP BY ... of a pushed upper relation, after the filter
    int64_t row_limit = 0;             // a scan's LIMIT (0: none), after the tail
    std::string option;                // " OPTION (...)" or "", always last
};

// The statement as `target` gets it: the bucket filter of a master of a 'masters' scatter (its
// ranges; a statement routed by its key carries none: Picodata routes it by the key, and a
// bucket computed differently would turn a filter into an empty answer), then the tail, the LIMIT
// and the OPTION clause.
std::string text_for(const StatementText &text, const Target &target);

// ---- key lists ------------------------------------------------------------------------------

// One statement of a key list: members from..from+n-1 of its group, written as `padded`
// parameters (the last key repeated, which changes no answer), a power of two capped at the list's
// limit, so that a few texts serve every batch and stay prepared on the instance.
struct KeySlice {
    size_t from = 0;
    size_t n = 0;
    size_t padded = 0;
};
// The statements of a group of `members` keys, at most `max_keys` (at least 1) each.
std::vector<KeySlice> key_slices(size_t members, size_t max_keys);
// "<base> AND|WHERE <column> IN ($first, ..., $(first + nkeys - 1))".
std::string key_list_text(const std::string &base, bool has_where, const std::string &column,
                          int first_param, size_t nkeys);

// ---- picoroute_exec_masters ------------------------------------------------------------------

// "{buckets}" or "{buckets:qualifier}" in a statement, where each master's bucket filter goes.
struct Placeholder {
    size_t begin = 0, end = 0;  // q[begin] == '{', q[end - 1] == '}'
    std::string qualifier;      // "" or a table name or alias, as written
};
// `ranges` as one condition on bucket_id, merged where contiguous: "(q."bucket_id" BETWEEN a AND
// b OR q."bucket_id" = c)".
std::string bucket_condition(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                             const std::string &qualifier);
// `q` with every placeholder (in order, not overlapping) replaced by the condition of `ranges`.
std::string fill_placeholders(const std::string &q, const std::vector<Placeholder> &placeholders,
                              const std::vector<std::pair<uint32_t, uint32_t>> &ranges);

}  // namespace picoroute::routing
