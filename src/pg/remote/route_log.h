// Routes in the server log (picoroute.log_routes): one line per remote statement once its answer
// arrived, as auto_explain logs plans: how it was routed, the instance it went to, its buckets,
// its rows and its time, at the level the setting names; statements faster than
// picoroute.log_routes_min_duration are not logged.
#pragma once

#include "core/routing/target.h"

#include <cstdint>
#include <string>

namespace picoroute::pg::remote {

// Whether routes are logged now (picoroute.log_routes is not off): the answer's time is measured.
bool route_log_on() noexcept;
// Logs the route of a statement (`sql`, sent to `target`), whose answer arrived after `micros`
// with `rows` rows (read, or written by a command), `failed` for an error answer.
void log_route(const routing::Target &target, const std::string &sql, uint64_t rows,
               uint64_t micros, bool failed);

}  // namespace picoroute::pg::remote
