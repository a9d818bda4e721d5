// The session options picoroute gives Picodata in the startup packet's "options" field, in
// Picodata's own syntax: name=value items separated by commas, split at "," and "=" with no
// trimming (ClientParams::new in src/pgproto/client/startup.rs, the same at 25.5.1, 26.1.1 and
// 26.3.0); an item named twice takes its last value there (the options accumulator is
// overwritten).
//
// read_preference (26.1+): a session that does not set it takes the cluster's setting, which
// ALTER SYSTEM may set to replica or any (src/config/mod.rs:2362 at 26.1.1, 2681 at 26.2.1-rc1
// and 26.3.0; src/pgproto/backend.rs:110-113 at 26.1.1 and 26.3.0: the startup options, else
// the cluster's; a statement's OPTION wins over both, sql-planner/src/ir/options.rs at 26.1.1).
// So picoroute always says which it means, leader included.
#pragma once
#include "core/firewall.h"

#include <string>
#include <string_view>

namespace picoroute {

// The "options" value for a connection: read_preference=<read_preference> when it is not ""
// (the version has the option), then pico_stmt_invalidation=true when asked. "" for none.
std::string startup_options(std::string_view read_preference, bool stmt_invalidation);

// `options` (a value in Picodata's syntax, possibly "") with its read_preference item set to
// `read_preference`: every read_preference item is dropped, and the new one appended (last, so
// it wins whatever was there).
std::string with_read_preference(std::string_view options, std::string_view read_preference);

}  // namespace picoroute
