// Routes in the server log (picoroute.log_routes): one line per remote statement once its answer
// arrived, as auto_explain logs plans: how it was routed, the instance it went to, its buckets,
// its rows and its time, at the level the setting names; statements faster than
// picoroute.log_routes_min_duration are not logged.
#pragma once

#include <cstdint>

namespace picoroute::pg::remote {

struct Job;

// Whether routes are logged now (picoroute.log_routes is not off): the answer's time is measured.
bool route_log_on() noexcept;
// Logs the route of `job`, whose answer arrived after `micros` with `rows` rows (read, or written
// by a command), `failed` for an error answer.
void log_route(const Job &job, uint64_t rows, uint64_t micros, bool failed);

}  // namespace picoroute::pg::remote
