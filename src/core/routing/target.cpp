// Which instance runs a statement (see target.h).
#include "core/routing/target.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace picoroute::routing {

namespace {

std::string instance_name(const SnapshotView &view, const InstanceRecord &inst) {
    return std::string(inst.name.length > 0 ? view.str(inst.name) : view.str(inst.uuid));
}

bool usable(const InstanceRecord &inst) {
    return inst.online != 0 && inst.address.length > 0;
}

bool is_master(const SnapshotView &view, uint32_t i) {
    const InstanceRecord &inst = view.instance(i);
    return inst.replicaset != kNone &&
           view.replicaset(inst.replicaset).master == static_cast<int32_t>(i);
}

Target make_target(const SnapshotView &view, int32_t instance, Role role) {
    const InstanceRecord &inst = view.instance(instance);
    Target t;
    t.address = std::string(view.str(inst.address));
    t.instance = instance_name(view, inst);
    t.role = role;
    if (role != Role::Coordinator && inst.replicaset != kNone) {
        const ReplicasetRecord &rs = view.replicaset(inst.replicaset);
        t.replicaset = std::string(view.str(rs.uuid));
        t.replicaset_name = rs.name.length > 0 ? std::string(view.str(rs.name)) : t.replicaset;
    }
    return t;
}

}  // namespace

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
    if (!target.instance.empty())
        out += " " + target.instance;
    if (!target.replicaset.empty())
        out += " of replicaset " +
               (target.replicaset_name.empty() ? target.replicaset : target.replicaset_name);
    return out + ")";
}

bool bucket_target(const SnapshotView &view, int32_t tier, uint32_t bucket, ReadPref pref,
                   uint64_t salt, Target *out) {
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
            int32_t pick = candidates[salt % candidates.size()];
            *out = make_target(view, pick, pick == master ? Role::Master : Role::Replica);
            out->sent = Sent::RoutedByKey;
            return true;
        }
    }
    if (!master_ok)
        return false;
    *out = make_target(view, master, Role::Master);
    out->sent = Sent::RoutedByKey;
    return true;
}

std::optional<Target> any_online(const SnapshotView &view, const std::set<std::string> &exclude) {
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < view.n_instances(); i++) {
            const InstanceRecord &inst = view.instance(i);
            if (!usable(inst) || exclude.count(std::string(view.str(inst.address))) > 0)
                continue;
            if (pass == 0 && !is_master(view, i))
                continue;
            return make_target(view, static_cast<int32_t>(i), Role::Coordinator);
        }
    }
    return std::nullopt;
}

std::optional<Target> spread_target(const SnapshotView &view, int32_t tier, ReadPref pref,
                                    bool write, uint64_t salt) {
    std::vector<int32_t> masters, replicas;
    for (int pass = 0; pass < 2 && masters.empty() && replicas.empty(); pass++) {
        for (uint32_t i = 0; i < view.n_instances(); i++) {
            const InstanceRecord &inst = view.instance(i);
            if (!usable(inst))
                continue;
            if (pass == 0 &&
                (inst.replicaset == kNone || view.replicaset(inst.replicaset).tier_index != tier))
                continue;
            (is_master(view, i) ? masters : replicas).push_back(static_cast<int32_t>(i));
        }
    }
    std::vector<int32_t> pool = masters;
    if (!write && pref == ReadPref::Replica && !replicas.empty())
        pool = replicas;
    else if (!write && pref == ReadPref::Any)
        pool.insert(pool.end(), replicas.begin(), replicas.end());
    if (pool.empty())
        return any_online(view);
    return make_target(view, pool[salt % pool.size()], Role::Coordinator);
}

MastersPlan master_targets(const SnapshotView &view, int32_t tier) {
    MastersPlan plan;
    const TierRecord &t = view.tier(tier);
    std::set<int32_t> replicasets;
    for (uint32_t r = t.first_range; r < t.first_range + t.n_ranges; r++) {
        if (view.range(r).replicaset == kNone)
            continue;
        replicasets.insert(view.range(r).replicaset);
        plan.covered += view.range(r).end - view.range(r).start + 1;
    }
    for (int32_t rs : replicasets) {
        int32_t master = view.replicaset(rs).master;
        if (master == kNone || !usable(view.instance(master))) {
            plan.status = MastersPlan::Status::NoOnlineMaster;
            plan.replicaset = rs;
            plan.targets.clear();
            return plan;
        }
        Target target = make_target(view, master, Role::Master);
        target.sent = Sent::MastersScatter;
        for (uint32_t r = t.first_range; r < t.first_range + t.n_ranges; r++)
            if (view.range(r).replicaset == rs)
                target.ranges.emplace_back(view.range(r).start, view.range(r).end);
        plan.targets.push_back(std::move(target));
    }
    if (t.bucket_count == 0 || plan.covered != t.bucket_count) {
        plan.status = MastersPlan::Status::Incomplete;
        plan.targets.clear();
        return plan;
    }
    if (plan.targets.empty()) {
        plan.status = MastersPlan::Status::NoReplicasets;
        return plan;
    }
    std::sort(plan.targets.begin(), plan.targets.end(),
              [](const Target &a, const Target &b) { return a.address < b.address; });
    return plan;
}

BucketGroups group_buckets(const SnapshotView &view, int32_t tier,
                           const std::set<uint32_t> &buckets, ReadPref pref, uint64_t salt) {
    BucketGroups out;
    if (buckets.size() == 1) {  // a point statement: one target, no grouping
        Target t;
        uint32_t bucket = *buckets.begin();
        if (bucket_target(view, tier, bucket, pref, salt, &t)) {
            t.buckets.push_back(bucket);
            out.targets.push_back(std::move(t));
        } else {
            out.unknown.push_back(bucket);
        }
        return out;
    }
    std::map<std::string, Target> groups;
    for (uint32_t bucket : buckets) {
        Target t;
        if (!bucket_target(view, tier, bucket, pref, salt, &t)) {
            out.unknown.push_back(bucket);
            continue;
        }
        auto [it, inserted] = groups.emplace(t.address, t);
        it->second.buckets.push_back(bucket);
    }
    for (auto &[address, t] : groups)
        out.targets.push_back(std::move(t));
    return out;
}

namespace {

// The index of the instance `target` names (by address), or kNone.
int32_t instance_at(const SnapshotView &view, const std::string &address) {
    for (uint32_t i = 0; i < view.n_instances(); i++)
        if (view.str(view.instance(i).address) == address)
            return static_cast<int32_t>(i);
    return kNone;
}

// The live replicasets of a tier.
uint32_t replicasets_of(const SnapshotView &view, int32_t tier) {
    uint32_t n = 0;
    for (uint32_t r = 0; r < view.n_replicasets(); r++)
        n += view.replicaset(r).tier_index == tier;
    return n;
}

}  // namespace

bool lua_dispatched(const SnapshotView &view, int32_t tier, const Target &target, ReadPref pref,
                    bool local_execution) {
    if (!local_execution || tier == kNone)
        return true;
    int32_t i = instance_at(view, target.address);
    if (i == kNone || view.instance(i).replicaset == kNone)
        return true;
    int32_t rs = view.instance(i).replicaset;
    bool master = view.replicaset(rs).master == i;
    bool here = pref == ReadPref::Leader ? master : pref == ReadPref::Replica ? !master : true;
    if (!here)
        return true;
    if (target.buckets.empty())
        return !(view.replicaset(rs).tier_index == tier && replicasets_of(view, tier) == 1);
    for (uint32_t bucket : target.buckets) {
        int32_t range = view.find_range(tier, bucket);
        if (range == kNone || view.range(range).replicaset != rs)
            return true;
    }
    return false;
}

int32_t masterless_replicaset(const SnapshotView &view, int32_t tier) {
    if (tier == kNone)
        return kNone;
    for (uint32_t r = 0; r < view.n_replicasets(); r++) {
        const ReplicasetRecord &rs = view.replicaset(r);
        if (rs.tier_index != tier)
            continue;
        if (rs.master == kNone || !usable(view.instance(rs.master)))
            return static_cast<int32_t>(r);
    }
    return kNone;
}

bool awaiting_master(const SnapshotView &view, int32_t tier, const std::vector<uint32_t> &buckets,
                     ReadPref pref, uint64_t salt) {
    if (tier == kNone)
        return false;
    for (uint32_t bucket : buckets) {
        int32_t range = view.find_range(tier, bucket);
        if (range == kNone || view.range(range).replicaset == kNone)
            continue;
        Target t;
        if (!bucket_target(view, tier, bucket, pref, salt, &t))
            return true;
    }
    return false;
}

bool one_replicaset(const SnapshotView &view, int32_t tier, const Target &target) {
    if (target.buckets.size() == 1)
        return true;
    if (target.buckets.empty() || tier == kNone)
        return false;
    std::set<int32_t> owners;
    for (uint32_t bucket : target.buckets) {
        int32_t range = view.find_range(tier, bucket);
        owners.insert(range == kNone ? kNone : view.range(range).replicaset);
    }
    return owners.size() == 1 && *owners.begin() != kNone;
}

Target leader_target(const SnapshotView &view, int32_t tier, const Target &old, uint64_t salt) {
    if (old.role != Role::Replica || old.buckets.empty() || tier == kNone)
        return old;
    std::set<uint32_t> buckets(old.buckets.begin(), old.buckets.end());
    BucketGroups groups = group_buckets(view, tier, buckets, ReadPref::Leader, salt);
    if (!groups.unknown.empty() || groups.targets.size() != 1 ||
        groups.targets[0].role != Role::Master)
        return old;
    Target out = std::move(groups.targets[0]);
    out.sent = old.sent;
    return out;
}

std::optional<Target> point_target(const SnapshotView &view, int32_t tier, uint32_t bucket,
                                   ReadPref pref, uint64_t salt) {
    Target out;
    if (!bucket_target(view, tier, bucket, pref, salt, &out)) {
        std::optional<Target> coordinator = any_online(view);
        if (!coordinator)
            return std::nullopt;
        out = std::move(*coordinator);
    }
    out.buckets = {bucket};
    return out;
}

const char *exec_read_preference(bool read_only, bool leader_reads_learned) {
    return read_only && !leader_reads_learned ? "any" : "leader";
}

ReadPref exec_read_pref(std::string_view read_preference, bool read_only) {
    return read_preference == "any" || (read_only && read_preference.empty()) ? ReadPref::Replica
                                                                              : ReadPref::Leader;
}

}  // namespace picoroute::routing
