// What an instance's answer (a PGresult) says under picoroute's rules on remote errors
// (core/routing/answer.h): whether the statement may be sent again, what it proves of a write, and
// whether Picodata asked for a leader read. The texts are read from the error's primary message
// and SQLSTATE.
#pragma once

extern "C" {
#include "postgres.h"
#include "libpq-fe.h"
}

#include "core/routing/answer.h"

#include <string>

namespace picoroute::pg::remote {

// The primary text of a remote error after which the statement may be sent again (a refusal
// before running; for a `read`, also a coordinator's lost connection to a replicaset:
// routing::read_retryable), or nullptr.
const char *refusal_text(const PGresult *result, bool read);

// What the error in `result` proves of the statement on the instance that answered
// (routing::outcome_of); Failed for no error.
routing::Outcome answer_outcome(const PGresult *result);

// What a write that failed with the error in `result` on instance `address` left there, for the
// DETAIL (followed by the write log's summary): "not applied" only for an error Picodata raises
// before running the statement; "may have been applied" when it may have run (`may_span`: on
// some of the replicasets it spans, which Picodata does not write atomically).
std::string failed_on(const std::string &address, bool may_span, const PGresult *result);
// Whether that error proves the write applied nothing (the write log may say so).
bool proven_not_run(bool may_span, const PGresult *result);

// Whether `result` is Picodata's refusal of a read that must be a leader read
// (routing::needs_leader_read).
bool leader_read_refusal(const PGresult *result);

}  // namespace picoroute::pg::remote
