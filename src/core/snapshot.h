// The flat, position-independent image of a topology that the worker copies into shared memory and
// that every backend reads. Fixed-size records addressed by index plus one string pool; no
// pointers, so the bytes mean the same at any address. Lookups run directly on the bytes
// (SnapshotView).
//
// Layout (all little-endian host order, 8-byte aligned sections):
//   SnapshotHeader
//   TierRecord[n_tiers]            sorted by name
//   ReplicasetRecord[n_replicasets] sorted by uuid
//   InstanceRecord[n_instances]     sorted by uuid
//   RangeRecord[n_ranges]           grouped by tier (tier order), sorted by start within a tier
//   char strings[strings_size]      string pool (strings are not NUL-terminated; ref = offset+len)
#pragma once
#include "core/firewall.h"

#include "core/topology.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace picoroute {

// The magic names the layout: it changes with any record (PRT2: instances carry their version).
inline constexpr uint32_t kSnapshotMagic = 0x50525432;  // "PRT2"
inline constexpr int32_t kNone = -1;
inline constexpr size_t kBucketIndexEntryBytes = 8;  // one bucket in SnapshotView's dense table

struct StringRef {
    uint32_t offset = 0;
    uint32_t length = 0;
};

struct SnapshotHeader {
    uint32_t magic;
    uint32_t n_tiers;
    uint32_t n_replicasets;
    uint32_t n_instances;
    uint32_t n_ranges;
    uint32_t strings_size;
    uint64_t total_size;  // bytes of the whole image, header included
};

// TierRecord::flags: bucket_count came from the tier; the catalog flags it as the default tier.
inline constexpr uint32_t kTierCountKnown = 1;
inline constexpr uint32_t kTierDefault = 2;

struct TierRecord {
    StringRef name;
    uint32_t bucket_count;
    uint32_t flags;
    uint32_t first_range;  // index into RangeRecord[]
    uint32_t n_ranges;
};

struct ReplicasetRecord {
    StringRef uuid, name, tier;  // empty ref = unknown
    StringRef master_uuid;       // kept even while the master instance itself is unknown
    int32_t master;              // index into InstanceRecord[] or kNone
    int32_t tier_index;          // index into TierRecord[] or kNone
};

struct InstanceRecord {
    StringRef uuid, name, replicaset_uuid, state, address;
    int32_t replicaset;  // index into ReplicasetRecord[] or kNone
    uint32_t online;     // 1 when state is Online
    StringRef version;   // picodata_version as reported; empty ref = unknown
};

struct RangeRecord {
    uint32_t start, end;
    int32_t replicaset;  // index into ReplicasetRecord[] or kNone when the replicaset is unknown
    StringRef replicaset_uuid;
    StringRef state;
};

// Capacities, from the picoroute.max_* settings.
struct SnapshotLimits {
    uint32_t max_instances = 0;
    uint32_t max_replicasets = 0;  // also bounds the number of tiers
    uint32_t max_bucket_ranges = 0;
};

// The largest image that `limits` allow (records plus a string budget); the size of one
// shared-memory slot.
size_t snapshot_capacity(const SnapshotLimits &limits);

// Serializes `topology` into a new image. Throws Error(CapacityExceeded) naming the capacity that
// is too small ("picoroute.max_bucket_ranges is 1024 but the topology has 3000 bucket ranges") when
// it does not fit `limits`.
std::string build_snapshot(const Topology &topology, const SnapshotLimits &limits);

// Read-only access to an image. The constructor validates the header and every index and string
// reference against `size`, throwing Error(InvalidInput) for a damaged image, so the accessors
// below need no further checks.
class SnapshotView {
  public:
    SnapshotView(const void *data, size_t size);

    uint32_t n_tiers() const { return header_->n_tiers; }
    uint32_t n_replicasets() const { return header_->n_replicasets; }
    uint32_t n_instances() const { return header_->n_instances; }
    uint32_t n_ranges() const { return header_->n_ranges; }

    const TierRecord &tier(uint32_t i) const { return tiers_[i]; }
    const ReplicasetRecord &replicaset(uint32_t i) const { return replicasets_[i]; }
    const InstanceRecord &instance(uint32_t i) const { return instances_[i]; }
    const RangeRecord &range(uint32_t i) const { return ranges_[i]; }
    std::string_view str(StringRef ref) const { return {strings_ + ref.offset, ref.length}; }

    // Index of the tier named `name` or kNone. O(log tiers).
    int32_t find_tier(std::string_view name) const;
    // Index of the range of tier `tier_index` holding `bucket_id` or kNone. O(1) for a tier
    // covered by build_bucket_index(), else O(log ranges).
    int32_t find_range(int32_t tier_index, uint32_t bucket_id) const;
    // The range search on the image itself, O(log ranges).
    int32_t search_range(int32_t tier_index, uint32_t bucket_id) const;

    // Builds a dense bucket -> range table for every tier with at most `max_buckets_per_tier`
    // buckets, tier after tier while the tables stay within `max_bytes` in all, so find_range no
    // longer depends on the number of ranges there. A tier left out is searched (O(log ranges)).
    // A reader that keeps a view for many lookups builds it once (cost O(total buckets),
    // kBucketIndexEntryBytes a bucket).
    void build_bucket_index(uint32_t max_buckets_per_tier = 1u << 20,
                            size_t max_bytes = static_cast<size_t>(-1));
    // Bytes held by the tables of build_bucket_index, and the number of tiers they cover.
    size_t bucket_index_bytes() const;
    uint32_t indexed_tiers() const;
    // Index of the master instance of the bucket's owner or kNone (same rules as
    // Topology::find_bucket_master).
    int32_t find_master(int32_t tier_index, uint32_t bucket_id) const;
    // Index of the tier flagged kTierDefault or kNone.
    int32_t default_tier() const;
    // Index of the instance with this uuid or kNone.
    int32_t find_instance(std::string_view uuid) const;
    // The lowest version reported by an online instance (Topology::cluster_version on the image).
    std::optional<std::string> cluster_version() const;

  private:
    const SnapshotHeader *header_;
    const TierRecord *tiers_;
    const ReplicasetRecord *replicasets_;
    const InstanceRecord *instances_;
    const RangeRecord *ranges_;
    const char *strings_;

    // Validation of an image by the constructor: each throws Error (InvalidInput) naming the first
    // damaged record.
    void check_tiers() const;
    void check_replicasets() const;
    void check_instances() const;
    void check_ranges() const;
    void check_refs(std::initializer_list<StringRef> refs, const char *what, uint32_t i) const;
    static void check_index(int32_t index, uint32_t count, const char *what, uint32_t i);
    // build_bucket_index(): per tier, the offset of its table in dense_ or UINT32_MAX. Each entry
    // holds the bucket's range and that range's replicaset, so a master lookup touches one entry
    // and the (small) replicaset array only.
    struct DenseEntry {
        int32_t range;
        int32_t replicaset;
    };
    const DenseEntry *dense_entry(int32_t tier_index, uint32_t bucket_id) const;
    std::vector<uint32_t> dense_offset_;
    std::vector<DenseEntry> dense_;
};

}  // namespace picoroute
