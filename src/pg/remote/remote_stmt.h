// Named remote statements: each cached connection keeps the statements it runs prepared on the
// instance, so that Picodata parses and plans a shape once per connection, not once per execution.
//
// - A statement text is prepared (Parse of a named statement, one round trip) the second time the
//   connection runs it; the first time it goes unnamed, as before, so that texts that never repeat
//   cost nothing more. Later executions are a Bind/Execute of the named statement, one round trip.
// - Per connection the texts are kept in an LRU of picoroute.remote_statement_cache_size entries;
//   an evicted prepared statement is closed on the instance (DEALLOCATE, which Picodata parses)
//   before the next statement is sent. 0 disables the cache: every statement goes unnamed.
// - Only connections that asked Picodata to report invalidated statements (the startup option
//   pico_stmt_invalidation=true, sent from Picodata 26.1 on) use named statements. After DDL on a
//   table a statement prepared before fails at Bind with SQLSTATE 42999; it is then prepared again
//   and run once more (it was not applied: Bind failed).
// - The statements of all clients of an instance share its storage (pg_statement_max). A Parse
//   refused because it is full makes the connection close its named statements and send every
//   statement unnamed from then on; a statement whose own Parse was refused so is sent once more
//   (nothing of it ran). core/statement_cache.h has the policy.
// - Parse carries no parameter types: Picodata infers them from the same text as for an unnamed
//   statement, so values are typed and hashed exactly as before.
// - A statement's parameters and the routed bucket (bucket_id = $n) are parameters, so one text
//   serves every bucket.
#pragma once

#include "pg/remote/connection.h"

#include <string>
#include <vector>

namespace picoroute::pg::remote {

// Like send_to: a cached connection to `address` (reopened once if the send fails at once on a
// reused connection), the statement sent named or unnamed as above. Throws ConnectionFailure
// (sent = false) when nothing of the statement left this process.
Connection *send_routed(const std::string &address, const ConnParams &params,
                        const std::string &sql, const std::vector<const char *> &values);

// True when `result` is the answer of a named statement of `c` that Picodata reports invalidated
// (SQLSTATE 42999) and that was not re-prepared for this execution yet: the statement is marked to
// be prepared again. Also true, once, when the statement's Parse was refused because the
// instance's statement storage is full while `c` held prepared statements: they are given back
// (closed) and the statement goes unnamed. Call with every result that ends a statement sent by
// send_routed.
bool statement_invalidated(Connection *c, const PGresult *result);
// Whether `result` is one of the two answers statement_invalidated may answer by sending the
// statement again (an invalidation, a Parse refused for full storage), without its side effects:
// what a meter of a streamed answer, which sees the result before the decision, leaves uncounted.
bool may_be_resent(const PGresult *result);
// After statement_invalidated: prepares the statement again (or closes the statements given back)
// and sends it once more, with the same parameter values. The connection must be idle (its answer
// read).
void resend_invalidated(Connection *c);

// collect_result, with the re-prepare and second execution after an invalidation.
PGresult *collect_routed(Connection *c);

}  // namespace picoroute::pg::remote
