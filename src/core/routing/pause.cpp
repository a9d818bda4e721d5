// Sleeps, waits and wakes between attempts (see pause.h).
#include "core/routing/pause.h"

#include <algorithm>
#include <climits>

namespace picoroute::routing {

namespace {

constexpr int64_t kRetrySleepMs = 200;      // the sleep before a Wait step's refresh
constexpr int64_t kRefreshWaitMs = 1000;    // a Wait step's refresh waited for at most
constexpr int kAfterFailuresWaitMs = 2000;  // the refresh after a failed round, at most

}  // namespace

int64_t millis_left(Micros now, Micros deadline) {
    if (deadline <= now)
        return 0;
    Micros diff = deadline - now;
    if (diff >= static_cast<Micros>(INT_MAX) * 1000 - 999)
        return INT_MAX;
    return (diff + 999) / 1000;
}

Wake wake_after_failures(Micros now, Micros last_wake, const PauseSettings &settings) {
    Wake out;
    out.wake = last_wake == 0 ||
               now - last_wake >= static_cast<Micros>(settings.refresh_interval_ms) * 1000;
    out.last_wake = out.wake ? now : last_wake;
    out.refresh_wait_ms = std::min(
        {settings.connect_timeout_s * 1000, kAfterFailuresWaitMs, settings.failover_wait_ms});
    return out;
}

Pause pause_before_retry(Micros now, Micros until) {
    int64_t left = millis_left(now, until);
    Pause out;
    out.sleep_ms = static_cast<int>(std::max<int64_t>(std::min(left, kRetrySleepMs), 1));
    out.refresh_wait_ms =
        static_cast<int>(std::max<int64_t>(std::min(left - kRetrySleepMs, kRefreshWaitMs), 0));
    return out;
}

}  // namespace picoroute::routing
