// How long the remote layer sleeps and waits between attempts, and when it wakes the worker: on
// plain numbers (instants in microseconds, PostgreSQL's TimestampTz; settings as the GUCs hold
// them). The remote layer (src/pg/remote/rounds.cpp) only sleeps, wakes and waits as told.
//
// - After a round with failures, an unreachable instance may mean the topology changed: the worker
//   is woken, at most once per picoroute.refresh_interval per session (a storm of failing
//   statements must not become a storm of refreshes), and its refresh is waited for a short while
//   (no longer than a connection attempt, 2 s, or picoroute.failover_wait).
// - Before each Wait step of a failover (failover.h): an interruptible sleep of 200 ms (at least
//   1 ms, no later than the deadline), then a refresh of the map waited for up to 1 s within what
//   is left of the deadline after that sleep.
#pragma once
#include "core/firewall.h"
#include "core/routing/failover.h"

#include <cstdint>

namespace picoroute::routing {

// The settings the pauses depend on.
struct PauseSettings {
    int refresh_interval_ms = 0;  // picoroute.refresh_interval
    int connect_timeout_s = 0;    // picoroute.connect_timeout
    int failover_wait_ms = 0;     // picoroute.failover_wait
};

// Milliseconds from `now` to `deadline`, rounded up; 0 when it has passed (PostgreSQL's
// TimestampDifferenceMilliseconds).
int64_t millis_left(Micros now, Micros deadline);

// After a round with failures at `now`, the session having woken the worker last at `last_wake`
// (0: never).
struct Wake {
    bool wake = false;        // wake the worker now, and wait for its refresh
    Micros last_wake = 0;     // the session's last wake from now on
    int refresh_wait_ms = 0;  // how long that refresh is waited for (when `wake`)
};
Wake wake_after_failures(Micros now, Micros last_wake, const PauseSettings &settings);

// A failover's Wait step at `now`, its deadline being `until` (Step::until).
struct Pause {
    int sleep_ms = 1;         // the interruptible sleep first
    int refresh_wait_ms = 0;  // then a refresh asked for and waited for this long (0: asked only)
};
Pause pause_before_retry(Micros now, Micros until);

}  // namespace picoroute::routing
