#include "core/routing/pause.h"

#include <gtest/gtest.h>

#include <climits>

using picoroute::routing::Micros;
using picoroute::routing::millis_left;
using picoroute::routing::Pause;
using picoroute::routing::pause_before_retry;
using picoroute::routing::PauseSettings;
using picoroute::routing::Wake;
using picoroute::routing::wake_after_failures;

namespace {

constexpr Micros kMs = 1000;
constexpr Micros kNow = 1'000'000'000;

// picoroute's defaults: refresh every 1 s, connect within 5 s, fail over within 10 s.
PauseSettings defaults() {
    return {1000, 5, 10000};
}

}  // namespace

TEST(PauseTest, MillisLeftRoundUpAndStopAtTheDeadline) {
    EXPECT_EQ(millis_left(kNow, kNow + 1500 * kMs), 1500);
    EXPECT_EQ(millis_left(kNow, kNow + 1), 1);
    EXPECT_EQ(millis_left(kNow, kNow + 1001), 2);
    EXPECT_EQ(millis_left(kNow, kNow), 0);
    EXPECT_EQ(millis_left(kNow, kNow - 5 * kMs), 0);
    EXPECT_EQ(millis_left(0, INT64_MAX), INT_MAX);
}

TEST(PauseTest, AWaitStepSleeps200MsThenWaitsForTheRefreshUpTo1s) {
    Pause p = pause_before_retry(kNow, kNow + 10'000 * kMs);
    EXPECT_EQ(p.sleep_ms, 200);
    EXPECT_EQ(p.refresh_wait_ms, 1000);
    p = pause_before_retry(kNow, kNow + 700 * kMs);
    EXPECT_EQ(p.sleep_ms, 200);
    EXPECT_EQ(p.refresh_wait_ms, 500);  // what is left after the sleep
}

TEST(PauseTest, AWaitStepNeverSleepsPastItsDeadline) {
    Pause p = pause_before_retry(kNow, kNow + 150 * kMs);
    EXPECT_EQ(p.sleep_ms, 150);
    EXPECT_EQ(p.refresh_wait_ms, 0);  // the refresh is asked for, not waited for
    p = pause_before_retry(kNow, kNow + 200 * kMs);
    EXPECT_EQ(p.sleep_ms, 200);
    EXPECT_EQ(p.refresh_wait_ms, 0);
}

TEST(PauseTest, AWaitStepPastItsDeadlineStillSleepsOneMillisecond) {
    Pause p = pause_before_retry(kNow, kNow - 3 * kMs);
    EXPECT_EQ(p.sleep_ms, 1);
    EXPECT_EQ(p.refresh_wait_ms, 0);
    p = pause_before_retry(kNow, kNow);
    EXPECT_EQ(p.sleep_ms, 1);
    EXPECT_EQ(p.refresh_wait_ms, 0);
}

TEST(PauseTest, TheFirstFailedRoundOfASessionWakesTheWorker) {
    Wake w = wake_after_failures(kNow, 0, defaults());
    EXPECT_TRUE(w.wake);
    EXPECT_EQ(w.last_wake, kNow);
    EXPECT_EQ(w.refresh_wait_ms, 2000);
}

TEST(PauseTest, TheWorkerIsWokenAtMostOncePerRefreshInterval) {
    Wake w = wake_after_failures(kNow + 999 * kMs, kNow, defaults());
    EXPECT_FALSE(w.wake);
    EXPECT_EQ(w.last_wake, kNow);  // unchanged: the interval counts from the last wake
    w = wake_after_failures(kNow + 1000 * kMs, kNow, defaults());
    EXPECT_TRUE(w.wake);
    EXPECT_EQ(w.last_wake, kNow + 1000 * kMs);
}

TEST(PauseTest, TheRefreshAfterFailuresIsWaitedForNoLongerThanAConnectOrTheFailoverWait) {
    EXPECT_EQ(wake_after_failures(kNow, 0, {1000, 1, 10000}).refresh_wait_ms, 1000);
    EXPECT_EQ(wake_after_failures(kNow, 0, {1000, 5, 300}).refresh_wait_ms, 300);
    EXPECT_EQ(wake_after_failures(kNow, 0, {1000, 5, 0}).refresh_wait_ms, 0);
}
