// Running routed statements on their instances, with picoroute's failure and retry rules (see
// remote_exec.h).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
}

#include "pg/remote/remote_exec.h"

#include "pg/remote/remote_stmt.h"

#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/worker_status.h"
#include "pg/settings.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace picoroute::pg::remote {
namespace {

struct Failure {
    size_t job;
    std::string address;
    std::string message;
    bool sent;
};

[[noreturn]] void raise_unreachable(const Job &job, const Failure &f, const char *extra_hint) {
    throw SqlError(ERRCODE_CONNECTION_FAILURE,
                   "picoroute: could not reach Picodata instance " + f.address + ": " + f.message,
                   "Target: " + describe(job.target) + ".", extra_hint);
}

// Re-routes a job after a refresh: the new owner of its buckets when they have one owner other
// than the failed instance, else a coordinator.
Target reroute(const Target &old, const std::string &tier_name, ReadPref pref,
               const std::string &failed) {
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    int32_t tier = tier_name.empty() ? kNone : view.find_tier(tier_name);
    if (tier != kNone && !old.buckets.empty()) {
        std::set<uint32_t> buckets(old.buckets.begin(), old.buckets.end());
        std::vector<Target> groups = group_buckets(view, tier, buckets, pref);
        if (groups.size() == 1 && groups[0].address != failed &&
            groups[0].role != Role::Coordinator)
            return groups[0];
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

uint64_t command_rows(const PGresult *result) {
    const char *n = PQcmdTuples(const_cast<PGresult *>(result));
    return n != nullptr && n[0] != '\0' ? strtoull(n, nullptr, 10) : 0;
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

// What a write that was interrupted after it was sent did, instance by instance.
std::string abandoned_summary(const std::vector<Abandoned> &abandoned) {
    std::string out;
    for (const Abandoned &a : abandoned) {
        if (!out.empty())
            out += " ";
        switch (a.outcome) {
            case Abandoned::Applied:
                out += "The statement was applied on instance " + a.address + " (" +
                       std::to_string(a.rows) + " rows) before the cancel request arrived.";
                break;
            case Abandoned::NotApplied:
                out += "The statement was cancelled on instance " + a.address +
                       " and not applied there.";
                break;
            case Abandoned::Unknown:
                out += "The statement may have been applied on instance " + a.address +
                       ": a cancel request was sent, but no answer came in time.";
                break;
            case Abandoned::Running:
                out += "The statement may still run to its end on instance " + a.address +
                       " and be applied there: Picodata cannot cancel a statement.";
                break;
        }
    }
    return out;
}

// True when every abandoned statement's outcome is known.
bool all_known(const std::vector<Abandoned> &abandoned) {
    for (const Abandoned &a : abandoned)
        if (a.outcome == Abandoned::Unknown || a.outcome == Abandoned::Running)
            return false;
    return true;
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

std::string WriteLog::summary(bool all_known) const {
    uint64_t total = 0;
    std::string where;
    for (const auto &[address, rows] : committed) {
        if (rows == 0)
            continue;
        total += rows;
        where += (where.empty() ? "" : ", ") + address + ": " + std::to_string(rows);
    }
    if (total == 0)
        return all_known ? "No row of this statement was committed on Picodata." : "";
    return std::to_string(total) + " rows of this statement were already committed on Picodata (" +
           where + "); they are not undone.";
}

namespace {

// Sends every job, then collects every answer; what could not be reached is returned.
std::vector<Failure> send_and_collect(std::vector<Job> &jobs, const ConnParams &params,
                                      WriteLog *log) {
    std::vector<Failure> failures;
    {
        InFlight inflight;
        std::vector<Connection *> conns(jobs.size(), nullptr);
        try {
            for (size_t i = 0; i < jobs.size(); i++) {
                try {
                    conns[i] =
                        send_routed(jobs[i].target.address, params, jobs[i].sql, jobs[i].values);
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
        } catch (PgError &e) {
            // Interrupted (query cancel, statement_timeout) while statements ran remotely: stop
            // them, and say what a write did.
            std::vector<Abandoned> abandoned = inflight.abandon();
            if (log != nullptr) {
                for (const Job &job : jobs)
                    if (job.result && PQresultStatus(job.result.get()) == PGRES_COMMAND_OK)
                        log->committed[job.target.address] += command_rows(job.result.get());
                for (const Abandoned &a : abandoned)
                    if (a.outcome == Abandoned::Applied)
                        log->committed[a.address] += a.rows;
                std::string detail = abandoned_summary(abandoned);
                std::string committed = log->summary(all_known(abandoned));
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

// Counts the rows a write committed, then raises the first remote error (an answer: the instance
// was reachable).
void check_answers(const std::vector<Job> &jobs, WriteLog *log,
                   const std::vector<Failure> &failures) {
    if (log != nullptr)
        for (const Job &job : jobs)
            if (job.result && PQresultStatus(job.result.get()) == PGRES_COMMAND_OK)
                log->committed[job.target.address] += command_rows(job.result.get());
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
            bool sent_unanswered = false;
            for (const Failure &f : failures)
                sent_unanswered = sent_unanswered || f.sent;
            std::string detail = "The statement failed on instance " + job.target.address +
                                 " and was not applied there. " + log->summary(!sent_unanswered);
            if (!failures.empty())
                detail += " Instances that could not be reached:";
            for (const Failure &f : failures)
                detail += " " + f.address + (f.sent ? " (may have applied it)" : "");
            add_detail(e.data(), detail);
            throw;
        }
    }
}

// For a write whose outcome on one instance is unknown: what is known of the others (rows they
// committed), else nothing.
std::string committed_elsewhere(const WriteLog *log) {
    std::string known = log != nullptr ? log->summary(false) : std::string();
    return known.empty() ? "" : " " + known;
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
            throw SqlError(ERRCODE_CONNECTION_FAILURE,
                           "picoroute: lost the connection to Picodata instance " + f.address +
                               " while it ran a write: " + f.message,
                           "Target: " + describe(job.target) +
                               ". The statement may have been applied on instance " + f.address +
                               "; it was not sent again." + committed_elsewhere(log),
                           "Picodata commits every statement on its own: check the data before "
                           "running the statement again.");
    }
}

// Runs a failed job once more on its new owner or a coordinator.
void retry_job(Job &job, const Failure &f, const ConnParams &params, const std::string &tier_name,
               ReadPref pref, WriteLog *log) {
    Target old = job.target;
    try {
        job.target = reroute(old, tier_name, pref, f.address);
    } catch (const SqlError &none) {
        // No other instance: the first failure is what the user needs to see.
        throw SqlError(none.sqlstate(),
                       "picoroute: could not reach Picodata instance " + f.address + " (" +
                           libpq_message_line(f.message.c_str()) +
                           "), and no other instance can take the statement",
                       none.detail(), none.hint());
    }
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
        throw SqlError(ERRCODE_CONNECTION_FAILURE,
                       "picoroute: could not reach Picodata instance " + f.address + " (" +
                           f.message + "), nor " + again.address() + " on retry (" + again.what() +
                           ")",
                       "First target: " + describe(old) + "." +
                           (log != nullptr ? " " + log->summary() : std::string()),
                       "Check picoroute_instances and picoroute_status.");
    } catch (PgError &e) {
        std::vector<Abandoned> abandoned = inflight.abandon();
        if (log != nullptr) {
            for (const Abandoned &a : abandoned)
                if (a.outcome == Abandoned::Applied)
                    log->committed[a.address] += a.rows;
            std::string committed = log->summary(all_known(abandoned));
            add_detail(e.data(),
                       abandoned_summary(abandoned) + (committed.empty() ? "" : " ") + committed);
        }
        throw;
    }
    if (log != nullptr && PQresultStatus(job.result.get()) == PGRES_COMMAND_OK)
        log->committed[job.target.address] += command_rows(job.result.get());
    if (log == nullptr) {
        check_result(job);
    } else {
        try {
            check_result(job);
        } catch (PgError &e) {
            add_detail(e.data(), "The statement failed on instance " + job.target.address +
                                     " and was not applied there. " + log->summary());
            throw;
        }
    }
}

}  // namespace

void run_jobs(std::vector<Job> &jobs, const ConnParams &params, const std::string &tier,
              ReadPref pref, Retry retry, WriteLog *log) {
    sweep_connections();
    std::vector<Failure> failures = send_and_collect(jobs, params, log);
    // Remote errors first: they are answers, the instance was reachable.
    check_answers(jobs, log, failures);
    if (failures.empty())
        return;

    // An unreachable instance may mean the topology changed: wake the worker, at most once per
    // refresh interval per session (a storm of failing statements must not become a storm of
    // refreshes). Failed logins never get here: they are not topology problems.
    static TimestampTz last_wake = 0;
    TimestampTz now = GetCurrentTimestamp();
    const bool wake =
        last_wake == 0 || TimestampDifferenceExceeds(last_wake, now, setting_refresh_interval);
    if (wake) {
        last_wake = now;
        wake_worker();
    }
    refuse_retry(jobs, failures, retry, log);
    // Give the worker a short chance to notice the change, then run the failed jobs once more.
    int wait_ms = std::min(setting_connect_timeout * 1000, 2000);
    bool refresh_failed = false;
    if (wake)
        pg_call([&] { (void)request_refresh_and_wait(wait_ms, &refresh_failed); });
    for (const Failure &f : failures)
        retry_job(jobs[f.job], f, params, tier, pref, log);
}

}  // namespace picoroute::pg::remote
