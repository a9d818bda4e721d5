// Which remote errors prove that Picodata refused a statement before running it, so that sending
// it again (after the topology map has caught up) cannot apply it twice.
//
// Every Picodata error reaches a pgproto client as SQLSTATE XX000; only the text tells a refusal
// before running from a failure during or after it. The texts, read in Picodata's source:
//
// - "retry is required: DML was sent to the replica during master switchover": a write reached a
//   demoted master (src/sql.rs, 26.1.2 to 26.3.0, before the plan runs).
// - "Can't modify data on a read-only instance": the same case before 26.1.2 (tarantool's
//   ER_READONLY; a read-only instance cannot have written anything).
// - "instance is read-only: ": the new master did not become writable in time (src/sql.rs,
//   26.1.2+, before the plan runs).
// - "Failed to get replicaset from bucket": the coordinator could not route (src/sql/dispatch.rs,
//   before sending).
// - "Failed to add a storage reference", "Failed to use a storage reference", "vshard storage is
//   not configured": the storage refused before the plan runs (src/sql.rs).
// - "cannot satisfy \"forward = off\": buckets are not present on the current node,": the
//   statement's buckets belong to one other replicaset (a stale owner: the new one accepts it;
//   enforce_forward_option in src/sql/router.rs, 26.2.1-rc1 to 26.3.0, before dispatch). Its other
//   reasons ("buckets span multiple nodes ...") are refusals too, but no instance accepts such a
//   statement under forward = off: sending it again cannot help, so they are not listed.
//
// Such a refusal proves nothing was applied only where the statement touched one replicaset: a
// statement that spans several may have been applied by the others (the caller decides that).
#pragma once
#include "core/firewall.h"

#include <string_view>

namespace picoroute::retry {

// Whether `message` (a remote error's primary text) is one of the refusals above.
bool refused_before_running(std::string_view message);

// Whether a read that failed with this remote error may be sent again: a refusal above, or a
// connection failure the answering instance met on the way to another (SQLSTATE class 08, e.g. a
// coordinator that could not reach a replicaset's master during a switchover). A read changes
// nothing, so sending it again is safe; an error of the statement itself is not retried.
bool read_retryable(std::string_view sqlstate, std::string_view message);

// Whether libpq's message of a failed connection attempt says the server closed the connection
// while it was opening: what a client sees when Picodata refuses its startup packet. Picodata
// answers nothing then (ClientParams::new, src/pgproto/client/startup.rs, fails on an options item
// without '=', a value it does not take, a missing user; PgClient::accept,
// src/pgproto/client.rs:40, writes an ErrorResponse for a failed authentication only; 25.5.10
// to 26.2.1-rc2): the instance was reached and nothing was sent, so it says nothing about the
// network or the instance's health, but an instance that stopped at that moment looks the same.
bool closed_at_startup(std::string_view libpq_message);

// The explanation picoroute gives with such a failure (for a DETAIL).
extern const char *const kClosedAtStartupDetail;

}  // namespace picoroute::retry
