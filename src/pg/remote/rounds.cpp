// Running routed statements on their instances (see rounds.h): rounds of sends and collects, and
// the failover steps the core decides.
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"
}

#include "pg/remote/rounds.h"

#include "core/routing/failover.h"
#include "core/routing/pause.h"
#include "pg/guard.h"
#include "pg/lookup.h"
#include "pg/remote/leader_reads.h"
#include "pg/settings.h"
#include "pg/stats/stats.h"
#include "pg/worker_status.h"

#include <optional>
#include <string_view>

namespace picoroute::pg::remote {

namespace {

using routing::Failure;

// A job that did not run in a round, and why.
struct Failed {
    size_t job;
    Failure failure;
};

Failure failure(Failure::Kind kind, std::string address, std::string message,
                std::string stalled = {}) {
    Failure f;
    f.kind = kind;
    f.address = std::move(address);
    f.message = std::move(message);
    f.stalled = std::move(stalled);
    return f;
}

routing::MapScope scope_now(const std::string &tier, ReadPref pref, const ConnParams &params) {
    return map_scope(tier, pref, params.picodata_version);
}

// Appends `extra` to the DETAIL of a PostgreSQL error carried as a PgError.
void add_detail(ErrorData *edata, const std::string &extra) {
    pg_call([&] {
        MemoryContext old = MemoryContextSwitchTo(edata->assoc_context);
        edata->detail = edata->detail ? psprintf("%s\n%s", edata->detail, extra.c_str())
                                      : pstrdup(extra.c_str());
        MemoryContextSwitchTo(old);
    });
}

// The jobs not to send now (routing::hold); none for a scatter over masters.
std::vector<routing::Hold> holds(const std::vector<Job> &jobs, const std::string &tier,
                                 ReadPref pref, Retry retry, const ConnParams &params) {
    std::vector<routing::Hold> out(jobs.size());
    if (retry == Retry::Never)
        return out;
    routing::MapScope map = scope_now(tier, pref, params);
    for (size_t i = 0; i < jobs.size(); i++)
        out[i] = routing::hold(map, jobs[i].target, jobs[i].sharded);
    return out;
}

// Sends every job of round `r`, then collects their answers; what did not run is added to
// `failures`.
void run_round(std::vector<Job> &jobs, const ConnParams &params,
               const std::vector<routing::Hold> &held, const std::vector<size_t> &round, size_t r,
               InFlight &inflight, std::vector<Failed> &failures) {
    std::vector<Connection *> conns(jobs.size(), nullptr);
    for (size_t i = 0; i < jobs.size(); i++) {
        if (round[i] != r)
            continue;
        if (held[i].held) {
            Failure::Kind kind =
                held[i].stalled.empty() ? Failure::Kind::Held : Failure::Kind::Stalled;
            failures.push_back({i, failure(kind, "", "", held[i].stalled)});
            continue;
        }
        try {
            conns[i] = send_job(jobs[i], params);
            inflight.add(conns[i]);
        } catch (const ConnectionFailure &f) {
            failures.push_back({i, failure(Failure::Kind::Unsent, f.address(), f.what())});
        }
    }
    for (size_t i = 0; i < jobs.size(); i++) {
        if (conns[i] == nullptr)
            continue;
        try {
            collect_job(jobs[i], conns[i]);
            inflight.done(conns[i]);
        } catch (const ConnectionFailure &f) {
            inflight.done(conns[i]);
            discard_connection(conns[i]);
            failures.push_back({i, failure(Failure::Kind::Lost, f.address(), f.what())});
        }
    }
}

// Sends every job and collects every answer, in rounds (routing::send_rounds); returns what did
// not run. An interrupt abandons what still runs, and says what it leaves behind.
std::vector<Failed> send_and_collect(std::vector<Job> &jobs, const ConnParams &params,
                                     const std::vector<routing::Hold> &held, WriteLog *log) {
    std::vector<Failed> failures;
    InFlight inflight;
    std::vector<std::string_view> addresses;
    for (const Job &job : jobs)
        addresses.push_back(job.target.address);
    size_t rounds = 0;
    std::vector<size_t> round = routing::send_rounds(addresses, &rounds);
    try {
        for (size_t r = 0; r < rounds; r++)
            run_round(jobs, params, held, round, r, inflight, failures);
    } catch (PgError &e) {
        std::vector<Abandoned> abandoned = inflight.abandon();
        if (log != nullptr)
            for (const Job &job : jobs)
                if (job.result)
                    log->record(job.target.address, answer_of(job.result.get()));
        std::string detail = routing::interrupted_detail(log, abandoned);
        if (!detail.empty())
            add_detail(e.data(), detail);
        throw;
    }
    return failures;
}

// Reads Picodata refused for not being leader reads (leader_reads.h) go again at once as leader
// reads, under `retry`; only where `params` named another read_preference (else the refusal is the
// answer).
void resend_as_leader_reads(std::vector<Job> &jobs, const ConnParams &params,
                            const std::string &tier, Retry retry, uint32_t *sent_again) {
    ConnParams leader = params;
    std::vector<size_t> refused;
    std::vector<Job> again;
    for (size_t i = 0; i < jobs.size(); i++) {
        ConnParams switched = params;
        if (!jobs[i].result || !routing::leader_read_refusal(answer_of(jobs[i].result.get())) ||
            !switch_to_leader_reads(jobs[i].result.get(), &switched))
            continue;
        leader = std::move(switched);
        refused.push_back(i);
        again.push_back(std::move(jobs[i]));
        again.back().result.reset();
        again.back().target = leader_target(again.back().target, tier);
    }
    if (again.empty())
        return;
    if (sent_again != nullptr)
        *sent_again += static_cast<uint32_t>(again.size());
    for (const Job &job : again)
        stats::statement_resent(job.target.address);
    run_jobs(again, leader, tier, ReadPref::Leader, retry, nullptr, sent_again);
    for (size_t k = 0; k < refused.size(); k++)
        jobs[refused[k]] = std::move(again[k]);
}

// The answers that refused a statement before running it become failures to send again where the
// core says so (routing::refusal).
void take_refusals(std::vector<Job> &jobs, const routing::MapScope &map, Retry retry, bool write,
                   std::vector<Failed> *failures) {
    if (retry == Retry::Never)
        return;
    for (size_t i = 0; i < jobs.size(); i++) {
        if (!jobs[i].result)
            continue;
        std::optional<Failure> refused =
            routing::refusal(map, jobs[i].target, answer_of(jobs[i].result.get()), retry, write);
        if (!refused)
            continue;
        failures->push_back({i, std::move(*refused)});
        jobs[i].result.reset();
    }
}

// Records what a write committed and where its outcome is unknown, then raises the first remote
// error (an answer: the instance was reachable), a write's with the core's DETAIL.
void check_answers(const std::vector<Job> &jobs, WriteLog *log,
                   const std::vector<Failed> &failures) {
    std::vector<Failure> parts;
    if (log != nullptr) {
        for (const Job &job : jobs)
            if (job.result)
                log->record(job.target.address, answer_of(job.result.get()));
        for (const Failed &f : failures) {
            if (f.failure.sent())
                log->record_unknown(f.failure.address);
            parts.push_back(f.failure);
        }
    }
    for (const Job &job : jobs) {
        if (!job.result)
            continue;
        routing::Answer answer = answer_of(job.result.get());
        if (log == nullptr || !answer.error()) {
            check_answer(job);
            continue;
        }
        check_answer(job, routing::write_error_detail(*log, job.target.address, job.may_span,
                                                      answer, parts));
    }
}

// Between two attempts: a short interruptible sleep, then a refresh of the map waited for within
// what is left of the deadline (routing::pause_before_retry says how long each).
void pause_before_retry(TimestampTz deadline) {
    routing::Pause pause = routing::pause_before_retry(GetCurrentTimestamp(), deadline);
    pg_call([&] {
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, pause.sleep_ms,
                        PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
        bool refresh_failed = false;
        (void)request_refresh_and_wait(pause.refresh_wait_ms, &refresh_failed);
    });
}

// Sends `job` to its target once (a failover's Send step) and tells the core what became of it.
routing::Attempt attempt(Job &job, const ConnParams &params, WriteLog *log) {
    routing::Attempt a;
    InFlight inflight;
    Connection *c = nullptr;
    try {
        c = send_job(job, params);
        inflight.add(c);
        collect_job(job, c);
        inflight.done(c);
    } catch (const ConnectionFailure &f) {
        if (c != nullptr) {
            inflight.done(c);
            discard_connection(c);
        }
        a.kind = f.sent() ? routing::Attempt::Kind::Lost : routing::Attempt::Kind::Unsent;
        a.address = f.address();
        a.message = f.what();
        return a;
    } catch (PgError &e) {
        std::string detail = routing::interrupted_detail(log, inflight.abandon());
        if (!detail.empty())
            add_detail(e.data(), detail);
        throw;
    }
    a.answer = answer_of(job.result.get());
    return a;
}

// The failover of one job that did not run: the core's steps, until it runs or gives up.
void fail_over(Job &job, const Failure &first, const ConnParams &params, const std::string &tier,
               ReadPref pref, WriteLog *log, TimestampTz since, uint32_t *sent_again) {
    // Every job here waits for the map to say where it goes now (a failover wait), counted at
    // the address that failed (the one it was held for, when it was never sent).
    stats::failover_waited(first.address.empty() ? job.target.address : first.address);
    routing::Failover failover(log != nullptr, job.may_span, job.sharded, job.target, first, since,
                               setting_failover_wait);
    routing::Step step = failover.next(scope_now(tier, pref, params), GetCurrentTimestamp(), log);
    for (;;) {
        switch (step.kind) {
            case routing::Step::Kind::Send:
                job.target = step.target;
                if (sent_again != nullptr)
                    ++*sent_again;
                stats::statement_resent(job.target.address);
                step = failover.attempted(attempt(job, params, log), GetCurrentTimestamp(), log);
                break;
            case routing::Step::Kind::Wait:
                pause_before_retry(step.until);
                step = failover.next(scope_now(tier, pref, params), GetCurrentTimestamp(), log);
                break;
            case routing::Step::Kind::Next:
                step = failover.next(scope_now(tier, pref, params), GetCurrentTimestamp(), log);
                break;
            case routing::Step::Kind::GiveUp:
                throw report_error(step.report);
            case routing::Step::Kind::Done: {
                routing::Answer answer = answer_of(job.result.get());
                if (log != nullptr)
                    log->record(job.target.address, answer);
                check_answer(job, answer.error()
                                      ? failover.error_detail(GetCurrentTimestamp(), log, answer)
                                      : std::string());
                return;
            }
        }
    }
}

// After a round with failures: the worker is woken when the core says so (routing::
// wake_after_failures: at most once per refresh interval per session; failed logins never get
// here) and given a short chance to notice; then what cannot be sent again fails at once, and every
// other failed job fails over.
void fail_over_all(std::vector<Job> &jobs, const std::vector<Failed> &failures,
                   const ConnParams &params, const std::string &tier, ReadPref pref, Retry retry,
                   WriteLog *log, uint32_t *sent_again) {
    const TimestampTz since = GetCurrentTimestamp();
    static TimestampTz last_wake = 0;
    const routing::Wake wake = routing::wake_after_failures(
        since, last_wake,
        {setting_refresh_interval, setting_connect_timeout, setting_failover_wait});
    last_wake = wake.last_wake;
    if (wake.wake)
        wake_worker();
    for (const Failed &f : failures)
        if (std::optional<routing::Report> report =
                routing::final_failure(f.failure, retry, jobs[f.job].target, log))
            throw report_error(*report);
    bool refresh_failed = false;
    if (wake.wake)
        pg_call([&] { (void)request_refresh_and_wait(wake.refresh_wait_ms, &refresh_failed); });
    for (const Failed &f : failures)
        fail_over(jobs[f.job], f.failure, params, tier, pref, log, since, sent_again);
}

}  // namespace

bool held(const Job &job, const ConnParams &params, const std::string &tier, ReadPref pref) {
    return routing::hold(scope_now(tier, pref, params), job.target, job.sharded).held;
}

void run_jobs(std::vector<Job> &jobs, const ConnParams &params, const std::string &tier,
              ReadPref pref, Retry retry, WriteLog *log, uint32_t *sent_again) {
    sweep_connections();
    std::vector<Failed> failures =
        send_and_collect(jobs, params, holds(jobs, tier, pref, retry, params), log);
    if (log == nullptr)  // reads that must be leader reads go again at once (leader_reads.h)
        resend_as_leader_reads(jobs, params, tier, retry, sent_again);
    take_refusals(jobs, scope_now(tier, pref, params), retry, log != nullptr, &failures);
    check_answers(jobs, log, failures);
    if (!failures.empty())
        fail_over_all(jobs, failures, params, tier, pref, retry, log, sent_again);
}

}  // namespace picoroute::pg::remote
