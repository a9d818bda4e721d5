// The flat topology image: round trip against the model, capacities, and damaged images.
#include "core/errors.h"
#include "core/snapshot.h"
#include "event_builders.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace picoroute {
using namespace picoroute::testing;

namespace {

std::string uuid(char kind, int n) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%c%07d-aaaa-bbbb-cccc-0123456789ab", kind, n);
    return buf;
}

// Several tiers with gaps, unknown owners and every kind of missing master.
Topology sample() {
    Topology t;
    std::vector<Event> ev;
    ev.push_back(TierEvent{"hot", 3000, std::nullopt});
    ev.push_back(TierEvent{"cold", 16, std::nullopt});
    ev.push_back(TierEvent{"empty", 0, std::nullopt});
    for (int r = 1; r <= 5; ++r) {
        ReplicasetEvent rs;
        rs.replicaset_uuid = uuid('R', r);
        rs.tier = r <= 3 ? "hot" : "cold";
        rs.name = "r" + std::to_string(r);
        if (r == 1 || r == 2 || r == 4) {
            rs.current_master_uuid = uuid('I', r * 10);
        } else if (r == 3) {
            rs.current_master_uuid = "";  // unknown master
        }                                 // r == 5: no master at all
        ev.push_back(rs);
        for (int i = 0; i < 3; ++i) {
            InstanceEvent in;
            in.instance_uuid = uuid('I', r * 10 + i);
            in.replicaset_uuid = uuid('R', r);
            in.current_state = i == 2 ? "Offline" : "Online";
            in.address = "10.0." + std::to_string(r) + "." + std::to_string(i) + ":4327";
            in.name = "i" + std::to_string(r * 10 + i);
            if (r == 4 && i == 2) {
                in.picodata_version = "25.5.10";  // offline: does not lower the cluster's version
            } else if (r == 1) {
                in.picodata_version = "26.1.6";
            } else if (r != 5) {
                in.picodata_version = "26.3.0-142-gabc";
            }                           // r == 5: an instance that reports none
            if (!(r == 2 && i == 0)) {  // R2's master instance is never seen
                ev.push_back(in);
            }
        }
    }
    ev.push_back(bucket("hot", 1, 1000, uuid('R', 1)));
    ev.push_back(bucket("hot", 1001, 1500, uuid('R', 2)));
    ev.push_back(bucket("hot", 1601, 2500, uuid('R', 3)));  // gap 1501..1600
    ev.push_back(bucket("hot", 2501, 2999, uuid('R', 9)));  // unknown replicaset; 3000 unowned
    ev.push_back(bucket("cold", 1, 8, uuid('R', 4)));
    ev.push_back(bucket("cold", 9, 16, uuid('R', 5)));
    ev.push_back(bucket("orphan", 5, 7, uuid('R', 1)));  // a tier known only by its bucket map
    t.apply_all(ev);
    return t;
}

const SnapshotLimits kRoomy{64, 16, 64};

// An 8-byte aligned copy of an image.
struct Buffer {
    std::vector<uint64_t> words;
    size_t size;
    explicit Buffer(const std::string &bytes) : words(bytes.size() / 8 + 1), size(bytes.size()) {
        std::memcpy(words.data(), bytes.data(), bytes.size());
    }
    char *data() { return reinterpret_cast<char *>(words.data()); }
};

TEST(Snapshot, RoundTripAgreesWithTheModel) {
    const Topology t = sample();
    const std::string image = build_snapshot(t, kRoomy);
    EXPECT_LE(image.size(), snapshot_capacity(kRoomy));
    SnapshotView view(image.data(), image.size());
    EXPECT_EQ(view.n_tiers(), 4u);  // cold, empty, hot, orphan
    EXPECT_EQ(view.n_replicasets(), 5u);
    EXPECT_EQ(view.n_instances(), 14u);
    EXPECT_EQ(view.n_ranges(), 7u);
    EXPECT_EQ(view.str(view.tier(0).name), "cold");
    EXPECT_EQ(view.str(view.tier(3).name), "orphan");
    EXPECT_EQ(view.tier(3).bucket_count, 0u);

    for (const char *name : {"hot", "cold", "empty", "orphan", "missing", ""}) {
        int32_t tier = view.find_tier(name);
        bool known = t.buckets().count(name) > 0;
        ASSERT_EQ(tier != kNone, known) << name;
        uint32_t count = known && t.tiers().count(name) ? t.tiers().at(name) : 20;
        if (known) {
            EXPECT_EQ(view.tier(tier).bucket_count, t.tiers().count(name) ? count : 0u);
        }
        for (uint32_t b = 0; b <= count + 1; ++b) {
            const BucketRange *model_range = t.find_bucket_range(name, b);
            int32_t r = view.find_range(tier, b);
            ASSERT_EQ(r != kNone, model_range != nullptr) << name << " " << b;
            if (model_range) {
                EXPECT_EQ(view.range(r).start, model_range->start);
                EXPECT_EQ(view.range(r).end, model_range->end);
                EXPECT_EQ(view.str(view.range(r).replicaset_uuid), model_range->replicaset_uuid);
                EXPECT_EQ(view.str(view.range(r).state), "active");
            }
            const Instance *model_master = t.find_bucket_master(name, b);
            int32_t m = view.find_master(tier, b);
            ASSERT_EQ(m != kNone, model_master != nullptr) << name << " " << b;
            if (model_master) {
                EXPECT_EQ(view.str(view.instance(m).uuid), model_master->uuid);
                EXPECT_EQ(view.str(view.instance(m).address), *model_master->address);
            }
        }
    }
    EXPECT_NE(view.find_master(view.find_tier("hot"), 1), kNone);  // sanity: some masters exist

    uint32_t i = 0;
    for (const auto &[id, model] : t.instances()) {
        const InstanceRecord &rec = view.instance(i);
        EXPECT_EQ(view.find_instance(id), static_cast<int32_t>(i));
        EXPECT_EQ(view.str(rec.uuid), id);
        EXPECT_EQ(view.str(rec.name), *model.name);
        EXPECT_EQ(view.str(rec.state), *model.current_state);
        EXPECT_EQ(rec.online, model.is_online() ? 1u : 0u);
        ASSERT_NE(rec.replicaset, kNone);
        EXPECT_EQ(view.str(view.replicaset(rec.replicaset).uuid), *model.replicaset_uuid);
        ++i;
    }
    EXPECT_EQ(view.find_instance("nope"), kNone);
    uint32_t r = 0;
    for (const auto &[id, model] : t.replicasets()) {
        const ReplicasetRecord &rec = view.replicaset(r++);
        EXPECT_EQ(view.str(rec.uuid), id);
        EXPECT_EQ(view.str(rec.name), *model.name);
        EXPECT_EQ(view.str(view.tier(rec.tier_index).name), *model.tier);
    }
    EXPECT_EQ(view.find_range(kNone, 1), kNone);
    EXPECT_EQ(view.find_range(99, 1), kNone);
    EXPECT_EQ(view.find_master(kNone, 1), kNone);
}

TEST(Snapshot, InstancesCarryTheirVersionAndTheClusterVersionIsTheLowestOnline) {
    Topology t = sample();
    std::string image = build_snapshot(t, kRoomy);
    SnapshotView view(image.data(), image.size());
    int32_t i = view.find_instance(uuid('I', 11));
    ASSERT_NE(i, kNone);
    EXPECT_EQ(view.str(view.instance(i).version), "26.1.6");
    EXPECT_EQ(view.instance(view.find_instance(uuid('I', 50))).version.length, 0u);
    EXPECT_EQ(t.cluster_version(), std::optional<std::string>("26.1.6"));
    EXPECT_EQ(view.cluster_version(), std::optional<std::string>("26.1.6"));
    // The 26.1.6 instances go offline: the lowest online is the head build.
    for (int n : {10, 11}) {
        InstanceEvent off;
        off.instance_uuid = uuid('I', n);
        off.current_state = "Offline";
        t.apply(off);
    }
    image = build_snapshot(t, kRoomy);
    EXPECT_EQ(SnapshotView(image.data(), image.size()).cluster_version(),
              std::optional<std::string>("26.3.0-142-gabc"));
    EXPECT_EQ(Topology().cluster_version(), std::nullopt);
    std::string empty = build_snapshot(Topology(), kRoomy);
    EXPECT_EQ(SnapshotView(empty.data(), empty.size()).cluster_version(), std::nullopt);
}

TEST(Snapshot, EmptyTopology) {
    const std::string image = build_snapshot(Topology{}, SnapshotLimits{});
    SnapshotView view(image.data(), image.size());
    EXPECT_EQ(view.n_tiers(), 0u);
    EXPECT_EQ(view.find_tier("x"), kNone);
    EXPECT_EQ(view.find_instance("x"), kNone);
}

TEST(Snapshot, CapacityErrorsNameTheSetting) {
    const Topology t = sample();
    auto expect_capacity = [&](SnapshotLimits limits, const std::string &needle) {
        try {
            build_snapshot(t, limits);
            ADD_FAILURE() << "fitted; expected " << needle;
        } catch (const Error &error) {
            EXPECT_EQ(error.kind(), ErrorKind::CapacityExceeded);
            EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
        }
    };
    expect_capacity({13, 16, 64},
                    "picoroute.max_instances is 13 but the topology has 14 instances");
    expect_capacity({64, 4, 64}, "picoroute.max_replicasets is 4");
    expect_capacity({64, 16, 6}, "picoroute.max_bucket_ranges is 6 but the topology has 7");
    EXPECT_NO_THROW(build_snapshot(t, {14, 5, 7}));  // exactly at the limits

    Topology tiers_only;
    for (int i = 0; i < 3; ++i) {
        tiers_only.apply(TierEvent{"t" + std::to_string(i), 10, std::nullopt});
    }
    try {
        build_snapshot(tiers_only, {0, 2, 0});
        ADD_FAILURE() << "3 tiers fitted in max_replicasets 2";
    } catch (const Error &error) {
        EXPECT_NE(std::string(error.what()).find("picoroute.max_replicasets"), std::string::npos);
        EXPECT_NE(std::string(error.what()).find("tiers"), std::string::npos);
    }

    Topology long_strings;
    InstanceEvent huge;
    huge.instance_uuid = "i1";
    huge.name = std::string(5000, 'h');  // an address that long is not a hostname
    long_strings.apply(huge);
    try {
        build_snapshot(long_strings, {1, 1, 1});
        ADD_FAILURE() << "a 5000-byte name fitted a 1-instance budget";
    } catch (const Error &error) {
        EXPECT_EQ(error.kind(), ErrorKind::CapacityExceeded);
        EXPECT_NE(std::string(error.what()).find("string budget"), std::string::npos);
    }
}

TEST(Snapshot, RealisticTopologyAtTheLimitsFits) {
    const SnapshotLimits limits{300, 100, 3000};
    Topology t;
    t.apply(TierEvent{"default", 3000, std::nullopt});
    std::vector<Event> ev;
    for (int r = 0; r < 100; ++r) {
        ReplicasetEvent rs;
        rs.replicaset_uuid = uuid('R', r);
        rs.tier = "default";
        rs.name = "default_replicaset_" + std::to_string(r);
        rs.current_master_uuid = uuid('I', r * 3);
        ev.push_back(rs);
        for (int i = 0; i < 3; ++i) {
            InstanceEvent in;
            in.instance_uuid = uuid('I', r * 3 + i);
            in.name = "default_" + std::to_string(r) + "_" + std::to_string(i);
            in.replicaset_uuid = rs.replicaset_uuid;
            in.current_state = "Online";
            in.address = "picodata-node-" + std::to_string(r * 3 + i) + ".cluster.internal:4327";
            ev.push_back(in);
        }
    }
    for (uint32_t b = 1; b <= 3000; ++b) {  // worst case: every bucket its own range
        ev.push_back(bucket("default", b, b, uuid('R', static_cast<int>(b % 100))));
    }
    ASSERT_TRUE(t.apply_all(ev));
    const std::string image = build_snapshot(t, limits);
    EXPECT_LE(image.size(), snapshot_capacity(limits));
    SnapshotView view(image.data(), image.size());
    int32_t tier = view.find_tier("default");
    for (uint32_t b = 1; b <= 3000; ++b) {
        int32_t m = view.find_master(tier, b);
        ASSERT_NE(m, kNone);
        ASSERT_EQ(view.str(view.instance(m).uuid), t.find_bucket_master("default", b)->uuid);
    }
}

TEST(Snapshot, TruncatedImagesThrow) {
    const std::string image = build_snapshot(sample(), kRoomy);
    Buffer buf(image);
    for (size_t size = 0; size < image.size(); ++size) {
        EXPECT_THROW(SnapshotView(buf.data(), size), Error) << size;
    }
    EXPECT_NO_THROW(SnapshotView(buf.data(), image.size() + 8));  // a larger slot is fine
    EXPECT_THROW(SnapshotView(nullptr, 100), Error);
}

TEST(Snapshot, UnalignedImageThrows) {
    const std::string image = build_snapshot(sample(), kRoomy);
    std::vector<uint64_t> words(image.size() / 8 + 2);
    char *shifted = reinterpret_cast<char *>(words.data()) + 4;
    std::memcpy(shifted, image.data(), image.size());
    EXPECT_THROW(SnapshotView(shifted, image.size()), Error);
}

// Offsets of the sections in an image built from sample().
struct Sections {
    size_t tiers = 32, replicasets, instances, ranges;
    explicit Sections(const SnapshotHeader &h) {
        auto a8 = [](size_t n) { return (n + 7) / 8 * 8; };
        replicasets = a8(tiers + h.n_tiers * sizeof(TierRecord));
        instances = a8(replicasets + h.n_replicasets * sizeof(ReplicasetRecord));
        ranges = a8(instances + h.n_instances * sizeof(InstanceRecord));
    }
};

template <typename Mutate>
void expect_damaged(const std::string &image, Mutate mutate, const char *what) {
    Buffer buf(image);
    SnapshotHeader header;
    std::memcpy(&header, buf.data(), sizeof header);
    mutate(buf.data(), Sections(header));
    try {
        SnapshotView view(buf.data(), buf.size);
        ADD_FAILURE() << what << ": damaged image accepted";
    } catch (const Error &error) {
        EXPECT_EQ(error.kind(), ErrorKind::InvalidInput) << what;
    }
}

TEST(Snapshot, CorruptedFieldsThrow) {
    const std::string image = build_snapshot(sample(), kRoomy);
    auto set32 = [](char *base, size_t offset, uint32_t value) {
        std::memcpy(base + offset, &value, sizeof value);
    };
    expect_damaged(
        image, [&](char *b, const Sections &) { set32(b, 0, 0xdeadbeef); }, "magic");
    expect_damaged(
        image, [&](char *b, const Sections &) { set32(b, 4, 1000); }, "n_tiers");
    expect_damaged(
        image, [&](char *b, const Sections &) { set32(b, 16, 0xffffffff); }, "n_ranges");
    expect_damaged(
        image, [&](char *b, const Sections &) { set32(b, 20, 1u << 30); }, "strings");
    expect_damaged(
        image, [&](char *b, const Sections &) { set32(b, 24, 8); }, "total_size");
    expect_damaged(
        image, [&](char *b, const Sections &s) { set32(b, s.tiers + 16, 5); }, "tier first_range");
    expect_damaged(
        image, [&](char *b, const Sections &s) { set32(b, s.tiers, 1u << 20); },
        "tier name offset");
    expect_damaged(
        image, [&](char *b, const Sections &s) { set32(b, s.replicasets + 32, 99); },
        "replicaset master");
    expect_damaged(
        image, [&](char *b, const Sections &s) { set32(b, s.replicasets + 36, 4); },
        "replicaset tier_index");
    expect_damaged(
        image, [&](char *b, const Sections &s) { set32(b, s.instances + 40, 5); },
        "instance replicaset");
    expect_damaged(
        image, [&](char *b, const Sections &s) { set32(b, s.instances + 44, 2); },
        "instance online flag");
    expect_damaged(
        image, [&](char *b, const Sections &s) { set32(b, s.instances + 4, 1u << 31); },
        "instance uuid length");
    expect_damaged(
        image, [&](char *b, const Sections &s) { set32(b, s.ranges + 8, 0x7fffffff); },
        "range replicaset");
    expect_damaged(
        image, [&](char *b, const Sections &s) { set32(b, s.ranges + 8, 0xfffffffe); },
        "negative range replicaset");
    expect_damaged(
        image, [&](char *b, const Sections &s) { set32(b, s.ranges + 0, 0); }, "range start 0");
    expect_damaged(
        image, [&](char *b, const Sections &s) { set32(b, s.ranges + 28, 2); },
        "overlapping ranges");
}

// Exercises every accessor of a view that validated, so a bad image that slips through would read
// out of bounds here (and be caught by sanitizers, or crash).
void touch_everything(const SnapshotView &view) {
    size_t sum = 0;
    for (uint32_t t = 0; t < view.n_tiers(); ++t) {
        sum += view.str(view.tier(t).name).size();
        sum += static_cast<size_t>(view.find_tier(view.str(view.tier(t).name)) + 1);
        for (uint32_t b = 0; b < 40; ++b) {
            int32_t m = view.find_master(static_cast<int32_t>(t), b * 97);
            if (m != kNone) {
                sum += view.str(view.instance(m).address).size();
            }
        }
    }
    for (uint32_t i = 0; i < view.n_instances(); ++i) {
        sum += view.str(view.instance(i).uuid).size() + view.str(view.instance(i).address).size();
        sum += static_cast<size_t>(view.find_instance(view.str(view.instance(i).uuid)) + 1);
    }
    for (uint32_t r = 0; r < view.n_ranges(); ++r) {
        sum += view.str(view.range(r).replicaset_uuid).size();
    }
    EXPECT_GE(sum, 0u);
}

TEST(Snapshot, RandomDamageNeverCrashes) {
    const std::string image = build_snapshot(sample(), kRoomy);
    uint64_t state = 0x9e3779b97f4a7c15ull;
    auto next = [&state]() {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<uint32_t>(state >> 33);
    };
    int accepted = 0, rejected = 0;
    for (int round = 0; round < 3000; ++round) {
        Buffer buf(image);
        int flips = 1 + static_cast<int>(next() % 4);
        for (int f = 0; f < flips; ++f) {
            buf.data()[next() % image.size()] = static_cast<char>(next());
        }
        try {
            SnapshotView view(buf.data(), buf.size);
            touch_everything(view);
            ++accepted;
        } catch (const Error &) {
            ++rejected;
        }
    }
    EXPECT_GT(rejected, 0);
    EXPECT_GT(accepted, 0);  // flips inside the string pool are harmless

    for (int round = 0; round < 2000; ++round) {  // pure garbage, with a valid magic half the time
        std::vector<uint64_t> words(64);
        for (uint64_t &w : words) {
            w = (uint64_t{next()} << 32) | next();
        }
        char *bytes = reinterpret_cast<char *>(words.data());
        if (round % 2 == 0) {
            std::memcpy(bytes, &kSnapshotMagic, sizeof kSnapshotMagic);
            for (int c = 1; c <= 5; ++c) {  // small counts so validation gets further
                uint32_t small = next() % 4;
                std::memcpy(bytes + 4 * c, &small, sizeof small);
            }
        }
        try {
            SnapshotView view(bytes, words.size() * 8);
            touch_everything(view);
        } catch (const Error &) {
        }
    }
}

}  // namespace
}  // namespace picoroute

namespace picoroute {
namespace {

// The dense bucket index must answer exactly what the binary search answers, for every bucket,
// including gaps, buckets beyond a tier's count, tiers without a count and tiers too large for it.
TEST(SnapshotBucketIndex, AgreesWithTheSearchForEveryBucket) {
    Topology topology;
    std::vector<Event> events{TierEvent{"a", 100, std::nullopt}, TierEvent{"b", 7, std::nullopt}};
    for (const char *rs : {"r1", "r2"}) {
        ReplicasetEvent e;
        e.replicaset_uuid = rs;
        e.tier = "a";
        events.push_back(e);
    }
    events.push_back(bucket("a", 1, 10, "r1"));
    events.push_back(bucket("a", 11, 11, "r2"));
    events.push_back(bucket("a", 20, 60, "r1"));  // gap 12..19, and 61..100 unmapped
    events.push_back(bucket("b", 1, 7, "r2"));
    events.push_back(bucket("c", 5, 9, "r2"));  // a tier whose count is not known
    topology.apply_all(events);
    const std::string image = build_snapshot(topology, SnapshotLimits{16, 16, 64});

    SnapshotView plain(image.data(), image.size());
    for (uint32_t limit : {1000u, 50u, 0u}) {
        SnapshotView indexed(image.data(), image.size());
        indexed.build_bucket_index(limit);
        for (const char *tier : {"a", "b", "c"}) {
            int32_t t = indexed.find_tier(tier);
            ASSERT_NE(t, kNone) << tier;
            for (uint32_t bucket = 0; bucket <= 120; ++bucket) {
                EXPECT_EQ(indexed.find_range(t, bucket), plain.search_range(t, bucket))
                    << "tier " << tier << " bucket " << bucket << " limit " << limit;
                EXPECT_EQ(indexed.find_master(t, bucket), plain.find_master(t, bucket));
            }
        }
    }
    SnapshotView indexed(image.data(), image.size());
    indexed.build_bucket_index();
    int32_t a = indexed.find_tier("a");
    EXPECT_EQ(indexed.find_range(a, 15), kNone);
    EXPECT_EQ(indexed.find_range(a, 61), kNone);
    ASSERT_NE(indexed.find_range(a, 11), kNone);
    EXPECT_EQ(indexed.str(indexed.range(indexed.find_range(a, 11)).replicaset_uuid), "r2");
}

// The tables of the bucket index stay within a memory budget: many large tiers used to take 8
// bytes per bucket of every tier (127 tiers x 1,048,576 buckets: 1 GiB per session). Tiers beyond
// the budget are searched, with the same answers.
TEST(SnapshotBucketIndex, StaysWithinItsMemoryBudget) {
    Topology topology;
    std::vector<Event> events;
    const uint32_t kTiers = 20, kBuckets = 100000;
    for (uint32_t i = 0; i < kTiers; ++i) {
        std::string tier = "t" + std::to_string(100 + i);
        events.push_back(TierEvent{tier, kBuckets, std::nullopt});
        events.push_back(bucket(tier, 1, kBuckets / 2, "r1"));
        events.push_back(bucket(tier, kBuckets / 2 + 1, kBuckets, "r2"));
    }
    topology.apply_all(events);
    const std::string image = build_snapshot(topology, SnapshotLimits{16, 64, 64});
    SnapshotView plain(image.data(), image.size());

    SnapshotView unbounded(image.data(), image.size());
    unbounded.build_bucket_index();
    EXPECT_EQ(unbounded.indexed_tiers(), kTiers);
    EXPECT_GE(unbounded.bucket_index_bytes(), size_t{kTiers} * kBuckets * kBucketIndexEntryBytes);

    const size_t budget = 3 * size_t{kBuckets} * kBucketIndexEntryBytes + 100;
    SnapshotView bounded(image.data(), image.size());
    bounded.build_bucket_index(1u << 20, budget);
    EXPECT_LE(bounded.bucket_index_bytes(), budget);
    EXPECT_EQ(bounded.indexed_tiers(), 3u);
    for (uint32_t i = 0; i < kTiers; ++i) {
        int32_t t = bounded.find_tier("t" + std::to_string(100 + i));
        for (uint32_t b : {1u, kBuckets / 2, kBuckets / 2 + 1, kBuckets, kBuckets + 1}) {
            EXPECT_EQ(bounded.find_range(t, b), plain.search_range(t, b));
            EXPECT_EQ(bounded.find_master(t, b), plain.find_master(t, b));
        }
    }
    SnapshotView none(image.data(), image.size());
    none.build_bucket_index(1u << 20, 0);
    EXPECT_EQ(none.indexed_tiers(), 0u);
    EXPECT_EQ(none.bucket_index_bytes(), 0u);
}

}  // namespace
}  // namespace picoroute
