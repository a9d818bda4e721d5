// Shared pieces of the SQL-callable functions: the macro that defines each of them (preload check
// and guard in one), turning plain C++ values into result rows, reading text arguments, finding a
// tier and a bucket in the shared map with errors that name them, and hashing a VARIADIC "any"
// sharding key.
//
// Everything here is meant to be called inside guarded(): PostgreSQL calls that may ereport run
// through pg_call, so a PostgreSQL error becomes a C++ exception and never jumps over a destructor.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "datatype/timestamp.h"
}

#include "core/bucket_hash.h"
#include "core/snapshot.h"
#include "pg/guard.h"
#include "pg/map_store.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// Defines the SQL-callable function `name` (and its PG_FUNCTION_INFO_V1 record): the function
// first checks that the library was preloaded (ERROR 55000 with a hint otherwise), then runs the
// body that follows the macro inside guarded(), so no C++ exception leaves it. The body sees
// `fcinfo`, returns a Datum (PG_RETURN_* work), reports errors by throwing, and calls PostgreSQL
// through pg_call; it may call PostgreSQL directly only where no C++ object with a destructor is
// alive (e.g. fetching its arguments first thing), since an ereport would jump over it.
//
//     PICOROUTE_SQL_FUNCTION(picoroute_example) {
//         int32 bucket = PG_GETARG_INT32(0);
//         ...
//         PG_RETURN_INT32(bucket);
//     }
#define PICOROUTE_SQL_FUNCTION(name)                                                          \
    static Datum name##_body(FunctionCallInfo fcinfo);                                        \
    extern "C" {                                                                              \
    PG_FUNCTION_INFO_V1(name);                                                                \
    }                                                                                         \
    extern "C" Datum name(PG_FUNCTION_ARGS) {                                                 \
        ::picoroute::pg::require_preloaded();                                                 \
        return ::picoroute::pg::guarded([fcinfo]() -> Datum { return name##_body(fcinfo); }); \
    }                                                                                         \
    static Datum name##_body(FunctionCallInfo fcinfo)

namespace picoroute::pg {

// One column value of a result row, as plain data.
struct Cell {
    enum class Kind { Null, Text, Int4, Int8, Bool, Timestamp, Float8, Oid };
    Kind kind = Kind::Null;
    std::string text;
    int64_t number = 0;
    bool flag = false;
    double real = 0;

    static Cell null() { return Cell{}; }
    static Cell str(std::string_view value);
    // An empty string becomes NULL (the snapshot does not tell "unknown" from "empty").
    static Cell str_or_null(std::string_view value);
    static Cell int4(int32_t value);
    static Cell int8(int64_t value);
    static Cell boolean(bool value);
    // 0 (never set) becomes NULL.
    static Cell timestamptz(TimestampTz value);
    static Cell float8(double value);
    static Cell oid(Oid value);
};
using Row = std::vector<Cell>;

// The composite result of a function declared with OUT parameters, as one Datum.
Datum make_result_row(FunctionCallInfo fcinfo, const Row &row);
// Materialized set-returning result: every row at once.
void return_rows(FunctionCallInfo fcinfo, const std::vector<Row> &rows);

// The bytes of a text argument (detoasted); valid until the end of the call.
std::string_view text_arg(FunctionCallInfo fcinfo, int argno);
// A text datum (palloc'ed in the current memory context) of `value`.
Datum text_datum(std::string_view value);

// The tier called `name` in `view`; ERROR 42704 naming it, with a hint listing the known tiers (or
// saying the map is not loaded yet) when it is unknown.
int32_t require_tier(const SnapshotView &view, uint64_t generation, std::string_view name);
// The tier's bucket_count; ERROR 55000 when it is 0 (not known yet).
uint32_t require_bucket_count(const SnapshotView &view, int32_t tier_index);
// ERROR 22003 with the valid range unless 1 <= bucket_id <= the tier's bucket_count (only the lower
// bound when the bucket_count is not known yet).
uint32_t require_bucket_in_range(const SnapshotView &view, int32_t tier_index, int32_t bucket_id);

// The hashing rule of the cluster's detected version (the lowest online instance's,
// core/bucket_hash.h); 25.5's while no version is detected, as the FDW assumes no capability of
// such a cluster.
HashRule cluster_hash_rule(const SnapshotView &view);

// Hashes the VARIADIC "any" arguments from `first_argno` on (or the explicit VARIADIC array) as
// Picodata does, by `rule`. Sets *key_is_null and returns 0 when the whole key is an explicit NULL
// array. Functions that know the map hash by the cluster's rule (cluster_hash_rule);
// picoroute_bucket_id_with_count by 25.5's, picoroute_bucket_id_for_version by its version's.
uint32_t hash_key_arguments(FunctionCallInfo fcinfo, int first_argno, uint32_t bucket_count,
                            bool *key_is_null, HashRule rule);

}  // namespace picoroute::pg
