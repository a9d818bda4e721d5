// Reads that must run on the leaders (the replicasets' masters) whatever a connection's
// read_preference says, and how picoroute says so to Picodata.
//
// From 26.1 a session's read_preference is its startup option, else the cluster's setting (which
// may be replica or any: core/session_options.h). picoroute names it in every connection's
// startup options; a read that means the leader on a connection that names another goes over a
// second connection to the same instance whose startup options say read_preference=leader (never
// an OPTION clause: Picodata takes OPTION (read_preference) on reads only, and refuses it on
// writes: "read_preference option is supported only for DQL queries",
// sql-planner/src/ir/options.rs:437 at 26.1.1, sql-ir/src/ir/options.rs:479 at 26.3.0).
//
// A read means the leader when its server says leader, when it reads an unlogged table (not
// replicated: the replicas do not have its rows), when Picodata refused a read of its server for
// not being a leader read (sql_preemption on: core/routing/answer.h, needs_leader_read), and when
// the current transaction wrote through its server (a replica may not have the write yet).
#pragma once

extern "C" {
#include "postgres.h"
#include "libpq-fe.h"
}

#include "pg/remote/connect.h"

#include <string>

namespace picoroute::pg::remote {

// `params` for a read that means the leader: the same with read_preference=leader in the startup
// options when they name another; `params` itself when they name the leader or none (a version
// without the option, execution_options 'off': nothing can be said then).
ConnParams leader_params(ConnParams params);

// Picodata refused a read of `server` (a foreign server's name, "" for picoroute.conninfo)
// because sql_preemption is on: the session's later reads of that server are leader reads.
void learn_leader_reads(const std::string &server);
bool leader_reads_learned(const std::string &server);

// The current transaction wrote through `server`: its reads of that server are leader reads until
// the transaction ends. C++: call inside guarded().
void note_server_write(const std::string &server);
bool server_written(const std::string &server);

// After Picodata refused a read sent with `params` for not being a leader read
// (core/routing/answer.h, leader_read_refusal): learns it of the server when sql_preemption was the
// reason, and sets *params to leader_params. False when those say no more than `params` (the
// refusal is then the answer). The core decides both (core/routing/leader_reads.h).
bool switch_to_leader_reads(const PGresult *refusal, ConnParams *params);
}  // namespace picoroute::pg::remote
