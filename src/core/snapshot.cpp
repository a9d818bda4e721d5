// The flat topology image: building it from a Topology and reading it back safely.
#include "core/snapshot.h"

#include "core/errors.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>
#include <vector>

namespace picoroute {

static_assert(sizeof(SnapshotHeader) == 32 && alignof(SnapshotHeader) == 8);
static_assert(sizeof(TierRecord) == 24 && alignof(TierRecord) <= 8);
static_assert(sizeof(ReplicasetRecord) == 40 && alignof(ReplicasetRecord) <= 8);
static_assert(sizeof(InstanceRecord) == 48 && alignof(InstanceRecord) <= 8);
static_assert(sizeof(RangeRecord) == 28 && alignof(RangeRecord) <= 8);

namespace {

constexpr uint64_t align8(uint64_t n) {
    return (n + 7) & ~uint64_t{7};
}

// String budget: generous per-record allowances; uuids and states are interned, so a replicaset
// uuid repeated by its instances and ranges is stored once.
constexpr uint64_t kStringBase = 1024;
constexpr uint64_t kStringsPerInstance = 320;    // uuid, name, address (+ interned refs)
constexpr uint64_t kStringsPerReplicaset = 256;  // uuid, name, tier name
constexpr uint64_t kStringsPerRange = 64;        // interned replicaset uuid and state

// Byte offsets of the sections of an image with the given counts (64-bit: no overflow).
struct Layout {
    uint64_t tiers, replicasets, instances, ranges, strings, total;
};

Layout layout_for(uint64_t n_tiers, uint64_t n_replicasets, uint64_t n_instances, uint64_t n_ranges,
                  uint64_t strings_size) {
    Layout l{};
    l.tiers = align8(sizeof(SnapshotHeader));
    l.replicasets = align8(l.tiers + n_tiers * sizeof(TierRecord));
    l.instances = align8(l.replicasets + n_replicasets * sizeof(ReplicasetRecord));
    l.ranges = align8(l.instances + n_instances * sizeof(InstanceRecord));
    l.strings = align8(l.ranges + n_ranges * sizeof(RangeRecord));
    l.total = align8(l.strings + strings_size);
    return l;
}

uint64_t max_tiers(const SnapshotLimits &limits) {
    return std::max<uint64_t>(1, limits.max_replicasets);
}

uint64_t string_budget(const SnapshotLimits &limits) {
    return kStringBase + kStringsPerInstance * limits.max_instances +
           kStringsPerReplicaset * limits.max_replicasets +
           kStringsPerRange * limits.max_bucket_ranges;
}

[[noreturn]] void too_small(const std::string &setting, uint64_t value, uint64_t needed,
                            const std::string &what) {
    throw Error(ErrorKind::CapacityExceeded,
                setting + " is " + std::to_string(value) + " but the topology has " +
                    std::to_string(needed) + " " + what,
                "raise " + setting + " (takes effect after a server restart)");
}

// Deduplicating string pool.
class StringPool {
  public:
    StringRef add(std::string_view text) {
        if (text.empty()) {
            return {};
        }
        auto it = index_.find(std::string(text));
        if (it != index_.end()) {
            return it->second;
        }
        StringRef ref{static_cast<uint32_t>(bytes_.size()), static_cast<uint32_t>(text.size())};
        bytes_.append(text);
        index_.emplace(std::string(text), ref);
        return ref;
    }
    StringRef add(const std::optional<std::string> &text) {
        return text ? add(std::string_view(*text)) : StringRef{};
    }
    const std::string &bytes() const { return bytes_; }

  private:
    std::string bytes_;
    std::unordered_map<std::string, StringRef> index_;
};

template <typename Record>
void put(std::string &image, uint64_t offset, const std::vector<Record> &records) {
    if (!records.empty()) {
        std::memcpy(&image[offset], records.data(), records.size() * sizeof(Record));
    }
}

[[noreturn]] void damaged(const std::string &what) {
    throw Error(ErrorKind::InvalidInput, "damaged topology snapshot: " + what);
}

}  // namespace

size_t snapshot_capacity(const SnapshotLimits &limits) {
    return layout_for(max_tiers(limits), limits.max_replicasets, limits.max_instances,
                      limits.max_bucket_ranges, string_budget(limits))
        .total;
}

std::string build_snapshot(const Topology &topology, const SnapshotLimits &limits) {
    // Tier records: the configured tiers plus any tier that only has a bucket map.
    std::set<std::string> tier_names;
    for (const auto &[name, count] : topology.tiers()) {
        tier_names.insert(name);
    }
    size_t n_ranges = 0;
    for (const auto &[name, map] : topology.buckets()) {
        tier_names.insert(name);
        n_ranges += map.size();
    }
    if (topology.instances().size() > limits.max_instances) {
        too_small("picoroute.max_instances", limits.max_instances, topology.instances().size(),
                  "instances");
    }
    if (topology.replicasets().size() > limits.max_replicasets) {
        too_small("picoroute.max_replicasets", limits.max_replicasets,
                  topology.replicasets().size(), "replicasets");
    }
    if (tier_names.size() > max_tiers(limits)) {
        too_small("picoroute.max_replicasets", limits.max_replicasets, tier_names.size(),
                  "tiers (the setting also bounds the number of tiers)");
    }
    if (n_ranges > limits.max_bucket_ranges) {
        too_small("picoroute.max_bucket_ranges", limits.max_bucket_ranges, n_ranges,
                  "bucket ranges");
    }

    StringPool pool;
    std::unordered_map<std::string, int32_t> tier_index, replicaset_index, instance_index;
    std::vector<std::string> ordered_tiers(tier_names.begin(), tier_names.end());
    for (size_t i = 0; i < ordered_tiers.size(); ++i) {
        tier_index[ordered_tiers[i]] = static_cast<int32_t>(i);
    }
    int32_t next = 0;
    for (const auto &[uuid, replicaset] : topology.replicasets()) {
        replicaset_index[uuid] = next++;
    }
    next = 0;
    for (const auto &[uuid, instance] : topology.instances()) {
        instance_index[uuid] = next++;
    }
    auto lookup = [](const auto &index, const std::optional<std::string> &key) {
        if (!key) {
            return kNone;
        }
        auto it = index.find(*key);
        return it == index.end() ? kNone : it->second;
    };

    std::vector<TierRecord> tiers;
    std::vector<RangeRecord> ranges;
    for (const std::string &name : ordered_tiers) {
        TierRecord tier{};
        tier.name = pool.add(std::string_view(name));
        auto count = topology.tiers().find(name);
        tier.bucket_count = count == topology.tiers().end() ? 0 : count->second;
        tier.flags = count == topology.tiers().end() ? 0 : kTierCountKnown;
        tier.first_range = static_cast<uint32_t>(ranges.size());
        auto map = topology.buckets().find(name);
        if (map != topology.buckets().end()) {
            for (const auto &[start, range] : map->second) {
                RangeRecord record{};
                record.start = range.start;
                record.end = range.end;
                record.replicaset = lookup(replicaset_index, range.replicaset_uuid);
                record.replicaset_uuid = pool.add(std::string_view(range.replicaset_uuid));
                record.state = pool.add(std::string_view(range.state));
                ranges.push_back(record);
            }
        }
        tier.n_ranges = static_cast<uint32_t>(ranges.size()) - tier.first_range;
        tiers.push_back(tier);
    }

    std::vector<ReplicasetRecord> replicasets;
    for (const auto &[uuid, replicaset] : topology.replicasets()) {
        ReplicasetRecord record{};
        record.uuid = pool.add(std::string_view(uuid));
        record.name = pool.add(replicaset.name);
        record.tier = pool.add(replicaset.tier);
        record.master_uuid = pool.add(replicaset.current_master_uuid);
        record.master = lookup(instance_index, replicaset.current_master_uuid);
        record.tier_index = lookup(tier_index, replicaset.tier);
        replicasets.push_back(record);
    }

    std::vector<InstanceRecord> instances;
    for (const auto &[uuid, instance] : topology.instances()) {
        InstanceRecord record{};
        record.uuid = pool.add(std::string_view(uuid));
        record.name = pool.add(instance.name);
        record.replicaset_uuid = pool.add(instance.replicaset_uuid);
        record.state = pool.add(instance.current_state);
        record.address = pool.add(instance.address);
        record.replicaset = lookup(replicaset_index, instance.replicaset_uuid);
        record.online = instance.is_online() ? 1 : 0;
        instances.push_back(record);
    }

    const std::string &strings = pool.bytes();
    if (strings.size() > string_budget(limits)) {
        throw Error(ErrorKind::CapacityExceeded,
                    "the snapshot string budget of " + std::to_string(string_budget(limits)) +
                        " bytes is too small: the topology's names, uuids and addresses take " +
                        std::to_string(strings.size()) + " bytes",
                    "the budget grows with picoroute.max_instances, picoroute.max_replicasets and "
                    "picoroute.max_bucket_ranges; raise them");
    }

    Layout layout = layout_for(tiers.size(), replicasets.size(), instances.size(), ranges.size(),
                               strings.size());
    std::string image(layout.total, '\0');
    SnapshotHeader header{};
    header.magic = kSnapshotMagic;
    header.n_tiers = static_cast<uint32_t>(tiers.size());
    header.n_replicasets = static_cast<uint32_t>(replicasets.size());
    header.n_instances = static_cast<uint32_t>(instances.size());
    header.n_ranges = static_cast<uint32_t>(ranges.size());
    header.strings_size = static_cast<uint32_t>(strings.size());
    header.total_size = layout.total;
    std::memcpy(&image[0], &header, sizeof header);
    put(image, layout.tiers, tiers);
    put(image, layout.replicasets, replicasets);
    put(image, layout.instances, instances);
    put(image, layout.ranges, ranges);
    if (!strings.empty()) {
        std::memcpy(&image[layout.strings], strings.data(), strings.size());
    }
    return image;
}

SnapshotView::SnapshotView(const void *data, size_t size) {
    if (data == nullptr || size < sizeof(SnapshotHeader)) {
        damaged("image of " + std::to_string(size) + " bytes is shorter than its header");
    }
    if (reinterpret_cast<uintptr_t>(data) % alignof(SnapshotHeader) != 0) {
        damaged("image is not 8-byte aligned");
    }
    const char *base = static_cast<const char *>(data);
    header_ = reinterpret_cast<const SnapshotHeader *>(base);
    const SnapshotHeader &h = *header_;
    if (h.magic != kSnapshotMagic) {
        damaged("bad magic number");
    }
    Layout layout =
        layout_for(h.n_tiers, h.n_replicasets, h.n_instances, h.n_ranges, h.strings_size);
    if (h.total_size != layout.total || h.total_size > size) {
        damaged("total size " + std::to_string(h.total_size) + " does not match its counts (" +
                std::to_string(layout.total) + ") or exceeds the " + std::to_string(size) +
                " bytes available");
    }
    tiers_ = reinterpret_cast<const TierRecord *>(base + layout.tiers);
    replicasets_ = reinterpret_cast<const ReplicasetRecord *>(base + layout.replicasets);
    instances_ = reinterpret_cast<const InstanceRecord *>(base + layout.instances);
    ranges_ = reinterpret_cast<const RangeRecord *>(base + layout.ranges);
    strings_ = base + layout.strings;

    auto check_ref = [&](StringRef ref, const char *what, uint32_t i) {
        if (uint64_t{ref.offset} + ref.length > h.strings_size) {
            damaged(std::string(what) + " " + std::to_string(i) + " has a string outside the pool");
        }
    };
    auto check_index = [&](int32_t index, uint32_t count, const char *what, uint32_t i) {
        if (index != kNone && (index < 0 || static_cast<uint32_t>(index) >= count)) {
            damaged(std::string(what) + " " + std::to_string(i) + " has an index out of range");
        }
    };

    for (uint32_t i = 0; i < h.n_tiers; ++i) {
        const TierRecord &t = tiers_[i];
        check_ref(t.name, "tier", i);
        if (uint64_t{t.first_range} + t.n_ranges > h.n_ranges) {
            damaged("tier " + std::to_string(i) + " has ranges beyond the range table");
        }
        if (i > 0 && !(str(tiers_[i - 1].name) < str(t.name))) {
            damaged("tiers are not sorted by name");
        }
        for (uint32_t r = t.first_range; r < t.first_range + t.n_ranges; ++r) {
            const RangeRecord &range = ranges_[r];
            if (range.start < 1 || range.start > range.end ||
                (r > t.first_range && ranges_[r - 1].end >= range.start)) {
                damaged("tier " + std::to_string(i) + " has unsorted or overlapping ranges");
            }
        }
    }
    for (uint32_t i = 0; i < h.n_replicasets; ++i) {
        const ReplicasetRecord &r = replicasets_[i];
        check_ref(r.uuid, "replicaset", i);
        check_ref(r.name, "replicaset", i);
        check_ref(r.tier, "replicaset", i);
        check_ref(r.master_uuid, "replicaset", i);
        check_index(r.master, h.n_instances, "replicaset", i);
        check_index(r.tier_index, h.n_tiers, "replicaset", i);
        if (i > 0 && !(str(replicasets_[i - 1].uuid) < str(r.uuid))) {
            damaged("replicasets are not sorted by uuid");
        }
    }
    for (uint32_t i = 0; i < h.n_instances; ++i) {
        const InstanceRecord &inst = instances_[i];
        check_ref(inst.uuid, "instance", i);
        check_ref(inst.name, "instance", i);
        check_ref(inst.replicaset_uuid, "instance", i);
        check_ref(inst.state, "instance", i);
        check_ref(inst.address, "instance", i);
        check_index(inst.replicaset, h.n_replicasets, "instance", i);
        if (inst.online > 1) {
            damaged("instance " + std::to_string(i) + " has a bad online flag");
        }
        if (i > 0 && !(str(instances_[i - 1].uuid) < str(inst.uuid))) {
            damaged("instances are not sorted by uuid");
        }
    }
    for (uint32_t i = 0; i < h.n_ranges; ++i) {
        const RangeRecord &r = ranges_[i];
        check_ref(r.replicaset_uuid, "range", i);
        check_ref(r.state, "range", i);
        check_index(r.replicaset, h.n_replicasets, "range", i);
    }
}

int32_t SnapshotView::find_tier(std::string_view name) const {
    const TierRecord *end = tiers_ + header_->n_tiers;
    const TierRecord *it = std::lower_bound(
        tiers_, end, name,
        [this](const TierRecord &t, std::string_view key) { return str(t.name) < key; });
    return it != end && str(it->name) == name ? static_cast<int32_t>(it - tiers_) : kNone;
}

const SnapshotView::DenseEntry *SnapshotView::dense_entry(int32_t tier_index,
                                                          uint32_t bucket_id) const {
    if (tier_index < 0 || static_cast<size_t>(tier_index) >= dense_offset_.size()) {
        return nullptr;
    }
    uint32_t offset = dense_offset_[tier_index];
    if (offset == UINT32_MAX || bucket_id < 1 || bucket_id > tiers_[tier_index].bucket_count) {
        return nullptr;
    }
    return &dense_[offset + bucket_id - 1];
}

int32_t SnapshotView::find_range(int32_t tier_index, uint32_t bucket_id) const {
    const DenseEntry *entry = dense_entry(tier_index, bucket_id);
    return entry ? entry->range : search_range(tier_index, bucket_id);
}

void SnapshotView::build_bucket_index(uint32_t max_buckets_per_tier, size_t max_bytes) {
    static_assert(sizeof(DenseEntry) == kBucketIndexEntryBytes);
    dense_offset_.assign(header_->n_tiers, UINT32_MAX);
    dense_.clear();
    dense_.shrink_to_fit();
    // Which tiers get a table: in tier order, while the total stays within the budget.
    const size_t max_entries = std::min<size_t>(max_bytes / sizeof(DenseEntry), UINT32_MAX);
    std::vector<bool> indexed(header_->n_tiers, false);
    size_t total = 0;
    for (uint32_t i = 0; i < header_->n_tiers; ++i) {
        uint32_t count = tiers_[i].bucket_count;
        if (count > 0 && count <= max_buckets_per_tier && total + count <= max_entries) {
            total += count;
            indexed[i] = true;
        }
    }
    dense_.reserve(total);
    for (uint32_t i = 0; i < header_->n_tiers; ++i) {
        const TierRecord &t = tiers_[i];
        if (!indexed[i]) {
            continue;
        }
        dense_offset_[i] = static_cast<uint32_t>(dense_.size());
        dense_.resize(dense_.size() + t.bucket_count, DenseEntry{kNone, kNone});
        DenseEntry *table = dense_.data() + dense_offset_[i];
        for (uint32_t r = t.first_range; r < t.first_range + t.n_ranges; ++r) {
            const RangeRecord &range = ranges_[r];
            // Ranges are validated sorted and disjoint; a range reaching past bucket_count (the
            // count arrived after it) is clipped here and found by search_range.
            uint32_t end = std::min(range.end, t.bucket_count);
            for (uint32_t b = range.start; b <= end; ++b) {
                table[b - 1] = DenseEntry{static_cast<int32_t>(r), range.replicaset};
            }
        }
    }
}

size_t SnapshotView::bucket_index_bytes() const {
    return dense_.capacity() * sizeof(DenseEntry);
}

uint32_t SnapshotView::indexed_tiers() const {
    uint32_t n = 0;
    for (uint32_t offset : dense_offset_) {
        n += offset != UINT32_MAX ? 1 : 0;
    }
    return n;
}

int32_t SnapshotView::search_range(int32_t tier_index, uint32_t bucket_id) const {
    if (tier_index < 0 || static_cast<uint32_t>(tier_index) >= header_->n_tiers) {
        return kNone;
    }
    const TierRecord &t = tiers_[tier_index];
    const RangeRecord *first = ranges_ + t.first_range;
    const RangeRecord *last = first + t.n_ranges;
    const RangeRecord *after = std::upper_bound(
        first, last, bucket_id, [](uint32_t id, const RangeRecord &r) { return id < r.start; });
    if (after == first) {
        return kNone;
    }
    const RangeRecord *range = after - 1;
    return bucket_id <= range->end ? static_cast<int32_t>(range - ranges_) : kNone;
}

int32_t SnapshotView::find_master(int32_t tier_index, uint32_t bucket_id) const {
    if (const DenseEntry *entry = dense_entry(tier_index, bucket_id)) {
        return entry->replicaset == kNone ? kNone : replicasets_[entry->replicaset].master;
    }
    int32_t range = search_range(tier_index, bucket_id);
    if (range == kNone) {
        return kNone;
    }
    int32_t replicaset = ranges_[range].replicaset;
    return replicaset == kNone ? kNone : replicasets_[replicaset].master;
}

int32_t SnapshotView::find_instance(std::string_view uuid) const {
    const InstanceRecord *end = instances_ + header_->n_instances;
    const InstanceRecord *it = std::lower_bound(
        instances_, end, uuid,
        [this](const InstanceRecord &r, std::string_view key) { return str(r.uuid) < key; });
    return it != end && str(it->uuid) == uuid ? static_cast<int32_t>(it - instances_) : kNone;
}

}  // namespace picoroute
