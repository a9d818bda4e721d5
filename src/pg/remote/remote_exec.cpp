// Running routed statements on their instances, with picoroute's failure and retry rules (see
// remote_exec.h).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/wait_event.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
}

#include "pg/remote/remote_exec.h"

#include "pg/remote/answer_rules.h"
#include "pg/remote/leader_reads.h"
#include "pg/remote/remote_stmt.h"
#include "pg/remote/tier_stall.h"

#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/worker_status.h"
#include "pg/settings.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace picoroute::pg::remote {

void Job::own_values(std::vector<std::optional<std::string>> *store) {
    store->clear();
    for (const char *v : values)
        store->emplace_back(v != nullptr ? std::optional<std::string>(v) : std::nullopt);
    values.clear();
    for (const auto &v : *store)
        values.push_back(v ? v->c_str() : nullptr);
}
namespace {

struct Failure {
    size_t job;
    std::string address;
    std::string message;
    bool sent;
    bool refused = false;  // answered with a refusal before running (core/routing/answer.h)
    // Not sent: a Picodata instance would wait for this replicaset's master (tier_stall.h).
    std::string stalled;
};

// Whether a job is sent now, or held (a failure to retry, not sent): its buckets' owner has no
// online master (awaiting_master), or a master of its tier is down and the instance would wait
// for it (`stalled`, tier_stall.h).
struct Hold {
    bool held = false;
    std::string stalled;
};

[[noreturn]] void raise_unreachable(const Job &job, const Failure &f, const char *extra_hint) {
    throw SqlError(ERRCODE_CONNECTION_FAILURE,
                   "picoroute: could not reach Picodata instance " + f.address + ": " + f.message,
                   "Target: " + describe(job.target) + ".", extra_hint);
}

// Where a failed job goes next, by the current map: its buckets' one owner (the master, or a
// replica as `pref` allows), wherever the map now puts it, the failed address included (a master
// back after a restart, but not when `last`); a coordinator other than `failed` for a job without
// buckets, for buckets of several owners or that the map does not know, or when `last`. None while
// an owner of its buckets has no usable instance (awaiting_master: a switchover is under way).
std::optional<Target> next_target(const Target &old, const std::string &tier_name, ReadPref pref,
                                  const std::string &failed, bool last) {
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    int32_t tier = tier_name.empty() ? kNone : view.find_tier(tier_name);
    if (tier != kNone && !old.buckets.empty()) {
        if (awaiting_master(view, tier, old.buckets, pref)) {
            if (!last)
                return std::nullopt;
        } else {
            std::set<uint32_t> buckets(old.buckets.begin(), old.buckets.end());
            std::vector<Target> groups = group_buckets(view, tier, buckets, pref);
            if (groups.size() == 1 && groups[0].role != Role::Coordinator &&
                !(last && groups[0].address == failed))
                return groups[0];
        }
    }
    Target c = coordinator_target(view, {failed});
    c.buckets = old.buckets;
    return c;
}

void check_result(const Job &job) {
    ExecStatusType status = PQresultStatus(job.result.get());
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK)
        return;
    if (status == PGRES_FATAL_ERROR || status == PGRES_NONFATAL_ERROR)
        throw_remote_error(job.result.get(), job.target.address, job.target.replicaset,
                           job.shown_sql().c_str());
    throw SqlError(ERRCODE_FDW_ERROR,
                   std::string("picoroute: unexpected answer from ") + job.target.address + ": " +
                       PQresStatus(status),
                   "Only statements returning rows or a command status are supported.");
}

}  // namespace

namespace {

// Appends `extra` to the DETAIL of a PostgreSQL error carried as a PgError.
void add_detail(ErrorData *edata, const std::string &extra) {
    pg_call([&] {
        MemoryContext old = MemoryContextSwitchTo(edata->assoc_context);
        edata->detail = edata->detail ? psprintf("%s\n%s", edata->detail, extra.c_str())
                                      : pstrdup(extra.c_str());
        MemoryContextSwitchTo(old);
    });
}

// What a read that was interrupted leaves behind: statements that run on (Picodata cannot
// cancel them); "" when none does.
std::string running_reads(const std::vector<Abandoned> &abandoned) {
    std::string where;
    for (const Abandoned &a : abandoned)
        if (a.outcome == Abandoned::Running)
            where += (where.empty() ? "" : ", ") + a.address;
    if (where.empty())
        return "";
    return "The remote statement may still run to its end on " + where +
           ": Picodata cannot cancel a statement.";
}

}  // namespace

namespace {

// The round in which each job is sent: a job to an instance that an earlier job also goes to (a
// scatter's master in several statements) waits for that one's answer, one connection each.
// (Counted over the earlier jobs: a statement has few, and a point statement one.)
std::vector<size_t> send_rounds(const std::vector<Job> &jobs, size_t *rounds) {
    std::vector<size_t> round(jobs.size(), 0);
    *rounds = jobs.empty() ? 0 : 1;
    for (size_t i = 1; i < jobs.size(); i++) {
        for (size_t j = 0; j < i; j++)
            round[i] += jobs[j].target.address == jobs[i].target.address;
        *rounds = std::max(*rounds, round[i] + 1);
    }
    return round;
}

// Sends every job of a round, then collects their answers; what could not be reached is added
// to `failures`.
void run_round(std::vector<Job> &jobs, const ConnParams &params, const std::vector<Hold> &held,
               const std::vector<size_t> &round, size_t r, InFlight &inflight,
               std::vector<Failure> &failures) {
    std::vector<Connection *> conns(jobs.size(), nullptr);
    for (size_t i = 0; i < jobs.size(); i++) {
        if (round[i] != r)
            continue;
        if (held[i].held) {
            failures.push_back({i, "", "", false, false, held[i].stalled});
            continue;
        }
        try {
            conns[i] = send_routed(jobs[i].target.address, params, jobs[i].sql, jobs[i].values);
            inflight.add(conns[i]);
        } catch (const ConnectionFailure &f) {
            failures.push_back({i, f.address(), f.what(), false});
        }
    }
    for (size_t i = 0; i < jobs.size(); i++) {
        if (conns[i] == nullptr)
            continue;
        try {
            jobs[i].result.reset(collect_routed(conns[i]));
            inflight.done(conns[i]);
        } catch (const ConnectionFailure &f) {
            inflight.done(conns[i]);
            discard_connection(conns[i]);
            failures.push_back({i, f.address(), f.what(), true});
        }
    }
}

// Sends every job and collects every answer, in rounds (send_rounds); returns what failed.
std::vector<Failure> send_and_collect(std::vector<Job> &jobs, const ConnParams &params,
                                      const std::vector<Hold> &held, WriteLog *log) {
    std::vector<Failure> failures;
    {
        InFlight inflight;
        size_t rounds = 0;
        std::vector<size_t> round = send_rounds(jobs, &rounds);
        try {
            for (size_t r = 0; r < rounds; r++)
                run_round(jobs, params, held, round, r, inflight, failures);
        } catch (PgError &e) {
            // Interrupted (query cancel, statement_timeout) while statements ran remotely: stop
            // them, and say what a write did.
            std::vector<Abandoned> abandoned = inflight.abandon();
            if (log != nullptr) {
                for (const Job &job : jobs)
                    if (job.result && PQresultStatus(job.result.get()) == PGRES_COMMAND_OK)
                        record_answer(log, job.target.address, job.result.get());
                record_abandoned(log, abandoned);
                std::string detail = abandoned_summary(abandoned);
                std::string committed = log->summary();
                detail += (detail.empty() || committed.empty() ? "" : " ") + committed;
                add_detail(e.data(), detail);
            } else if (!running_reads(abandoned).empty()) {
                add_detail(e.data(), running_reads(abandoned));
            }
            throw;
        }
    }
    return failures;
}

// What a write's failed job left on its instance, for the DETAIL (answer_rules.h): an outcome
// the answer does not prove (anything but a refusal before running) is not claimed, and the write
// log holds it as unknown.
std::string failed_on(const Job &job, WriteLog *log) {
    if (!proven_not_run(job.may_span, job.result.get()))
        log->record_unknown(job.target.address);
    return remote::failed_on(job.target.address, job.may_span, job.result.get());
}

// Counts the rows a write committed, then raises the first remote error (an answer: the instance
// was reachable).
void check_answers(const std::vector<Job> &jobs, WriteLog *log,
                   const std::vector<Failure> &failures) {
    if (log != nullptr) {
        for (const Job &job : jobs)
            if (job.result && PQresultStatus(job.result.get()) == PGRES_COMMAND_OK)
                record_answer(log, job.target.address, job.result.get());
        for (const Failure &f : failures)
            if (f.sent)
                log->record_unknown(f.address);
    }
    for (const Job &job : jobs) {
        if (!job.result)
            continue;
        if (log == nullptr) {
            check_result(job);
            continue;
        }
        try {
            check_result(job);
        } catch (PgError &e) {
            std::string detail = failed_on(job, log);  // first: it may record an unknown
            detail += log->summary();
            if (!failures.empty())
                detail += " Instances that could not run it:";
            for (const Failure &f : failures)
                detail += " " +
                          (!f.stalled.empty() ? "(a part not sent: replicaset " + f.stalled +
                                                    " of its tier has no online master)"
                           : f.address.empty() ? "(a part not sent: its buckets have no "
                                                 "online master)"
                                               : f.address) +
                          (f.sent      ? " (may have applied it)"
                           : f.refused ? " (refused it before running it)"
                                       : "");
            add_detail(e.data(), detail);
            throw;
        }
    }
}

// For a write whose outcome on one instance is unknown: what is known of the others (rows they
// committed), else nothing.
std::string committed_elsewhere(const WriteLog *log) {
    std::string known = log != nullptr ? log->summary() : std::string();
    return known.empty() ? "" : " " + known;
}

// What the retries of a failed job did, for the error that ends them.
std::string retried_for(TimestampTz since) {
    long ms = TimestampDifferenceMilliseconds(since, GetCurrentTimestamp());
    return "picoroute sent it again for " + std::to_string(ms) +
           " ms, following the topology map (picoroute.failover_wait).";
}

// The error for a write whose connection was lost after it was sent: it may have been applied.
// Its outcome is unknown: statement_completion_unknown (40003), not a connection failure (08006),
// which a client may take for "nothing happened" and retry.
[[noreturn]] void raise_lost_write(const Job &job, const std::string &address,
                                   const std::string &message, WriteLog *log) {
    if (log != nullptr)
        log->record_unknown(address);
    throw SqlError(ERRCODE_T_R_STATEMENT_COMPLETION_UNKNOWN,
                   "picoroute: lost the connection to Picodata instance " + address +
                       " while it ran a write: " + message,
                   "Target: " + describe(job.target) +
                       ". The statement may have been applied on instance " + address +
                       "; it was not sent again." + committed_elsewhere(log),
                   "Picodata commits every statement on its own: check the data before running "
                   "the statement again.");
}

// Raises for a failure that must not be retried (a scatter over masters, a write that may have
// been applied).
void refuse_retry(const std::vector<Job> &jobs, const std::vector<Failure> &failures, Retry retry,
                  WriteLog *log) {
    for (const Failure &f : failures) {
        const Job &job = jobs[f.job];
        if (retry == Retry::Never)
            raise_unreachable(job, f,
                              "The statement needs every master of the tier; no partial result "
                              "is returned. The topology is being refreshed: retry later, or use "
                              "scatter 'coordinator'.");
        if (retry == Retry::Write && f.sent)
            raise_lost_write(job, f.address, f.message, log);
    }
}

// The answer of a job that ran after a retry: its rows counted, its remote error raised.
void finish_retried(Job &job, WriteLog *log, TimestampTz since) {
    if (log != nullptr && PQresultStatus(job.result.get()) == PGRES_COMMAND_OK)
        record_answer(log, job.target.address, job.result.get());
    try {
        check_result(job);
    } catch (PgError &e) {
        std::string detail = retried_for(since);
        if (log != nullptr) {
            detail += " " + failed_on(job, log);  // first: it may record an unknown
            detail += log->summary();
        }
        add_detail(e.data(), detail);
        throw;
    }
}

// Whether a refusal before running (core/routing/answer.h) of `job` may be answered by sending it
// again: a read, or a write whose buckets all belong to one replicaset (a write over several may
// have been applied by the others before one refused it).
bool resend_after_refusal(const Job &job, const std::string &tier, bool write) {
    return !write || one_replicaset(job.target, tier);
}

// Turns the answers that refused a statement before running it into failures to send again where
// that cannot apply anything twice (resend_after_refusal). A scatter over masters is never sent
// again.
void take_refusals(std::vector<Job> &jobs, const std::string &tier, Retry retry, bool write,
                   std::vector<Failure> *failures) {
    if (retry == Retry::Never)
        return;
    for (size_t i = 0; i < jobs.size(); i++) {
        Job &job = jobs[i];
        const char *text = refusal_text(job.result.get(), !write);
        if (text == nullptr || !resend_after_refusal(job, tier, write))
            continue;
        failures->push_back({i, job.target.address, text, false, true});
        job.result.reset();
    }
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
        if (!leader_read_refusal(jobs[i].result.get()) ||
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
    run_jobs(again, leader, tier, ReadPref::Leader, retry, nullptr, sent_again);
    for (size_t k = 0; k < refused.size(); k++)
        jobs[refused[k]] = std::move(again[k]);
}

// The jobs not to send yet (Hold): they wait for the switchover like a failed job.
std::vector<Hold> held_jobs(const std::vector<Job> &jobs, const std::string &tier, ReadPref pref,
                            Retry retry, const ConnParams &params) {
    std::vector<Hold> held(jobs.size());
    if (retry == Retry::Never)
        return held;
    for (size_t i = 0; i < jobs.size(); i++) {
        held[i].held = awaits_master(jobs[i], tier, pref);
        if (!held[i].held)
            held[i].stalled = stalling_master(jobs[i].sharded, jobs[i].target, tier, pref, params);
        held[i].held = held[i].held || !held[i].stalled.empty();
    }
    return held;
}

enum class Attempt { Ran, Unsent, Lost, Refused };

// Sends `job` to its target once more. Ran: an answer came (in job.result, a remote error
// included); Unsent: it could not be sent; Lost: a read whose answer was lost after it was sent;
// Refused: refused before running, when `refusals` (job.result is then empty). `why` gets the
// failure's text. A write lost after it was sent raises: it may have been applied, so it is not
// sent again.
Attempt attempt_job(Job &job, const ConnParams &params, bool refusals, WriteLog *log,
                    std::string *why) {
    InFlight inflight;
    Connection *c = nullptr;
    try {
        c = send_routed(job.target.address, params, job.sql, job.values);
        inflight.add(c);
        job.result.reset(collect_routed(c));
        inflight.done(c);
    } catch (const ConnectionFailure &again) {
        if (c != nullptr) {
            inflight.done(c);
            discard_connection(c);
        }
        *why = again.what();
        if (again.sent() && log != nullptr)
            raise_lost_write(job, again.address(), again.what(), log);
        return again.sent() ? Attempt::Lost : Attempt::Unsent;
    } catch (PgError &e) {
        std::vector<Abandoned> abandoned = inflight.abandon();
        if (log != nullptr) {
            record_abandoned(log, abandoned);
            std::string committed = log->summary();
            add_detail(e.data(),
                       abandoned_summary(abandoned) + (committed.empty() ? "" : " ") + committed);
        }
        throw;
    }
    const char *text = refusals ? refusal_text(job.result.get(), log == nullptr) : nullptr;
    if (text == nullptr)
        return Attempt::Ran;
    *why = text;
    job.result.reset();
    return Attempt::Refused;
}

// Between two attempts: a short interruptible sleep, then a refresh of the map (waited for within
// what is left of the deadline).
void pause_before_retry(TimestampTz deadline) {
    long left = TimestampDifferenceMilliseconds(GetCurrentTimestamp(), deadline);
    pg_call([&] {
        (void)WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
                        Max(Min(left, 200L), 1L), PG_WAIT_EXTENSION);
        ResetLatch(MyLatch);
        CHECK_FOR_INTERRUPTS();
        bool refresh_failed = false;
        (void)request_refresh_and_wait(static_cast<int>(Max(Min(left - 200, 1000L), 0L)),
                                       &refresh_failed);
    });
}

// How the first failure of a job reads in the error that ends its retries.
std::string first_failure(const Failure &f) {
    if (!f.stalled.empty())
        return "picoroute: replicaset " + f.stalled +
               " of the statement's tier has no online master";
    if (f.address.empty())
        return "picoroute: the topology map shows no online master for the statement's buckets";
    if (f.refused)
        return "picoroute: Picodata instance " + f.address +
               " refused the statement before running it (" +
               libpq_message_line(f.message.c_str()) + ")";
    return "picoroute: could not reach Picodata instance " + f.address + " (" +
           libpq_message_line(f.message.c_str()) + ")";
}

// Sends a failed job again, to wherever the map puts its buckets, until it runs or
// picoroute.failover_wait has passed; then once more (next_target with `last`: through a
// coordinator when the map still puts the buckets on the instance that failed).
void retry_job(Job &job, const Failure &f, const ConnParams &params, const std::string &tier,
               ReadPref pref, WriteLog *log, TimestampTz since, uint32_t *sent_again) {
    const TimestampTz deadline = TimestampTzPlusMilliseconds(since, setting_failover_wait);
    const Target first = job.target;
    std::string address = f.address, why = f.message;
    // An instance that took a read and lost its answer is asked once, then a coordinator.
    bool lost = false;
    for (;;) {
        bool last = lost || GetCurrentTimestamp() >= deadline;
        std::optional<Target> next;
        try {
            next = next_target(first, tier, pref, address, last);
        } catch (const SqlError &none) {
            // No other instance: the first failure is what the user needs to see.
            throw SqlError(none.sqlstate(),
                           first_failure(f) + ", and no other instance can take the statement",
                           none.detail(), none.hint());
        }
        // Not sent while a Picodata instance would wait for a master of the tier: then it fails
        // unsent, with its true cause (tier_stall.h).
        std::string stalled = next ? stalling_master(job.sharded, *next, tier, pref, params) : "";
        if (!stalled.empty() && last)
            raise_stalled(job.target, stalled, tier, since, log);
        if (next && stalled.empty()) {
            job.target = *next;
            if (sent_again != nullptr)
                ++*sent_again;
            bool refusals = !last && resend_after_refusal(job, tier, log != nullptr);
            Attempt a = attempt_job(job, params, refusals, log, &why);
            if (a == Attempt::Ran)
                break;
            address = job.target.address;
            lost = a == Attempt::Lost;
            if (last)
                throw SqlError(ERRCODE_CONNECTION_FAILURE,
                               first_failure(f) + "; on retry, Picodata instance " + address +
                                   " could not be reached either (" +
                                   libpq_message_line(why.c_str()) + ")",
                               "First target: " + describe(first) + ". " + retried_for(since) +
                                   (log != nullptr ? " " + log->summary() : std::string()),
                               "Check picoroute_instances and picoroute_status.");
        }
        if (!lost)
            pause_before_retry(deadline);
    }
    finish_retried(job, log, since);
}

}  // namespace

bool one_replicaset(const Target &target, const std::string &tier_name) {
    if (target.buckets.size() == 1)
        return true;
    if (target.buckets.empty() || tier_name.empty())
        return false;
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    int32_t tier = view.find_tier(tier_name);
    if (tier == kNone)
        return false;
    std::set<int32_t> owners;
    for (uint32_t bucket : target.buckets) {
        int32_t range = view.find_range(tier, bucket);
        owners.insert(range == kNone ? kNone : view.range(range).replicaset);
    }
    return owners.size() == 1 && *owners.begin() != kNone;
}

bool awaits_master(const Job &job, const std::string &tier_name, ReadPref pref) {
    if (job.target.role != Role::Coordinator || job.target.buckets.empty() || tier_name.empty())
        return false;
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    return awaiting_master(view, view.find_tier(tier_name), job.target.buckets, pref);
}

void run_jobs(std::vector<Job> &jobs, const ConnParams &params, const std::string &tier,
              ReadPref pref, Retry retry, WriteLog *log, uint32_t *sent_again) {
    sweep_connections();
    std::vector<Failure> failures =
        send_and_collect(jobs, params, held_jobs(jobs, tier, pref, retry, params), log);
    if (log == nullptr)  // reads that must be leader reads go again at once (leader_reads.h)
        resend_as_leader_reads(jobs, params, tier, retry, sent_again);
    take_refusals(jobs, tier, retry, log != nullptr, &failures);
    // Remote errors first: they are answers, the instance was reachable.
    check_answers(jobs, log, failures);
    if (failures.empty())
        return;
    const TimestampTz since = GetCurrentTimestamp();

    // An unreachable instance may mean the topology changed: wake the worker, at most once per
    // refresh interval per session (a storm of failing statements must not become a storm of
    // refreshes). Failed logins never get here: they are not topology problems.
    static TimestampTz last_wake = 0;
    const bool wake =
        last_wake == 0 || TimestampDifferenceExceeds(last_wake, since, setting_refresh_interval);
    if (wake) {
        last_wake = since;
        wake_worker();
    }
    refuse_retry(jobs, failures, retry, log);
    // Give the worker a short chance to notice the change, then send the failed jobs again.
    int wait_ms = std::min({setting_connect_timeout * 1000, 2000, setting_failover_wait});
    bool refresh_failed = false;
    if (wake)
        pg_call([&] { (void)request_refresh_and_wait(wait_ms, &refresh_failed); });
    for (const Failure &f : failures)
        retry_job(jobs[f.job], f, params, tier, pref, log, since, sent_again);
}

}  // namespace picoroute::pg::remote
