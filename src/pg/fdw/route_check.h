// The route check (route_check.cpp).
#pragma once

#include "pg/fdw/options.h"

namespace picoroute::pg::fdw {

// Where keyed statements of a table go: by picoroute's bucket, or through a coordinator because
// Picodata hashes the key differently (see pg/route_checks.h).
enum class KeyRoute { ByBucket, Coordinator };
// For statements of `table` whose sharding-key values have `types` (one per key column, in key
// order): the recorded verdict of the current Picodata version; with `may_check` and none recorded
// (or one due for a retry), the check runs first, bounded in time, as user `userid` (whose user
// mapping the statements use). Never fails the statement for a check that cannot run. C++ context
// (inside guarded()).
KeyRoute key_route(const TableInfo *table, const Oid *types, int ntypes, Oid userid,
                   bool may_check = true);

}  // namespace picoroute::pg::fdw
