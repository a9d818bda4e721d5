// What picoroute tells the user when a routed statement cannot run (see reports.h).
#include "core/routing/reports.h"

namespace picoroute::routing {

namespace {

std::string join(const std::set<std::string> &names) {
    std::string out;
    for (const std::string &name : names)
        out += (out.empty() ? "" : ", ") + name;
    return out;
}

std::string name_of(const SnapshotView &view, const ReplicasetRecord &rs) {
    return std::string(rs.name.length > 0 ? view.str(rs.name) : view.str(rs.uuid));
}

// For a write whose outcome on one instance is unknown: what is known of the others (rows they
// committed), else nothing.
std::string committed_elsewhere(const WriteLog *log) {
    std::string known = log != nullptr ? log->summary() : std::string();
    return known.empty() ? "" : " " + known;
}

}  // namespace

Report no_coordinator(const std::set<std::string> &unreachable) {
    return {kConnectionFailure,
            "picoroute: no online Picodata instance to coordinate the statement",
            unreachable.empty() ? std::string() : "Unreachable: " + join(unreachable),
            "Check picoroute_instances and picoroute_status."};
}

Report masters_unavailable(const SnapshotView &view, int32_t tier, const MastersPlan &plan) {
    const TierRecord &t = view.tier(tier);
    const std::string tier_name(view.str(t.name));
    switch (plan.status) {
        case MastersPlan::Status::NoOnlineMaster: {
            const ReplicasetRecord &rec = view.replicaset(plan.replicaset);
            const InstanceRecord *inst = rec.master == kNone ? nullptr : &view.instance(rec.master);
            return {kConnectionFailure,
                    "picoroute: replicaset \"" + name_of(view, rec) + "\" (" +
                        std::string(view.str(rec.uuid)) + ") of tier \"" + tier_name +
                        "\" has no online master",
                    inst == nullptr
                        ? "The map knows no master for it."
                        : "Its master " +
                              std::string(inst->name.length > 0 ? view.str(inst->name)
                                                                : view.str(inst->uuid)) +
                              " is not online.",
                    "A scan with scatter 'masters' needs every master; no partial result is "
                    "returned. Retry after the switchover, or use scatter 'coordinator'."};
        }
        case MastersPlan::Status::Incomplete:
            return {kNotInPrerequisiteState,
                    "picoroute: the topology map does not know the owner of every bucket of tier "
                    "\"" +
                        tier_name + "\"",
                    std::to_string(plan.covered) + " of " + std::to_string(t.bucket_count) +
                        " buckets have a known replicaset.",
                    "A scan with scatter 'masters' would miss rows. Retry after the next refresh "
                    "(picoroute_refresh), or use scatter 'coordinator'."};
        case MastersPlan::Status::Ok:
        case MastersPlan::Status::NoReplicasets:
            break;
    }
    return {kNotInPrerequisiteState,
            "picoroute: tier \"" + tier_name + "\" has no replicasets in the topology map", "",
            "See picoroute_replicasets and picoroute_status."};
}

const char *const kMastersScatterHint =
    "The statement needs every master of the tier; no partial result is returned. The topology "
    "is being refreshed: retry later, or use scatter 'coordinator'.";

Report unreachable(const Target &target, const std::string &address, const std::string &message,
                   const std::string &hint) {
    return {kConnectionFailure,
            "picoroute: could not reach Picodata instance " + address + ": " + message,
            "Target: " + describe(target) + ".", hint};
}

Report lost_write(const Target &target, const std::string &address, const std::string &message,
                  const WriteLog *log) {
    return {kCompletionUnknown,
            "picoroute: lost the connection to Picodata instance " + address +
                " while it ran a write: " + message,
            "Target: " + describe(target) + ". The statement may have been applied on instance " +
                address + "; it was not sent again." + committed_elsewhere(log),
            "Picodata commits every statement on its own: check the data before running the "
            "statement again."};
}

Report stalled(const Target &target, const std::string &replicaset, const std::string &tier,
               int64_t waited_ms, const WriteLog *log) {
    return {
        kConnectionFailure,
        "picoroute: did not send the statement: replicaset " + replicaset + " of tier " + tier +
            " has no online master",
        "Target: " + describe(target) +
            ". A Picodata instance sends a statement to the storages of a tier only once the "
            "master of each of its replicasets is connected, and waits for that up to the "
            "statement's deadline (360 s); only a statement sent to the master of the replicaset "
            "that owns all its buckets runs there without that wait (26.1.1 and later). picoroute "
            "waited " +
            std::to_string(waited_ms) +
            " ms for the topology map to show a master (picoroute.failover_wait). The statement "
            "was not sent anywhere, so it was not applied." +
            (log != nullptr ? " " + log->summary() : std::string()),
        "Start that master, or let the replicaset switch to another one; picoroute_instances "
        "shows which instances are online."};
}

std::string retried_for(int64_t ms) {
    return "picoroute sent it again for " + std::to_string(ms) +
           " ms, following the topology map (picoroute.failover_wait).";
}

Report lost_mid_scan(const Target &target, size_t delivered, const std::string &message) {
    return {kConnectionFailure,
            "picoroute: lost the connection to Picodata instance " + target.address +
                " in the middle of a scan: " + message,
            "Target: " + describe(target) + ". " + std::to_string(delivered) +
                " rows had been read from it.",
            "The statement was not run again, which would return those rows twice: run the "
            "query again."};
}

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

std::string interrupted_detail(WriteLog *log, const std::vector<Abandoned> &abandoned) {
    if (log == nullptr)
        return running_reads(abandoned);
    log->record_abandoned(abandoned);
    std::string detail = abandoned_summary(abandoned);
    std::string committed = log->summary();
    return detail + (detail.empty() || committed.empty() ? "" : " ") + committed;
}

std::string remote_context(const std::string &address, const std::string &replicaset,
                           const std::string &sql) {
    std::string context = "remote SQL on Picodata instance " + address;
    if (!replicaset.empty())
        context += " (replicaset " + replicaset + ")";
    return context + ": " + sql;
}

int64_t elapsed_ms(int64_t from, int64_t to) {
    return to <= from ? 0 : (to - from + 999) / 1000;
}

}  // namespace picoroute::routing
