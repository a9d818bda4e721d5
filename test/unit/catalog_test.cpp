// Catalog rows -> events: parsing, address resolution, ordering, deletes and malformed rows.
#include "core/catalog.h"
#include "core/errors.h"
#include "core/snapshot.h"
#include "core/snapshot_restore.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace picoroute {
namespace {

const std::string kR1 = "11111111-0000-0000-0000-000000000001";
const std::string kR2 = "11111111-0000-0000-0000-000000000002";

std::string range_json(uint32_t start, uint32_t end, const std::string &rs) {
    // Keys deliberately in an unusual order, with the keys picoroute ignores.
    return "{\"tier_name\":\"default\",\"bucket_id_end\":" + std::to_string(end) +
           ",\"state\":\"active\",\"current_replicaset_uuid\":\"" + rs +
           "\",\"target_replicaset_uuid\":\"" + rs +
           "\",\"bucket_id_start\":" + std::to_string(start) + "}";
}

CatalogRows cluster() {
    CatalogRows rows;
    rows.instances = {
        {"i1", "u-i1", "1", kR1, "[\"Online\",1]", "default", "26.3.0-142-gabc"},
        {"i2", "u-i2", "2", kR1, "[\"Offline\",3]", "default", "25.5.10"},
        {"i3", "u-i3", "3", kR2, "[\"Online\",1]", "default", "26.1.6"},
        {"i4", "u-i4", "4", kR2, "[\"Online\",2]", "default", std::nullopt},
    };
    rows.peer_addresses = {
        {"1", "10.0.0.1:4327", "pgproto"}, {"1", "10.0.0.1:3301", "iproto"},
        {"2", "0.0.0.0:4327", "pgproto"},  {"2", "10.0.0.2:3301", "iproto"},
        {"3", "[::]:5433", "pgproto"},     {"3", "[fe80::3]:3301", "iproto"},
        {"4", "10.0.0.4:3301", "iproto"},  {"4", "10.0.0.4:8080", "http"},
    };
    rows.replicasets = {
        {"r1", kR1, "i1", "default", "ready"},
        {"r2", kR2, "nobody", "default", "ready"},
    };
    rows.tiers = {{"default", "3000", std::nullopt}};
    rows.bucket_json["default"] =
        "[" + range_json(1501, 3000, kR2) + "," + range_json(1, 1500, kR1) + "]";
    return rows;
}

template <typename T>
std::vector<const T *> only(const std::vector<Event> &events) {
    std::vector<const T *> out;
    for (const Event &e : events) {
        if (const T *t = std::get_if<T>(&e)) {
            out.push_back(t);
        }
    }
    return out;
}

// One letter per event: r/R replicaset delete/replace, i/I instance, t tier, b/B bucket.
std::string shape(const std::vector<Event> &events) {
    std::string s;
    for (const Event &e : events) {
        if (auto *r = std::get_if<ReplicasetEvent>(&e)) {
            s += r->op == Op::Delete ? 'r' : 'R';
        } else if (auto *i = std::get_if<InstanceEvent>(&e)) {
            s += i->op == Op::Delete ? 'i' : 'I';
        } else if (auto *b = std::get_if<BucketEvent>(&e)) {
            s += b->op == Op::Delete ? 'b' : 'B';
        } else {
            s += 't';
        }
    }
    return s;
}

void expect_catalog_error(const CatalogRows &rows, const Topology &t, const std::string &needle) {
    try {
        std::vector<Event> events = events_from_catalog(rows, t);
        ADD_FAILURE() << "accepted, " << events.size() << " events; expected error about "
                      << needle;
    } catch (const Error &error) {
        EXPECT_EQ(error.kind(), ErrorKind::InvalidCatalog);
        EXPECT_NE(std::string(error.what()).find(needle), std::string::npos) << error.what();
    }
}

TEST(Catalog, ParseInstanceState) {
    EXPECT_EQ(parse_instance_state("[\"Online\",1]"), "Online");
    EXPECT_EQ(parse_instance_state("[\"Expelled\", 7]"), "Expelled");
    EXPECT_EQ(parse_instance_state("\"Offline\""), "Offline");  // a bare JSON string
    EXPECT_EQ(parse_instance_state("Online"), "Online");        // plain text
    for (const char *bad : {"[1,2]", "{}", "[]", "[\"\"]", "not json!", "", "[\"a\",1,2]", "3"}) {
        try {
            parse_instance_state(bad);
            ADD_FAILURE() << "accepted " << bad;
        } catch (const Error &error) {
            EXPECT_EQ(error.kind(), ErrorKind::InvalidCatalog) << bad;
        }
    }
}

TEST(Catalog, ResolvePgprotoAddress) {
    EXPECT_EQ(resolve_pgproto_address("10.0.0.5:4327", "10.0.0.9:3301"), "10.0.0.5:4327");
    EXPECT_EQ(resolve_pgproto_address("db.example:4327", std::nullopt), "db.example:4327");
    EXPECT_EQ(resolve_pgproto_address("0.0.0.0:4327", "10.0.0.5:3301"), "10.0.0.5:4327");
    EXPECT_EQ(resolve_pgproto_address("*:5000", "host.example:3301"), "host.example:5000");
    EXPECT_EQ(resolve_pgproto_address(":5000", "host.example:3301"), "host.example:5000");
    EXPECT_EQ(resolve_pgproto_address("[::]:4327", "[fe80::1]:3301"), "[fe80::1]:4327");
    EXPECT_EQ(resolve_pgproto_address(":::4327", "[fe80::1]:3301"), "[fe80::1]:4327");
    EXPECT_EQ(resolve_pgproto_address("[::]:4327", "10.1.1.1:3301"), "10.1.1.1:4327");
    EXPECT_EQ(resolve_pgproto_address("0.0.0.0:4327", "fe80::2:3301"), "[fe80::2]:4327");
    EXPECT_EQ(resolve_pgproto_address("[::1]:4327", std::nullopt), "[::1]:4327");
    EXPECT_EQ(resolve_pgproto_address("0.0.0.0", "10.0.0.5:3301"), "10.0.0.5:4327");
    EXPECT_EQ(resolve_pgproto_address(std::nullopt, "10.0.0.5:3301"), "");
    EXPECT_EQ(resolve_pgproto_address("0.0.0.0:4327", std::nullopt), "");
    EXPECT_EQ(resolve_pgproto_address("0.0.0.0:4327", "0.0.0.0:3301"), "");
    EXPECT_EQ(resolve_pgproto_address("[::1:4327", std::nullopt), "");
    EXPECT_EQ(resolve_pgproto_address("host:port", std::nullopt), "");
}

TEST(Catalog, ParseBucketJson) {
    auto events = parse_bucket_json("default", cluster().bucket_json["default"]);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].start, 1u);
    EXPECT_EQ(events[0].end, 1500u);
    EXPECT_EQ(events[0].current_replicaset_uuid, kR1);
    EXPECT_EQ(events[0].tier, "default");
    EXPECT_EQ(events[0].state, "active");
    EXPECT_EQ(events[0].op, Op::Replace);
    EXPECT_EQ(events[1].start, 1501u);
    EXPECT_TRUE(parse_bucket_json("default", "[]").empty());
}

TEST(Catalog, ParseBucketJsonRejectsMalformed) {
    const std::vector<std::string> bad = {
        "not json",
        "{\"bucket_id_start\":1}",
        "[1]",
        "[{\"bucket_id_end\":5,\"current_replicaset_uuid\":\"r\",\"state\":\"active\"}]",
        "[{\"bucket_id_start\":1,\"current_replicaset_uuid\":\"r\",\"state\":\"active\"}]",
        "[{\"bucket_id_start\":1,\"bucket_id_end\":5,\"state\":\"active\"}]",
        "[{\"bucket_id_start\":\"1\",\"bucket_id_end\":5,\"current_replicaset_uuid\":\"r\"}]",
        "[{\"bucket_id_start\":1.5,\"bucket_id_end\":5,\"current_replicaset_uuid\":\"r\"}]",
        "[{\"bucket_id_start\":-1,\"bucket_id_end\":5,\"current_replicaset_uuid\":\"r\"}]",
        "[{\"bucket_id_start\":0,\"bucket_id_end\":5,\"current_replicaset_uuid\":\"r\"}]",
        "[{\"bucket_id_start\":6,\"bucket_id_end\":5,\"current_replicaset_uuid\":\"r\"}]",
        "[{\"bucket_id_start\":1,\"bucket_id_end\":5,\"current_replicaset_uuid\":7}]",
        "[{\"bucket_id_start\":1,\"bucket_id_end\":5,\"current_replicaset_uuid\":\"r\",\"state\":1}"
        "]",
        "[{\"bucket_id_start\":1,\"bucket_id_end\":4294967296,\"current_replicaset_uuid\":\"r\"}]",
        "[" + range_json(1, 100, kR1) + "," + range_json(100, 200, kR2) + "]",
        "[" + range_json(50, 60, kR1) + "," + range_json(1, 100, kR2) + "]",
    };
    for (const std::string &text : bad) {
        try {
            parse_bucket_json("tier-x", text);
            ADD_FAILURE() << "accepted " << text;
        } catch (const Error &error) {
            EXPECT_EQ(error.kind(), ErrorKind::InvalidCatalog) << text;
            EXPECT_NE(std::string(error.what()).find("tier-x"), std::string::npos) << error.what();
        }
    }
}

TEST(Catalog, FirstPollEventsInOrder) {
    Topology empty;
    std::vector<Event> events = events_from_catalog(cluster(), empty);
    EXPECT_EQ(shape(events), "RRIIIItBB");

    auto rs = only<ReplicasetEvent>(events);
    EXPECT_EQ(rs[0]->replicaset_uuid, kR1);
    EXPECT_EQ(rs[0]->current_master_uuid, "u-i1");  // resolved through the instance name
    EXPECT_EQ(rs[0]->tier, "default");
    EXPECT_EQ(rs[0]->name, "r1");
    EXPECT_EQ(rs[1]->current_master_uuid, "");  // "nobody" is not an instance

    auto inst = only<InstanceEvent>(events);
    EXPECT_EQ(inst[0]->instance_uuid, "u-i1");
    EXPECT_EQ(inst[0]->address, "10.0.0.1:4327");
    EXPECT_EQ(inst[0]->current_state, "Online");
    EXPECT_EQ(inst[0]->replicaset_uuid, kR1);
    EXPECT_EQ(inst[0]->name, "i1");
    EXPECT_EQ(inst[1]->address, "10.0.0.2:4327");  // IPv4 wildcard -> iproto host
    EXPECT_EQ(inst[1]->current_state, "Offline");
    EXPECT_EQ(inst[2]->address, "[fe80::3]:5433");  // IPv6 wildcard -> iproto host
    EXPECT_EQ(inst[3]->address, "");                // no pgproto row

    auto tiers = only<TierEvent>(events);
    EXPECT_EQ(tiers[0]->name, "default");
    EXPECT_EQ(tiers[0]->bucket_count, 3000u);

    auto buckets = only<BucketEvent>(events);
    EXPECT_EQ(buckets[0]->start, 1u);
    EXPECT_EQ(buckets[1]->start, 1501u);

    Topology t;
    EXPECT_TRUE(t.apply_all(events));
    EXPECT_EQ(t.find_bucket_master("default", 100)->uuid, "u-i1");
    EXPECT_EQ(t.find_bucket_master("default", 2000), nullptr);  // R2's master is unknown
    EXPECT_EQ(t.online_addresses(), (std::set<std::string>{"10.0.0.1:4327", "[fe80::3]:5433"}));
    // Polling the same rows again changes nothing.
    EXPECT_FALSE(t.apply_all(events_from_catalog(cluster(), t)));
}

TEST(Catalog, VanishedEntriesBecomeDeletesFirst) {
    Topology t;
    t.apply_all(events_from_catalog(cluster(), t));

    CatalogRows rows = cluster();
    rows.replicasets.pop_back();                                             // R2 gone
    rows.instances.erase(rows.instances.begin() + 2, rows.instances.end());  // i3, i4 gone
    rows.bucket_json["default"] = "[" + range_json(1, 3000, kR1) + "]";
    std::vector<Event> events = events_from_catalog(rows, t);
    // The range starting at 1501 is gone, and [1, 1500] becomes [1, 3000].
    EXPECT_EQ(shape(events), "rRiiIItbbB");
    EXPECT_EQ(only<ReplicasetEvent>(events)[0]->replicaset_uuid, kR2);
    EXPECT_EQ(only<InstanceEvent>(events)[0]->instance_uuid, "u-i3");
    EXPECT_EQ(only<BucketEvent>(events)[0]->start, 1501u);
    EXPECT_EQ(only<BucketEvent>(events)[0]->op, Op::Delete);

    EXPECT_TRUE(t.apply_all(events));
    EXPECT_EQ(t.replicasets().size(), 1u);
    EXPECT_EQ(t.instances().size(), 2u);
    ASSERT_EQ(t.buckets().at("default").size(), 1u);
    EXPECT_EQ(t.find_bucket_master("default", 3000)->uuid, "u-i1");
}

TEST(Catalog, BucketDeleteForAStartThatDisappeared) {
    Topology t;
    t.apply_all(events_from_catalog(cluster(), t));
    CatalogRows rows = cluster();
    rows.bucket_json["default"] =
        "[" + range_json(1, 1000, kR1) + "," + range_json(1001, 3000, kR2) + "]";
    std::vector<Event> events = events_from_catalog(rows, t);
    // 1501 is gone; [1, 1500] becomes [1, 1000]: both are deleted before the listing is applied.
    EXPECT_EQ(shape(events), "RRIIIItbbBB");
    EXPECT_EQ(only<BucketEvent>(events)[0]->start, 1501u);
    EXPECT_EQ(only<BucketEvent>(events)[1]->start, 1u);
    t.apply_all(events);
    EXPECT_EQ(t.find_bucket_range("default", 1001)->replicaset_uuid, kR2);
    EXPECT_EQ(t.find_bucket_range("default", 1000)->replicaset_uuid, kR1);
    EXPECT_EQ(t.buckets().at("default").size(), 2u);
}

// Counts the buckets of `tier` that the topology maps to a replicaset.
uint32_t mapped_buckets(const Topology &t, const std::string &tier) {
    uint32_t mapped = 0;
    for (const auto &[start, range] : t.buckets().at(tier)) {
        mapped += range.end - range.start + 1;
    }
    return mapped;
}

// A move that cuts the top off a range: the changed range overlaps a known one after the ranges
// listed before it were applied. Applying the listing as it comes used to clear the tier at that
// overlap and publish 2000 of 3000 buckets; the map must hold the whole listing.
TEST(Catalog, PollAfterAMoveKeepsEveryListedBucket) {
    const std::string kR3 = "11111111-0000-0000-0000-000000000003";
    CatalogRows rows = cluster();
    rows.replicasets.push_back({"r3", kR3, "i4", "default", "ready"});
    rows.bucket_json["default"] = "[" + range_json(1, 1000, kR1) + "," +
                                  range_json(1001, 2000, kR2) + "," + range_json(2001, 3000, kR3) +
                                  "]";
    Topology t;
    t.apply_all(events_from_catalog(rows, t));
    ASSERT_EQ(mapped_buckets(t, "default"), 3000u);

    // Buckets 1901..2000 move from r2 to r3.
    rows.bucket_json["default"] = "[" + range_json(1, 1000, kR1) + "," +
                                  range_json(1001, 1900, kR2) + "," + range_json(1901, 3000, kR3) +
                                  "]";
    t.apply_all(events_from_catalog(rows, t));
    EXPECT_EQ(mapped_buckets(t, "default"), 3000u);
    EXPECT_EQ(t.buckets().at("default").size(), 3u);
    EXPECT_EQ(t.find_bucket_range("default", 1)->replicaset_uuid, kR1);
    EXPECT_EQ(t.find_bucket_range("default", 1900)->replicaset_uuid, kR2);
    EXPECT_EQ(t.find_bucket_range("default", 1901)->replicaset_uuid, kR3);

    // And a move that cuts the bottom off a range, into the range before it.
    rows.bucket_json["default"] = "[" + range_json(1, 1100, kR1) + "," +
                                  range_json(1101, 1900, kR2) + "," + range_json(1901, 3000, kR3) +
                                  "]";
    t.apply_all(events_from_catalog(rows, t));
    EXPECT_EQ(mapped_buckets(t, "default"), 3000u);
    EXPECT_EQ(t.find_bucket_range("default", 1100)->replicaset_uuid, kR1);

    // A listing identical to the map produces no bucket event at all.
    std::vector<Event> again = events_from_catalog(rows, t);
    for (const BucketEvent *b : only<BucketEvent>(again)) {
        EXPECT_EQ(b->op, Op::Replace);
    }
    EXPECT_FALSE(t.apply_all(again));
}

// An address that is not a TCP host:port never reaches the map: the instance stays, without an
// address, and the rejection is reported.
TEST(Catalog, NonTcpAddressesAreRejectedAndReported) {
    CatalogRows rows = cluster();
    rows.peer_addresses = {
        {"1", "/tmp:5432", "pgproto"},
        {"2", "x:1 host=/tmp", "pgproto"},
        {"3", "10.0.0.3:4327 sslmode=disable", "pgproto"},
        {"4", "10.0.0.4:4327", "pgproto"},
    };
    std::vector<std::string> warnings;
    Topology t;
    t.apply_all(events_from_catalog(rows, t, &warnings));
    EXPECT_EQ(t.instances().at("u-i1").address.value_or("?"), "");
    EXPECT_EQ(t.instances().at("u-i2").address.value_or("?"), "");
    EXPECT_EQ(t.instances().at("u-i3").address.value_or("?"), "");
    EXPECT_EQ(t.instances().at("u-i4").address.value_or("?"), "10.0.0.4:4327");
    ASSERT_FALSE(warnings.empty());
    EXPECT_NE(warnings[0].find("/tmp:5432"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("u-i1"), std::string::npos) << warnings[0];
    EXPECT_NE(warnings[0].find("host:port"), std::string::npos) << warnings[0];
}

// A tier listed with bucket_count 0 (no sharded data yet) takes its count when it gets one, and
// its buckets are then read; before, the first count stayed and every later refresh failed.
TEST(Catalog, TierWithZeroBucketsAtStartRecovers) {
    CatalogRows rows = cluster();
    rows.tiers = {{"default", "0", std::nullopt}};
    rows.bucket_json.clear();
    Topology t;
    t.apply_all(events_from_catalog(rows, t));
    EXPECT_EQ(t.tiers().at("default"), 0u);

    rows = cluster();
    std::vector<Event> events = events_from_catalog(rows, t);
    t.apply_all(events);
    EXPECT_EQ(t.tiers().at("default"), 3000u);
    EXPECT_EQ(mapped_buckets(t, "default"), 3000u);
}

TEST(Catalog, TierAbsentFromBucketJsonKeepsItsRanges) {
    Topology t;
    t.apply_all(events_from_catalog(cluster(), t));
    CatalogRows rows = cluster();
    rows.bucket_json.clear();
    std::vector<Event> events = events_from_catalog(rows, t);
    EXPECT_EQ(shape(events), "RRIIIIt");
    t.apply_all(events);
    EXPECT_EQ(t.buckets().at("default").size(), 2u);
}

TEST(Catalog, InstancesCarryTheReportedVersion) {
    Topology t;
    t.apply_all(events_from_catalog(cluster(), t));
    EXPECT_EQ(t.instances().at("u-i1").picodata_version.value_or("?"), "26.3.0-142-gabc");
    EXPECT_EQ(t.instances().at("u-i4").picodata_version.value_or("?"), "?");  // column absent
    // Lowest among the online: i2 (25.5.10) is offline.
    EXPECT_EQ(t.cluster_version(), std::optional<std::string>("26.1.6"));
    // An upgrade is an instance event like any other change.
    CatalogRows rows = cluster();
    rows.instances[2].picodata_version = "26.2.1";
    std::vector<Event> events = events_from_catalog(rows, t);
    EXPECT_TRUE(t.apply_all(events));
    EXPECT_EQ(t.cluster_version(), std::optional<std::string>("26.2.1"));
    // A catalog without the column (every version null) detects nothing.
    for (InstanceRow &row : rows.instances) {
        row.picodata_version = std::nullopt;
    }
    Topology fresh;
    fresh.apply_all(events_from_catalog(rows, fresh));
    EXPECT_EQ(fresh.cluster_version(), std::nullopt);
}

TEST(Catalog, TheDefaultTierIsTheOneFlaggedIsDefault) {
    Topology t;
    t.apply_all(events_from_catalog(cluster(), t));
    EXPECT_EQ(t.default_tier(), std::nullopt);  // no is_default column: not said
    CatalogRows rows = cluster();
    rows.tiers = {{"default", "3000", "f"}, {"main", "0", "t"}};
    t.apply_all(events_from_catalog(rows, t));
    EXPECT_EQ(t.default_tier(), std::optional<std::string>("main"));
    std::string image = build_snapshot(t, SnapshotLimits{16, 16, 16});
    SnapshotView view(image.data(), image.size());
    ASSERT_NE(view.default_tier(), kNone);
    EXPECT_EQ(view.str(view.tier(view.default_tier()).name), "main");
    EXPECT_EQ(topology_from_snapshot(view).default_tier(), std::optional<std::string>("main"));
    rows.tiers = {{"default", "3000", "true"}, {"main", "0", "false"}};
    t.apply_all(events_from_catalog(rows, t));
    EXPECT_EQ(t.default_tier(), std::optional<std::string>("default"));
}

TEST(Catalog, ExpelledCountsAsAbsent) {
    Topology t;
    t.apply_all(events_from_catalog(cluster(), t));
    CatalogRows rows = cluster();
    rows.instances[3].current_state = "[\"Expelled\",3]";  // known: deleted
    rows.instances.push_back(
        {"i5", "u-i5", "5", kR2, "[\"Expelled\",1]", "default", std::nullopt});  // unknown
    rows.replicasets[1].state = "expelled";
    rows.replicasets[1].current_master_name = "i5";
    std::vector<Event> events = events_from_catalog(rows, t);
    EXPECT_EQ(shape(events), "rRiIIItBB");
    EXPECT_EQ(only<ReplicasetEvent>(events)[0]->replicaset_uuid, kR2);
    EXPECT_EQ(only<InstanceEvent>(events)[0]->instance_uuid, "u-i4");
    for (const InstanceEvent *e : only<InstanceEvent>(events)) {
        EXPECT_NE(e->instance_uuid, "u-i5");
    }
}

TEST(Catalog, MasterNameResolution) {
    CatalogRows rows = cluster();
    rows.replicasets[1].current_master_name = "i4";
    rows.replicasets[0].current_master_name = std::nullopt;
    std::vector<Event> events = events_from_catalog(rows, Topology{});
    auto rs = only<ReplicasetEvent>(events);
    EXPECT_EQ(rs[0]->current_master_uuid, "");
    EXPECT_EQ(rs[1]->current_master_uuid, "u-i4");
}

TEST(Catalog, MalformedRowsThrowAndProduceNothing) {
    Topology t;
    {
        CatalogRows rows = cluster();
        rows.instances[1].current_state = "{\"Online\":1}";
        expect_catalog_error(rows, t, "u-i2");
    }
    {
        CatalogRows rows = cluster();
        rows.instances[1].current_state = std::nullopt;
        expect_catalog_error(rows, t, "u-i2");
    }
    {
        CatalogRows rows = cluster();
        rows.instances[2].uuid = std::nullopt;
        expect_catalog_error(rows, t, "_pico_instance row 2");
    }
    {
        CatalogRows rows = cluster();
        rows.replicasets[0].uuid = "";
        expect_catalog_error(rows, t, "_pico_replicaset row 0");
    }
    for (const char *count : {"many", "-1", "4294967296", "", "3.5"}) {
        CatalogRows rows = cluster();
        rows.tiers[0].bucket_count = count;
        expect_catalog_error(rows, t, "tier default");
    }
    {
        CatalogRows rows = cluster();
        rows.tiers[0].bucket_count = std::nullopt;
        expect_catalog_error(rows, t, "tier default");
    }
    {
        CatalogRows rows = cluster();
        rows.tiers[0].bucket_count = "4294967295";  // the largest that fits
        EXPECT_NO_THROW(events_from_catalog(rows, t));
    }
    {
        CatalogRows rows = cluster();
        rows.bucket_json["default"] = "[{\"bucket_id_start\":1}]";
        expect_catalog_error(rows, t, "default");
    }
    {
        CatalogRows rows = cluster();
        rows.bucket_json["default"] =
            "[" + range_json(1, 1600, kR1) + "," + range_json(1501, 3000, kR2) + "]";
        expect_catalog_error(rows, t, "overlap");
    }
    {
        CatalogRows rows = cluster();
        rows.bucket_json["default"] = "[" + range_json(1, 3001, kR1) + "]";
        expect_catalog_error(rows, t, "bucket_count 3000");
    }
}

}  // namespace
}  // namespace picoroute
