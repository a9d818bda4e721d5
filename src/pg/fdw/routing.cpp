// Routing decisions and the execution of routed statements (see routing.h).
extern "C" {
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
}

#include "pg/fdw/routing.h"

#include "pg/guard.h"
#include "pg/key_datum.h"
#include "pg/map_store.h"
#include "pg/settings.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace picoroute::pg::fdw {

ReadPref parse_read_pref(const char *value) {
    if (value == nullptr || strcmp(value, "leader") == 0)
        return ReadPref::Leader;
    if (strcmp(value, "replica") == 0)
        return ReadPref::Replica;
    return ReadPref::Any;
}

const char *read_pref_name(ReadPref pref) {
    switch (pref) {
        case ReadPref::Leader:
            return "leader";
        case ReadPref::Replica:
            return "replica";
        case ReadPref::Any:
            return "any";
    }
    return "leader";
}

std::string describe(const Target &target) {
    std::string out = target.address;
    if (target.role == Role::Coordinator)
        return out + " (coordinator)";
    out += " (";
    out += target.role == Role::Master ? "master" : "replica";
    if (!target.replicaset.empty())
        out += " of replicaset " + target.replicaset;
    return out + ")";
}

namespace {

std::string instance_name(const SnapshotView &view, const InstanceRecord &inst) {
    return std::string(inst.name.length > 0 ? view.str(inst.name) : view.str(inst.uuid));
}

bool usable(const InstanceRecord &inst) {
    return inst.online != 0 && inst.address.length > 0;
}

Target make_target(const SnapshotView &view, int32_t instance, Role role) {
    const InstanceRecord &inst = view.instance(instance);
    Target t;
    t.address = std::string(view.str(inst.address));
    t.instance = instance_name(view, inst);
    t.role = role;
    if (role != Role::Coordinator && inst.replicaset != kNone)
        t.replicaset = std::string(view.str(view.replicaset(inst.replicaset).uuid));
    return t;
}

}  // namespace

bool bucket_target(const SnapshotView &view, int32_t tier, uint32_t bucket, ReadPref pref,
                   Target *out) {
    int32_t range = view.find_range(tier, bucket);
    if (range == kNone)
        return false;
    int32_t rs = view.range(range).replicaset;
    if (rs == kNone)
        return false;
    int32_t master = view.replicaset(rs).master;
    bool master_ok = master != kNone && usable(view.instance(master));
    if (pref != ReadPref::Leader) {
        std::vector<int32_t> candidates;
        for (uint32_t i = 0; i < view.n_instances(); i++) {
            const InstanceRecord &inst = view.instance(i);
            if (inst.replicaset != rs || !usable(inst))
                continue;
            if (pref == ReadPref::Replica && static_cast<int32_t>(i) == master)
                continue;
            candidates.push_back(static_cast<int32_t>(i));
        }
        if (!candidates.empty()) {
            // Spread sessions over the candidates, but keep one session on one instance.
            int32_t pick = candidates[static_cast<size_t>(MyProcPid) % candidates.size()];
            *out = make_target(view, pick, pick == master ? Role::Master : Role::Replica);
            return true;
        }
    }
    if (!master_ok)
        return false;
    *out = make_target(view, master, Role::Master);
    return true;
}

Target coordinator_target(const SnapshotView &view, const std::set<std::string> &exclude) {
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < view.n_instances(); i++) {
            const InstanceRecord &inst = view.instance(i);
            if (!usable(inst) || exclude.count(std::string(view.str(inst.address))) > 0)
                continue;
            bool is_master = inst.replicaset != kNone &&
                             view.replicaset(inst.replicaset).master == static_cast<int32_t>(i);
            if (pass == 0 && !is_master)
                continue;
            return make_target(view, static_cast<int32_t>(i), Role::Coordinator);
        }
    }
    throw SqlError(
        ERRCODE_CONNECTION_FAILURE,
        "picoroute: no online Picodata instance to coordinate the statement",
        exclude.empty() ? std::string()
                        : "Unreachable: " +
                              [&] {
                                  std::string s;
                                  for (const auto &a : exclude)
                                      s += (s.empty() ? "" : ", ") + a;
                                  return s;
                              }(),
        "Check picoroute_instances and picoroute_status.");
}

Target spread_target(const SnapshotView &view, int32_t tier, ReadPref pref, bool write) {
    // Candidates: online members of the table's tier (any tier when it has none), masters for
    // writes and leader reads, replicas first for 'replica', everyone for 'any'.
    std::vector<int32_t> masters, replicas;
    for (int pass = 0; pass < 2 && masters.empty() && replicas.empty(); pass++) {
        for (uint32_t i = 0; i < view.n_instances(); i++) {
            const InstanceRecord &inst = view.instance(i);
            if (!usable(inst))
                continue;
            if (pass == 0 &&
                (inst.replicaset == kNone || view.replicaset(inst.replicaset).tier_index != tier))
                continue;
            bool is_master = inst.replicaset != kNone &&
                             view.replicaset(inst.replicaset).master == static_cast<int32_t>(i);
            (is_master ? masters : replicas).push_back(static_cast<int32_t>(i));
        }
    }
    std::vector<int32_t> pool = masters;
    if (!write && pref == ReadPref::Replica && !replicas.empty())
        pool = replicas;
    else if (!write && pref == ReadPref::Any)
        pool.insert(pool.end(), replicas.begin(), replicas.end());
    if (pool.empty())
        return coordinator_target(view);
    // One session keeps one coordinator; sessions spread over the candidates.
    return make_target(view, pool[static_cast<size_t>(MyProcPid) % pool.size()], Role::Coordinator);
}

std::vector<Target> master_targets(const SnapshotView &view, int32_t tier) {
    // Only the replicasets that own buckets of the tier: a master without buckets (a new
    // replicaset before the rebalance) would get a statement without any bucket filter and
    // answer for the whole cluster.
    std::set<int32_t> replicasets;
    const TierRecord &t = view.tier(tier);
    for (uint32_t r = t.first_range; r < t.first_range + t.n_ranges; r++)
        if (view.range(r).replicaset != kNone)
            replicasets.insert(view.range(r).replicaset);
    std::vector<Target> out;
    for (int32_t rs : replicasets) {
        const ReplicasetRecord &rec = view.replicaset(rs);
        int32_t master = rec.master;
        if (master == kNone || !usable(view.instance(master))) {
            std::string name(rec.name.length > 0 ? view.str(rec.name) : view.str(rec.uuid));
            throw SqlError(
                ERRCODE_CONNECTION_FAILURE,
                "picoroute: replicaset \"" + name + "\" (" + std::string(view.str(rec.uuid)) +
                    ") of tier \"" + std::string(view.str(t.name)) + "\" has no online master",
                master == kNone ? "The map knows no master for it."
                                : "Its master " + instance_name(view, view.instance(master)) +
                                      " is not online.",
                "A scan with scatter 'masters' needs every master; no partial "
                "result is returned. Retry after the switchover, or use scatter "
                "'coordinator'.");
        }
        Target target = make_target(view, master, Role::Master);
        for (uint32_t r = t.first_range; r < t.first_range + t.n_ranges; r++)
            if (view.range(r).replicaset == rs)
                target.ranges.emplace_back(view.range(r).start, view.range(r).end);
        out.push_back(std::move(target));
    }
    // Every bucket must belong to a known replicaset, or rows would silently be missing.
    uint32_t covered = 0;
    for (uint32_t r = t.first_range; r < t.first_range + t.n_ranges; r++)
        if (view.range(r).replicaset != kNone)
            covered += view.range(r).end - view.range(r).start + 1;
    if (t.bucket_count == 0 || covered != t.bucket_count)
        throw SqlError(
            ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            "picoroute: the topology map does not know the owner of every bucket of tier "
            "\"" +
                std::string(view.str(t.name)) + "\"",
            std::to_string(covered) + " of " + std::to_string(t.bucket_count) +
                " buckets have a known replicaset.",
            "A scan with scatter 'masters' would miss rows. Retry after the next "
            "refresh (picoroute_refresh), or use scatter 'coordinator'.");
    if (out.empty())
        throw SqlError(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                       "picoroute: tier \"" + std::string(view.str(t.name)) +
                           "\" has no replicasets in the topology map",
                       {}, "See picoroute_replicasets and picoroute_status.");
    std::sort(out.begin(), out.end(),
              [](const Target &a, const Target &b) { return a.address < b.address; });
    return out;
}

std::vector<Target> group_buckets(const SnapshotView &view, int32_t tier,
                                  const std::set<uint32_t> &buckets, ReadPref pref) {
    std::map<std::string, Target> groups;
    std::vector<uint32_t> unknown;
    for (uint32_t bucket : buckets) {
        Target t;
        if (!bucket_target(view, tier, bucket, pref, &t)) {
            unknown.push_back(bucket);
            continue;
        }
        auto [it, inserted] = groups.emplace(t.address, t);
        it->second.buckets.push_back(bucket);
    }
    std::vector<Target> out;
    for (auto &[address, t] : groups)
        out.push_back(std::move(t));
    if (!unknown.empty()) {
        Target c = coordinator_target(view);
        c.buckets = std::move(unknown);
        out.push_back(std::move(c));
    }
    return out;
}

int32_t tier_or_error(const SnapshotView &view, uint64_t generation, const std::string &name) {
    int32_t tier = view.find_tier(name);
    if (tier != kNone)
        return tier;
    throw SqlError(ERRCODE_UNDEFINED_OBJECT, "picoroute: unknown tier \"" + name + "\"", {},
                   generation == 0 ? "The topology map is not loaded yet; see picoroute_status."
                                   : "See picoroute_tiers for the known tiers.");
}

std::string with_bucket_filter(const std::string &sql, bool has_where, const Target &target) {
    if (target.buckets.empty() && target.ranges.empty())
        return sql;
    std::string out = sql + (has_where ? " AND " : " WHERE ");
    if (target.buckets.empty()) {
        // Every bucket listed: Picodata (26.2.1+) restricts a statement to the owners of the
        // buckets of "bucket_id IN (...)", while BETWEEN is only a row filter.
        out += "bucket_id IN (";
        bool first = true;
        for (const auto &[start, end] : target.ranges) {
            for (uint32_t b = start; b <= end && b != 0; b++) {
                out += (first ? "" : ", ") + std::to_string(b);
                first = false;
                if (b == end)
                    break;
            }
        }
        return out + ")";
    }
    if (target.buckets.size() == 1)
        return out + "bucket_id = " + std::to_string(target.buckets[0]);
    out += "bucket_id IN (";
    for (size_t i = 0; i < target.buckets.size(); i++) {
        if (i > 0)
            out += ", ";
        out += std::to_string(target.buckets[i]);
    }
    return out + ")";
}

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
Target reroute(const Target &old, int32_t tier_hint, const std::string &tier_name, ReadPref pref,
               const std::string &failed) {
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    int32_t tier = tier_name.empty() ? kNone : view.find_tier(tier_name);
    (void)tier_hint;
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
                           job.sql.c_str());
    throw SqlError(ERRCODE_FDW_ERROR,
                   std::string("picoroute: unexpected answer from ") + job.target.address + ": " +
                       PQresStatus(status),
                   "Only statements returning rows or a command status are supported.");
}

}  // namespace

void run_jobs(std::vector<Job> &jobs, const ConnParams &params, int32_t tier, ReadPref pref,
              Retry retry) {
    sweep_connections();
    std::vector<Failure> failures;
    {
        InFlight inflight;
        std::vector<Connection *> conns(jobs.size(), nullptr);
        for (size_t i = 0; i < jobs.size(); i++) {
            try {
                conns[i] = send_to(jobs[i].target.address, params, jobs[i].sql.c_str(),
                                   static_cast<int>(jobs[i].values.size()), jobs[i].values.data());
                inflight.add(conns[i]);
            } catch (const ConnectionFailure &f) {
                failures.push_back({i, f.address(), f.what(), false});
            }
        }
        for (size_t i = 0; i < jobs.size(); i++) {
            if (conns[i] == nullptr)
                continue;
            try {
                jobs[i].result.reset(collect_result(conns[i]));
                inflight.done(conns[i]);
            } catch (const ConnectionFailure &f) {
                inflight.done(conns[i]);
                discard_connection(conns[i]);
                failures.push_back({i, f.address(), f.what(), true});
            }
        }
    }
    // Remote errors first: they are answers, the instance was reachable.
    for (const Job &job : jobs)
        if (job.result)
            check_result(job);
    if (failures.empty())
        return;

    wake_worker();
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
                               ". The statement may or may not have been applied; it was not "
                               "sent again.",
                           "Picodata commits every statement on its own: check the data before "
                           "running the statement again.");
    }
    // Give the worker a short chance to notice the change, then run the failed jobs once more.
    int wait_ms = std::min(setting_connect_timeout * 1000, 2000);
    bool refresh_failed = false;
    pg_call([&] { (void)request_refresh_and_wait(wait_ms, &refresh_failed); });
    std::string tier_name;
    {
        MapRef map = current_map();
        if (tier != kNone && static_cast<uint32_t>(tier) < map.view->n_tiers())
            tier_name = std::string(map.view->str(map.view->tier(tier).name));
    }
    for (const Failure &f : failures) {
        Job &job = jobs[f.job];
        Target old = job.target;
        job.target = reroute(old, tier, tier_name, pref, f.address);
        std::vector<Job> single;
        InFlight inflight;
        Connection *c = nullptr;
        try {
            c = send_to(job.target.address, params, job.sql.c_str(),
                        static_cast<int>(job.values.size()), job.values.data());
            inflight.add(c);
            job.result.reset(collect_result(c));
            inflight.done(c);
        } catch (const ConnectionFailure &again) {
            if (c != nullptr) {
                inflight.done(c);
                discard_connection(c);
            }
            throw SqlError(ERRCODE_CONNECTION_FAILURE,
                           "picoroute: could not reach Picodata instance " + f.address + " (" +
                               f.message + "), nor " + again.address() + " on retry (" +
                               again.what() + ")",
                           "First target: " + describe(old) + ".",
                           "Check picoroute_instances and picoroute_status.");
        }
        check_result(job);
    }
}

HashClass hash_class(Oid type) {
    switch (type) {
        case INT2OID:
        case INT4OID:
        case INT8OID:
            return HashClass::Int;
        case TEXTOID:
        case VARCHAROID:
        case BPCHAROID:
        case NAMEOID:
            return HashClass::Text;
        case BOOLOID:
            return HashClass::Bool;
        case FLOAT4OID:
        case FLOAT8OID:
            return HashClass::Double;
        case NUMERICOID:
            return HashClass::Decimal;
        case UUIDOID:
            return HashClass::Uuid;
        case TIMESTAMPTZOID:
            return HashClass::Datetime;
        default:
            return HashClass::None;
    }
}

void add_key_value(KeyEncoder &key, Oid type, Datum value, bool isnull) {
    add_key_datum(key, type, value, isnull);
}

}  // namespace picoroute::pg::fdw
