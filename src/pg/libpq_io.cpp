// The latch-aware libpq layer of the worker and the backends (see libpq_io.h).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "storage/fd.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include "pg/libpq_io.h"

#include "core/remote_text.h"
#include "pg/guard.h"

namespace picoroute::pg {

namespace {

constexpr uint32_t kSocketEvents = WL_SOCKET_READABLE | WL_SOCKET_WRITEABLE;

// Milliseconds left until `deadline`: -1 without one (wait forever), 0 once it has passed.
long timeout_ms(TimestampTz deadline) {
    if (deadline == 0)
        return -1;
    long left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
    return left > 0 ? left : 0;
}

// Sets up (or retargets) the kept wait event set for `want`. False when there is no file
// descriptor to spare for it: the caller then waits the one-shot way.
bool prepare_kept(KeptWaitSet &k, PGconn *conn, uint32_t want) {
    bool have_set = true;
    pg_call([&] {
        if (k.wait_set == nullptr) {
            if (!AcquireExternalFD()) {
                have_set = false;
                return;
            }
            ReleaseExternalFD();
            k.wait_set = CreateWaitEventSet(TopMemoryContext, 3);
            AddWaitEventToSet(k.wait_set, WL_LATCH_SET, PGINVALID_SOCKET, MyLatch, nullptr);
            AddWaitEventToSet(k.wait_set, WL_EXIT_ON_PM_DEATH, PGINVALID_SOCKET, nullptr, nullptr);
            k.socket_pos = AddWaitEventToSet(k.wait_set, want, PQsocket(conn), nullptr, nullptr);
            k.socket_events = want;
        } else if (k.socket_events != want) {
            ModifyWaitEvent(k.wait_set, k.socket_pos, want, nullptr);
            k.socket_events = want;
        }
    });
    return have_set;
}

// One wait on the kept set; returns the events seen (the latch already reset).
uint32_t wait_kept_once(KeptWaitSet &k, long timeout) {
    uint32_t seen = 0;
    pg_call([&] {
        WaitEvent events[3];
        int n = WaitEventSetWait(k.wait_set, timeout, events, 3, PG_WAIT_EXTENSION);
        for (int i = 0; i < n; i++)
            seen |= events[i].events;
        if (seen & WL_LATCH_SET)
            ResetLatch(MyLatch);
    });
    return seen;
}

// One wait building its own set; returns the events seen (the latch already reset).
uint32_t wait_one_shot(PGconn *conn, uint32_t want, long timeout) {
    int events = WL_LATCH_SET | WL_EXIT_ON_PM_DEATH | want | (timeout >= 0 ? WL_TIMEOUT : 0);
    pgsocket sock = PQsocket(conn);
    int rc = 0;
    pg_call([&] {
        rc = WaitLatchOrSocket(MyLatch, events, sock, timeout, PG_WAIT_EXTENSION);
        if (rc & WL_LATCH_SET)
            ResetLatch(MyLatch);
    });
    return static_cast<uint32_t>(rc);
}

}  // namespace

bool latch_checks_interrupts() {
    pg_call([] { CHECK_FOR_INTERRUPTS(); });
    return false;
}

void release_wait_set(KeptWaitSet &kept) noexcept {
    if (kept.wait_set != nullptr)
        FreeWaitEventSet(kept.wait_set);
    kept.wait_set = nullptr;
}

TimestampTz deadline_in(int ms) {
    return TimestampTzPlusMilliseconds(GetCurrentTimestamp(), ms);
}

IoOutcome Waiter::wait(bool for_write) const {
    uint32_t want = for_write ? WL_SOCKET_WRITEABLE : WL_SOCKET_READABLE;
    bool use_kept = kept != nullptr && prepare_kept(*kept, conn, want);
    for (;;) {
        long timeout = timeout_ms(deadline);
        if (timeout == 0)
            return IoOutcome::Timeout;
        uint32_t seen =
            use_kept ? wait_kept_once(*kept, timeout) : wait_one_shot(conn, want, timeout);
        if ((seen & WL_LATCH_SET) && on_latch != nullptr && on_latch())
            return IoOutcome::Abandoned;
        if (seen & want & kSocketEvents)
            return IoOutcome::Done;
    }
}

IoOutcome finish_connect(const Waiter &waiter) {
    if (PQstatus(waiter.conn) == CONNECTION_BAD)
        return IoOutcome::Failed;
    PostgresPollingStatusType status = PGRES_POLLING_WRITING;
    while (status != PGRES_POLLING_OK) {
        if (status == PGRES_POLLING_FAILED)
            return IoOutcome::Failed;
        IoOutcome waited = waiter.wait(status == PGRES_POLLING_WRITING);
        if (waited != IoOutcome::Done)
            return waited;
        status = PQconnectPoll(waiter.conn);
    }
    return IoOutcome::Done;
}

IoOutcome flush_output(const Waiter &waiter) {
    for (;;) {
        int flushed = PQflush(waiter.conn);
        if (flushed == 0)
            return IoOutcome::Done;
        if (flushed < 0)
            return IoOutcome::Failed;
        IoOutcome waited = waiter.wait(true);
        if (waited != IoOutcome::Done)
            return waited;
        // The server may be answering already: read what it sent so that it is not blocked.
        if (!PQconsumeInput(waiter.conn))
            return IoOutcome::Failed;
    }
}

IoOutcome await_result(const Waiter &waiter) {
    while (PQisBusy(waiter.conn)) {
        IoOutcome waited = waiter.wait(false);
        if (waited != IoOutcome::Done)
            return waited;
        if (!PQconsumeInput(waiter.conn))
            return IoOutcome::Failed;
    }
    return IoOutcome::Done;
}

bool is_copy_result(const PGresult *result) {
    ExecStatusType status = PQresultStatus(result);
    return status == PGRES_COPY_IN || status == PGRES_COPY_OUT || status == PGRES_COPY_BOTH;
}

IoOutcome read_last_result(const Waiter &waiter, ResultPtr &last) {
    for (;;) {
        IoOutcome read = await_result(waiter);
        if (read != IoOutcome::Done)
            return read;
        PGresult *result = PQgetResult(waiter.conn);
        if (result == nullptr)
            return IoOutcome::Done;
        last.reset(result);
        if (is_copy_result(result))
            return IoOutcome::Failed;
    }
}

std::string libpq_message(const char *message) {
    // A server's text may be anything: bounded and valid UTF-8 before it reaches an error report.
    return trimmed_message(message ? message : "");
}

std::string libpq_message_line(const char *message) {
    return message_line(message ? message : "");
}

}  // namespace picoroute::pg
