// PostgreSQL SQLSTATEs for Picodata's errors. Picodata answers nearly every error with XX000
// (src/pgproto/error.rs: PgErrorCode has ten codes, and every planner, executor and storage error
// is InternalError), so an application written for PostgreSQL could not tell a duplicate key from
// a lost instance. picoroute reads the text and raises PostgreSQL's code for the errors whose
// meaning is certain; every other text stays XX000.
//
// Each text was read in Picodata's source (and its tarantool fork's: the branch picodata-25.5 of
// picodata/tarantool; the exact submodule commits of the 26.x tags are not available, so the
// 26.x texts rest on Picodata's own integration tests at 26.3.0, cited with them). A text is
// matched anywhere in the message: Picodata wraps a storage's error on its way to the client
// ("sbroad: ", the Lua dispatcher's "Error on replicaset <uuid>: ", dispatch.lua:255@25.5.10,
// tarantool's "Failed to execute SQL statement: ", errcode.h:214@picodata-25.5).
#pragma once
#include "core/firewall.h"

#include <string_view>

namespace picoroute::routing {

struct SqlstateRule {
    std::string_view text;      // matched anywhere in the message, case-sensitively
    std::string_view sqlstate;  // PostgreSQL's code
    std::string_view source;    // where Picodata (or tarantool) writes it
};

// The table, in the order it is searched.
const SqlstateRule *sqlstate_rules(size_t *count);

// The SQLSTATE picoroute raises for a remote error: the remote one when it is not XX000 (Picodata
// had a code of its own), else the code of the first rule whose text the message contains, else
// XX000.
std::string_view sqlstate_for_remote_error(std::string_view remote_sqlstate,
                                           std::string_view message);

// Whether an error a server sent while a connection started (libpq's verbose message carries its
// SQLSTATE) is final: another attempt, at this instance or another, would get the same answer (a
// failed login, 28xxx; a database that does not exist, 3D000; a bad startup option, 22023 or
// 42704; ...). Only a server starting, stopping or out of connection slots may take the next
// attempt: class 08 (connection exception), class 53 (insufficient resources: too many
// connections) and 57P01-57P03 (shutdown, crash shutdown, cannot connect now).
bool startup_refusal_is_final(std::string_view sqlstate);

}  // namespace picoroute::routing
