// Bounded keyless reads of a routed statement (chunked.cpp): when Picodata answers that a base
// scan's keyless statement has more rows than its bound, the statement is read again in chunks of
// buckets (pg/remote/chunked_read.h says how); other reads get a hint naming the bound.
#pragma once

#include "pg/fdw/routed_statement.h"
#include "pg/guard.h"
#include "pg/remote/chunked_read.h"
#include "pg/remote/rounds.h"

#include <vector>

namespace picoroute::pg::fdw {

// The buffered execution of st with `jobs` failed with `e` (C++: inside guarded()). For the
// row-limit error of a base scan that can be read in chunks (a sharded table read without a key,
// under a bound), reads every job in chunks (no row was handed over) and returns their answers.
// Otherwise adds to a row-limit error a hint that names the bound's setting, and returns false:
// the caller rethrows `e`.
bool read_in_chunks(RoutedStatement *st, const std::vector<Job> &jobs, Retry retry,
                    const PgError &e, std::vector<ResultPtr> *out);

// The stream st->answers.stream failed with `e` (C++: inside guarded()), in start() when
// `starting`. For the row-limit error of a chunkable base scan whose failed job handed over no row
// (a coordinator gathers an answer before it sends a row), sets st->answers.chunked to read that
// job in chunks and makes the stream skip it (or drops a stream of one job that failed to start),
// and returns true. Otherwise adds the hint, as read_in_chunks, and returns false.
bool fall_back_to_chunks(RoutedStatement *st, const PgError &e, bool starting);

}  // namespace picoroute::pg::fdw
