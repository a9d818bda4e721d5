// What an instance's answer proves about the statement it answers: refused before running
// (sending it again cannot apply it twice), outcome unknown, or failed; which errors a read is sent
// again after; and whether Picodata asked for a leader read. The remote layer hands an answer over
// as plain data (Answer); the texts are read from the error's primary message and SQLSTATE.
//
// Every Picodata error reaches a pgproto client as SQLSTATE XX000 (src/pgproto/error.rs,
// PgError::code, every tag); only the text tells a refusal before running from a failure during
// or after it. Picodata puts prefixes in front of these texts ("sbroad: " for a coordinator's
// error, src/traft/error.rs:139 at 25.5.10 and 26.1.1 to 26.3.0; "Error on replicaset <uuid>: "
// around a storage's answer, src/sql/dispatch.lua:252/364 at 26.1.1 to 26.3.0), so they are
// matched as substrings. Read in Picodata's source:
//
// Refusals before running (refused_before_running):
// - "retry is required: DML was sent to the replica during master switchover": a write reached a
//   demoted master (proc_sql_execute, src/sql.rs:2827-2830 at 26.1.2 and 26.1.6, 2910-2911 at
//   26.2.1-rc1 and 26.3.0: before the plan runs).
// - "Can't modify data on a read-only instance": the same case before 26.1.2 (tarantool's
//   ER_READONLY, src/box/errcode.h of Picodata's tarantool fork; a read-only instance cannot
//   have written anything).
// - "instance is read-only: ": the new master did not become writable in time (src/sql.rs:2835
//   at 26.1.6, 2916 at 26.2.1-rc1 and 26.3.0, before the plan runs).
// - "Failed to get replicaset from bucket": the coordinator could not route (src/sql/dispatch.rs:
//   508 at 25.5.10, 1372 at 26.1.1, 1382 at 26.1.6, 1375 at 26.2.1-rc1 to 26.3.0; before
//   sending).
// - "Failed to add a storage reference", "Failed to use a storage reference": the storage refused
//   before the plan runs (src/sql.rs:2709/2714 at 25.5.10, 2737/2742 at 26.1.1, 2752/2757 at
//   26.1.6, 2833/2838 at 26.2.1-rc1 and 26.3.0); "vshard storage is not configured" likewise
//   (src/sql.rs:2745 at 26.1.6, 2826 at 26.3.0).
// - "failed to add local bucket reference: ", "failed to use local bucket reference: " and
//   "failed to switch user for add|use local bucket reference": the 26.1.1+ local fast path at
//   the owner's master could not take its reference, before running (with_admin_su and
//   with_local_bucket_ref in src/sql/dispatch.rs:925-964 at 26.1.1, 934-973 at 26.1.6, 910-949
//   at 26.2.1-rc1 to 26.3.0, behind "sbroad: "). Not "failed to delete local bucket reference",
//   which comes after running.
// - "cannot satisfy \"forward = off\": buckets are not present on the current node,": the
//   statement's buckets belong to one other replicaset (a stale owner: the new one accepts it;
//   enforce_forward_option in src/sql/router.rs:512, 26.2.1-rc1 to 26.3.0, before dispatch). Its
//   other reasons are refusals too, but no instance accepts such a statement under forward = off:
//   sending it again cannot help, so they are not listed.
//
// Such a refusal proves nothing was applied only where the statement touched one replicaset: a
// statement that spans several may have been applied by the others (the caller decides that).
#pragma once
#include "core/firewall.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace picoroute::routing {

// An instance's answer to one statement, as the remote layer read it.
struct Answer {
    enum class Status {
        Rows,     // rows (possibly none)
        Command,  // a command status: `counted` rows changed, or no count (TRUNCATE TABLE)
        Error,    // an error: `sqlstate` and `message` (its primary text; both "" when it had none)
        Other,    // anything else (never from Picodata)
    };
    Status status = Status::Other;
    std::string sqlstate;
    std::string message;
    bool counted = false;
    uint64_t rows = 0;  // Rows: rows received; Command: rows changed, when counted
    bool error() const { return status == Status::Error; }
};

// Whether `message` (a remote error's primary text) is one of the refusals above.
bool refused_before_running(std::string_view message);

// Whether a read that failed with this remote error is sent again (after the map caught up):
// - a refusal above (nothing ran);
// - "Error on replicaset <uuid>: " followed by a failure of the coordinator's connection to that
//   replicaset (net.box's "Peer closed" and ER_NO_CONNECTION "Connection is not established",
//   src/box/lua/net_box.c and src/box/errcode.h of Picodata's tarantool fork, branch
//   2.11.5-picodata; the exact pins of the tags are not in the mirror read): a read changes
//   nothing, so it is safe, and a refreshed map sends it to the new master of a switchover. The
//   same prefix in front of a storage's own error of the statement is not retried (it would fail
//   again for picoroute.failover_wait).
// Not retried: "dql timeout exceeded" (the statement's deadline, 360 s by default, is spent:
// src/sql/dispatch.lua:90 at 26.1.1 to 26.3.0, 97 at 25.5.10), and no class 08 code: Picodata's
// only one is 08P01, a protocol violation (src/pgproto/error.rs), which another try repeats.
bool read_retryable(std::string_view message);

// Whether Picodata refused a read because it must run on the leaders: the read preference asked
// for is not "leader" while the statement reads an unlogged table or the cluster has
// sql_preemption on (effective_read_preference in src/sql/dispatch.rs:741-770 at 26.1.1, 750-779
// at 26.1.6, 726-755 at 26.2.1-rc1 to 26.3.0: "invalid option: read_preference must be set to
// 'leader' when querying unlogged tables" / "... when sql_preemption is enabled", behind
// "sbroad: "; checked before dispatch, so nothing ran). The read goes again with
// read_preference = leader.
bool needs_leader_read(std::string_view message);

// What a remote error says of the statement on the instance that answered it.
enum class Outcome {
    NotRun,   // refused before running (above), or refused at parsing or binding: not applied
    Unknown,  // the error came after the statement was dispatched: it may have been applied
    Failed,   // an error of the statement itself: nothing here proves what it applied
};

// NotRun: refused_before_running, needs_leader_read, Picodata's parse errors ("rule parsing
// error", SbroadError::ParsingError of Entity::Rule, sql-planner/src/errors.rs:391 at 26.1.6),
// and the codes pgproto gives only before execution (22P02, 22P03, 0A000 at Bind, 42P03, 42P05,
// 42999 for an invalidated statement, 08P01: src/pgproto/error.rs). Unknown: "dql timeout
// exceeded" and "Error on replicaset " (a storage's answer that did not come, or came as an
// error, after the statement was sent to it: src/sql/dispatch.lua, one_step_dispatch). Failed:
// everything else.
Outcome outcome_of(std::string_view sqlstate, std::string_view message);

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

// ---- the same questions of an Answer (no error: none of them) ----------------------------------

// Whether a statement answered with `answer` may be sent again: a refusal before running; for a
// `read`, also a coordinator's lost connection to a replicaset (read_retryable).
bool resendable(const Answer &answer, bool read);
// What the answer proves of the statement on the instance that answered (outcome_of); Failed for
// an answer that is not an error.
Outcome outcome(const Answer &answer);
// Whether the answer proves that a write applied nothing there (the write log may say so): a
// refusal before running of a write that does not span several replicasets (Picodata does not
// write such a statement atomically).
bool proven_not_run(const Answer &answer, bool spans);
// Whether the answer is Picodata's refusal of a read that must be a leader read
// (needs_leader_read).
bool leader_read_refusal(const Answer &answer);

}  // namespace picoroute::routing
