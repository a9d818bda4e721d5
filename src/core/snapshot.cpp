// The flat topology image: building it from a Topology and reading it back safely.
#include "core/snapshot.h"

#include "core/capabilities.h"
#include "core/errors.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <type_traits>
#include <unordered_map>
#include <vector>

namespace picoroute {

static_assert(sizeof(SnapshotHeader) == 32 && alignof(SnapshotHeader) == 8);
static_assert(sizeof(TierRecord) == 24 && alignof(TierRecord) <= 8);
static_assert(sizeof(ReplicasetRecord) == 40 && alignof(ReplicasetRecord) <= 8);
static_assert(sizeof(InstanceRecord) == 56 && alignof(InstanceRecord) <= 8);
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

// The names of the tier records, sorted: the configured tiers plus any tier that only has a bucket
// map. Refuses a topology that the limits cannot hold.
std::vector<std::string> checked_tier_names(const Topology &topology,
                                            const SnapshotLimits &limits) {
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
    return {tier_names.begin(), tier_names.end()};
}

using PositionIndex = std::unordered_map<std::string, int32_t>;

// The position of each key of a sorted container (a name list or a uuid-keyed map) in the image.
template <typename Sorted>
PositionIndex positions(const Sorted &sorted) {
    PositionIndex index;
    int32_t next = 0;
    for (const auto &entry : sorted) {
        if constexpr (std::is_same_v<std::decay_t<decltype(entry)>, std::string>) {
            index[entry] = next++;
        } else {
            index[entry.first] = next++;
        }
    }
    return index;
}

int32_t lookup(const PositionIndex &index, const std::optional<std::string> &key) {
    if (!key) {
        return kNone;
    }
    auto it = index.find(*key);
    return it == index.end() ? kNone : it->second;
}

// The records of an image, their strings deduplicated in one pool. Each record's strings enter the
// pool in the order of its fields (braced initialisers are evaluated left to right).
struct Records {
    StringPool pool;
    std::vector<TierRecord> tiers;
    std::vector<RangeRecord> ranges;
    std::vector<ReplicasetRecord> replicasets;
    std::vector<InstanceRecord> instances;
};

// One tier record per name, each followed in `ranges` by its bucket ranges in bucket order.
void add_tiers(const Topology &topology, const std::vector<std::string> &names,
               const PositionIndex &replicaset_index, Records &out) {
    for (const std::string &name : names) {
        auto count = topology.tiers().find(name);
        bool known = count != topology.tiers().end();
        uint32_t flags =
            (known ? kTierCountKnown : 0) | (topology.default_tier() == name ? kTierDefault : 0);
        TierRecord tier{out.pool.add(std::string_view(name)), known ? count->second : 0, flags,
                        static_cast<uint32_t>(out.ranges.size()), 0};
        auto map = topology.buckets().find(name);
        if (map != topology.buckets().end()) {
            for (const auto &[start, range] : map->second) {
                out.ranges.push_back(RangeRecord{
                    range.start, range.end, lookup(replicaset_index, range.replicaset_uuid),
                    out.pool.add(std::string_view(range.replicaset_uuid)),
                    out.pool.add(std::string_view(range.state))});
            }
        }
        tier.n_ranges = static_cast<uint32_t>(out.ranges.size()) - tier.first_range;
        out.tiers.push_back(tier);
    }
}

void add_replicasets(const Topology &topology, const PositionIndex &tier_index,
                     const PositionIndex &instance_index, Records &out) {
    for (const auto &[uuid, rs] : topology.replicasets()) {
        out.replicasets.push_back(ReplicasetRecord{
            out.pool.add(std::string_view(uuid)), out.pool.add(rs.name), out.pool.add(rs.tier),
            out.pool.add(rs.current_master_uuid), lookup(instance_index, rs.current_master_uuid),
            lookup(tier_index, rs.tier)});
    }
}

void add_instances(const Topology &topology, const PositionIndex &replicaset_index, Records &out) {
    for (const auto &[uuid, instance] : topology.instances()) {
        out.instances.push_back(InstanceRecord{
            out.pool.add(std::string_view(uuid)), out.pool.add(instance.name),
            out.pool.add(instance.replicaset_uuid), out.pool.add(instance.current_state),
            out.pool.add(instance.address), lookup(replicaset_index, instance.replicaset_uuid),
            instance.is_online() ? 1u : 0u, out.pool.add(instance.picodata_version)});
    }
}

// The image of the records: header, record tables and string pool at their Layout offsets.
std::string write_image(const Records &records, const SnapshotLimits &limits) {
    const std::string &strings = records.pool.bytes();
    if (strings.size() > string_budget(limits)) {
        throw Error(ErrorKind::CapacityExceeded,
                    "the snapshot string budget of " + std::to_string(string_budget(limits)) +
                        " bytes is too small: the topology's names, uuids and addresses take " +
                        std::to_string(strings.size()) + " bytes",
                    "the budget grows with picoroute.max_instances, picoroute.max_replicasets and "
                    "picoroute.max_bucket_ranges; raise them");
    }
    Layout layout = layout_for(records.tiers.size(), records.replicasets.size(),
                               records.instances.size(), records.ranges.size(), strings.size());
    std::string image(layout.total, '\0');
    SnapshotHeader header{};
    header.magic = kSnapshotMagic;
    header.n_tiers = static_cast<uint32_t>(records.tiers.size());
    header.n_replicasets = static_cast<uint32_t>(records.replicasets.size());
    header.n_instances = static_cast<uint32_t>(records.instances.size());
    header.n_ranges = static_cast<uint32_t>(records.ranges.size());
    header.strings_size = static_cast<uint32_t>(strings.size());
    header.total_size = layout.total;
    std::memcpy(&image[0], &header, sizeof header);
    put(image, layout.tiers, records.tiers);
    put(image, layout.replicasets, records.replicasets);
    put(image, layout.instances, records.instances);
    put(image, layout.ranges, records.ranges);
    if (!strings.empty()) {
        std::memcpy(&image[layout.strings], strings.data(), strings.size());
    }
    return image;
}

}  // namespace

size_t snapshot_capacity(const SnapshotLimits &limits) {
    return layout_for(max_tiers(limits), limits.max_replicasets, limits.max_instances,
                      limits.max_bucket_ranges, string_budget(limits))
        .total;
}

std::string build_snapshot(const Topology &topology, const SnapshotLimits &limits) {
    std::vector<std::string> tier_names = checked_tier_names(topology, limits);
    PositionIndex tier_index = positions(tier_names);
    PositionIndex replicaset_index = positions(topology.replicasets());
    PositionIndex instance_index = positions(topology.instances());
    Records records;
    add_tiers(topology, tier_names, replicaset_index, records);
    add_replicasets(topology, tier_index, instance_index, records);
    add_instances(topology, replicaset_index, records);
    return write_image(records, limits);
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
    check_tiers();
    check_replicasets();
    check_instances();
    check_ranges();
}

void SnapshotView::check_refs(std::initializer_list<StringRef> refs, const char *what,
                              uint32_t i) const {
    for (StringRef ref : refs) {
        if (uint64_t{ref.offset} + ref.length > header_->strings_size) {
            damaged(std::string(what) + " " + std::to_string(i) + " has a string outside the pool");
        }
    }
}

void SnapshotView::check_index(int32_t index, uint32_t count, const char *what, uint32_t i) {
    if (index != kNone && (index < 0 || static_cast<uint32_t>(index) >= count)) {
        damaged(std::string(what) + " " + std::to_string(i) + " has an index out of range");
    }
}

// Tiers sorted by name; each one's ranges within the range table, sorted and disjoint.
void SnapshotView::check_tiers() const {
    for (uint32_t i = 0; i < header_->n_tiers; ++i) {
        const TierRecord &t = tiers_[i];
        check_refs({t.name}, "tier", i);
        if (uint64_t{t.first_range} + t.n_ranges > header_->n_ranges) {
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
}

void SnapshotView::check_replicasets() const {
    for (uint32_t i = 0; i < header_->n_replicasets; ++i) {
        const ReplicasetRecord &r = replicasets_[i];
        check_refs({r.uuid, r.name, r.tier, r.master_uuid}, "replicaset", i);
        check_index(r.master, header_->n_instances, "replicaset", i);
        check_index(r.tier_index, header_->n_tiers, "replicaset", i);
        if (i > 0 && !(str(replicasets_[i - 1].uuid) < str(r.uuid))) {
            damaged("replicasets are not sorted by uuid");
        }
    }
}

void SnapshotView::check_instances() const {
    for (uint32_t i = 0; i < header_->n_instances; ++i) {
        const InstanceRecord &inst = instances_[i];
        check_refs(
            {inst.uuid, inst.name, inst.replicaset_uuid, inst.state, inst.address, inst.version},
            "instance", i);
        check_index(inst.replicaset, header_->n_replicasets, "instance", i);
        if (inst.online > 1) {
            damaged("instance " + std::to_string(i) + " has a bad online flag");
        }
        if (i > 0 && !(str(instances_[i - 1].uuid) < str(inst.uuid))) {
            damaged("instances are not sorted by uuid");
        }
    }
}

void SnapshotView::check_ranges() const {
    for (uint32_t i = 0; i < header_->n_ranges; ++i) {
        const RangeRecord &r = ranges_[i];
        check_refs({r.replicaset_uuid, r.state}, "range", i);
        check_index(r.replicaset, header_->n_replicasets, "range", i);
    }
}

// The index of the record whose `field` is `key` in records[0..n), sorted by that field, or kNone.
template <typename Record>
int32_t find_sorted(const SnapshotView &view, const Record *records, uint32_t n,
                    StringRef Record::*field, std::string_view key) {
    const Record *end = records + n;
    const Record *it = std::lower_bound(
        records, end, key,
        [&](const Record &r, std::string_view k) { return view.str(r.*field) < k; });
    return it != end && view.str((*it).*field) == key ? static_cast<int32_t>(it - records) : kNone;
}

int32_t SnapshotView::find_tier(std::string_view name) const {
    return find_sorted(*this, tiers_, header_->n_tiers, &TierRecord::name, name);
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
    return find_sorted(*this, instances_, header_->n_instances, &InstanceRecord::uuid, uuid);
}

int32_t SnapshotView::default_tier() const {
    for (uint32_t i = 0; i < header_->n_tiers; ++i) {
        if (tiers_[i].flags & kTierDefault) {
            return static_cast<int32_t>(i);
        }
    }
    return kNone;
}

std::optional<std::string> SnapshotView::cluster_version() const {
    std::vector<std::string> versions;
    for (uint32_t i = 0; i < header_->n_instances; ++i) {
        if (instances_[i].online && instances_[i].version.length != 0) {
            versions.emplace_back(str(instances_[i].version));
        }
    }
    return caps::lowest_version(versions);
}

}  // namespace picoroute
