// What happens after a routed statement could not run (see failover.h).
#include "core/routing/failover.h"

#include "core/capabilities.h"
#include "core/remote_text.h"

#include <algorithm>
#include <set>
#include <utility>

namespace picoroute::routing {

int32_t MapScope::tier_index() const {
    return tier.empty() ? kNone : view->find_tier(tier);
}

bool MapScope::local_execution() const {
    std::string detected = version.empty() ? view->cluster_version().value_or("") : version;
    return caps::has(std::string_view(detected), caps::Capability::LocalExecution);
}

std::string stalling_master(const MapScope &map, const Target &target, bool sharded) {
    if (!sharded || map.tier.empty())
        return "";
    const SnapshotView &view = *map.view;
    int32_t tier = map.tier_index();
    int32_t rs = masterless_replicaset(view, tier);
    if (rs == kNone || !lua_dispatched(view, tier, target, map.pref, map.local_execution()))
        return "";
    const ReplicasetRecord &record = view.replicaset(rs);
    return std::string(record.name.length > 0 ? view.str(record.name) : view.str(record.uuid));
}

Hold hold(const MapScope &map, const Target &target, bool sharded) {
    Hold out;
    if (target.role == Role::Coordinator && !target.buckets.empty() && !map.tier.empty())
        out.held = awaiting_master(*map.view, map.tier_index(), target.buckets, map.pref, map.salt);
    if (!out.held) {
        out.stalled = stalling_master(map, target, sharded);
        out.held = !out.stalled.empty();
    }
    return out;
}

std::vector<size_t> send_rounds(const std::vector<std::string_view> &addresses, size_t *rounds) {
    // Counted over the earlier statements: a statement has few, and a point statement one.
    std::vector<size_t> round(addresses.size(), 0);
    *rounds = addresses.empty() ? 0 : 1;
    for (size_t i = 1; i < addresses.size(); i++) {
        for (size_t j = 0; j < i; j++)
            round[i] += addresses[j] == addresses[i];
        *rounds = std::max(*rounds, round[i] + 1);
    }
    return round;
}

std::string first_failure(const Failure &f) {
    switch (f.kind) {
        case Failure::Kind::Stalled:
            return "picoroute: replicaset " + f.stalled +
                   " of the statement's tier has no online master";
        case Failure::Kind::Held:
            return "picoroute: the topology map shows no online master for the statement's "
                   "buckets";
        case Failure::Kind::Refused:
            return "picoroute: Picodata instance " + f.address +
                   " refused the statement before running it (" + message_line(f.message) + ")";
        case Failure::Kind::Unsent:
        case Failure::Kind::Lost:
            break;
    }
    return "picoroute: could not reach Picodata instance " + f.address + " (" +
           message_line(f.message) + ")";
}

std::string could_not_run(const std::vector<Failure> &failures) {
    if (failures.empty())
        return "";
    std::string out = " Instances that could not run it:";
    for (const Failure &f : failures) {
        out += " ";
        if (f.kind == Failure::Kind::Stalled)
            out +=
                "(a part not sent: replicaset " + f.stalled + " of its tier has no online master)";
        else if (f.kind == Failure::Kind::Held)
            out += "(a part not sent: its buckets have no online master)";
        else
            out += f.address;
        if (f.sent())
            out += " (may have applied it)";
        else if (f.kind == Failure::Kind::Refused)
            out += " (refused it before running it)";
    }
    return out;
}

std::optional<Failure> refusal(const MapScope &map, const Target &target, const Answer &answer,
                               Retry retry, bool write) {
    if (retry == Retry::Never || !resendable(answer, !write))
        return std::nullopt;
    if (write && !one_replicaset(*map.view, map.tier_index(), target))
        return std::nullopt;
    Failure f;
    f.kind = Failure::Kind::Refused;
    f.address = target.address;
    f.message = answer.message;
    return f;
}

std::string write_error_detail(WriteLog &log, const std::string &address, bool spans,
                               const Answer &answer, const std::vector<Failure> &failures) {
    std::string detail = log.record_failure(address, spans, answer);  // first: it may record
    detail += log.summary();
    return detail + could_not_run(failures);
}

std::optional<Report> final_failure(const Failure &failure, Retry retry, const Target &target,
                                    WriteLog *log) {
    if (retry == Retry::Never)
        return unreachable(target, failure.address, failure.message, kMastersScatterHint);
    if (retry != Retry::Write || !failure.sent())
        return std::nullopt;
    if (log != nullptr)
        log->record_unknown(failure.address);
    return lost_write(target, failure.address, failure.message, log);
}

namespace {

// Where a failed statement goes next, by the current map: its buckets' one owner (per the map's
// preference), wherever the map now puts it, the failed address included (a master back after a
// restart, but not when `last`); a coordinator other than `failed` for a statement without
// buckets, for buckets of several owners or that the map does not know, or when `last`. Wait
// while an owner of its buckets has no usable instance (a switchover under way), but not when
// `last`. None when no instance can take it (`report` says why).
struct NextTarget {
    enum class Kind { Send, Wait, None } kind = Kind::Send;
    Target target;
    Report report;
};

NextTarget next_target(const MapScope &map, const Target &first, const std::string &failed,
                       bool last) {
    const SnapshotView &view = *map.view;
    int32_t tier = map.tier_index();
    NextTarget out;
    if (tier != kNone && !first.buckets.empty()) {
        if (awaiting_master(view, tier, first.buckets, map.pref, map.salt)) {
            if (!last) {
                out.kind = NextTarget::Kind::Wait;
                return out;
            }
        } else {
            std::set<uint32_t> buckets(first.buckets.begin(), first.buckets.end());
            BucketGroups groups = group_buckets(view, tier, buckets, map.pref, map.salt);
            if (!groups.unknown.empty() && !any_online(view)) {
                out.kind = NextTarget::Kind::None;
                out.report = no_coordinator({});
                return out;
            }
            if (groups.unknown.empty() && groups.targets.size() == 1 &&
                !(last && groups.targets[0].address == failed)) {
                out.target = std::move(groups.targets[0]);
                out.target.sent = first.sent;
                return out;
            }
        }
    }
    std::optional<Target> coordinator = any_online(view, {failed});
    if (!coordinator) {
        out.kind = NextTarget::Kind::None;
        out.report = no_coordinator({failed});
        return out;
    }
    out.target = std::move(*coordinator);
    out.target.buckets = first.buckets;
    out.target.sent = first.sent;
    return out;
}

}  // namespace

Failover::Failover(bool write, bool spans, bool sharded, const Target &first,
                   const Failure &failure, Micros since, int64_t wait)
    : write_(write),
      spans_(spans),
      sharded_(sharded),
      first_(first),
      current_(first),
      failure_(failure),
      since_(since),
      deadline_(since + wait * 1000),
      failed_(failure.address),
      why_(failure.message) {}

Step Failover::give_up(Report report) const {
    Step step;
    step.kind = Step::Kind::GiveUp;
    step.report = std::move(report);
    return step;
}

Step Failover::wait() const {
    Step step;
    step.kind = Step::Kind::Wait;
    step.until = deadline_;
    return step;
}

Step Failover::next(const MapScope &map, Micros now, const WriteLog *log) {
    last_ = lost_ || now >= deadline_;
    NextTarget next = next_target(map, first_, failed_, last_);
    if (next.kind == NextTarget::Kind::None) {
        Report report = std::move(next.report);
        report.message = first_failure(failure_) + ", and no other instance can take the statement";
        return give_up(std::move(report));
    }
    // Not sent while a Picodata instance would wait for a master of the tier: then it fails
    // unsent, with its true cause.
    std::string stalled =
        next.kind == NextTarget::Kind::Send ? stalling_master(map, next.target, sharded_) : "";
    if (!stalled.empty() && last_)
        return give_up(routing::stalled(current_, stalled, map.tier, elapsed_ms(since_, now), log));
    if (next.kind == NextTarget::Kind::Wait || !stalled.empty())
        return wait();
    current_ = std::move(next.target);
    refusals_ = !last_ && (!write_ || one_replicaset(*map.view, map.tier_index(), current_));
    Step step;
    step.kind = Step::Kind::Send;
    step.target = current_;
    step.refusals = refusals_;
    return step;
}

Step Failover::attempted(const Attempt &attempt, Micros now, WriteLog *log) {
    std::string why = attempt.message;
    if (attempt.kind == Attempt::Kind::Answered) {
        if (!refusals_ || !resendable(attempt.answer, !write_)) {
            Step done;
            done.kind = Step::Kind::Done;
            return done;
        }
        why = attempt.answer.message;  // refused before running: sent again
    }
    // A write lost after it was sent may have been applied: it is not sent again.
    if (attempt.kind == Attempt::Kind::Lost && write_) {
        if (log != nullptr)
            log->record_unknown(attempt.address);
        return give_up(lost_write(current_, attempt.address, attempt.message, log));
    }
    failed_ = current_.address;
    why_ = why;
    lost_ = attempt.kind == Attempt::Kind::Lost;
    if (last_)
        return give_up(Report{kConnectionFailure,
                              first_failure(failure_) + "; on retry, Picodata instance " + failed_ +
                                  " could not be reached either (" + message_line(why_) + ")",
                              "First target: " + describe(first_) + ". " +
                                  retried_for(elapsed_ms(since_, now)) +
                                  (log != nullptr ? " " + log->summary() : std::string()),
                              "Check picoroute_instances and picoroute_status."});
    if (lost_) {
        Step again;
        again.kind = Step::Kind::Next;
        return again;
    }
    return wait();
}

std::string Failover::error_detail(Micros now, WriteLog *log, const Answer &answer) {
    std::string detail = retried_for(elapsed_ms(since_, now));
    if (log != nullptr) {
        detail += " " + log->record_failure(current_.address, spans_, answer);
        detail += log->summary();
    }
    return detail;
}

}  // namespace picoroute::routing
