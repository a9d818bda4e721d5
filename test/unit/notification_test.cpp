// Topology notification JSON (facts, section 5) -> events.
#include "core/errors.h"
#include "core/notification.h"
#include "core/topology.h"

#include <gtest/gtest.h>

#include <string>

namespace picoroute {
namespace {

const std::string kHead = R"("timestamp":1719000000,"raft":{"term":3,"index":42},)";

std::string note(const std::string &body) {
    return "{" + kHead + body + "}";
}

void expect_invalid(const std::string &json, const std::string &needle) {
    try {
        auto events = events_from_notification(json);
        ADD_FAILURE() << "accepted (" << events.size() << " events): " << json;
    } catch (const Error &error) {
        EXPECT_EQ(error.kind(), ErrorKind::InvalidInput) << json;
        EXPECT_NE(std::string(error.what()).find(needle), std::string::npos)
            << "message: " << error.what() << "\nexpected to contain: " << needle;
    }
}

TEST(Notification, Replicaset) {
    auto events = events_from_notification(note(
        R"("op":"replace","map":"replicaset","replicaset_uuid":"R1","tier":"default","current_master_uuid":"i1","name":"r1")"));
    ASSERT_EQ(events.size(), 1u);
    const auto &e = std::get<ReplicasetEvent>(events[0]);
    EXPECT_EQ(e.op, Op::Replace);
    EXPECT_EQ(e.replicaset_uuid, "R1");
    EXPECT_EQ(e.tier, "default");
    EXPECT_EQ(e.current_master_uuid, "i1");
    EXPECT_EQ(e.name, "r1");

    events =
        events_from_notification(R"({"op":"delete","map":"replicaset","replicaset_uuid":"R2"})");
    const auto &d = std::get<ReplicasetEvent>(events[0]);
    EXPECT_EQ(d.op, Op::Delete);
    EXPECT_EQ(d.replicaset_uuid, "R2");
    EXPECT_FALSE(d.tier);
    EXPECT_FALSE(d.current_master_uuid);
    EXPECT_FALSE(d.name);
}

TEST(Notification, Instance) {
    auto events = events_from_notification(note(
        R"("op":"replace","map":"instance","instance_uuid":"i1","replicaset_uuid":"R1","current_state":"Online","address":"10.0.0.1:4327","unknown_key":[1,2])"));
    const auto &e = std::get<InstanceEvent>(events.at(0));
    EXPECT_EQ(e.op, Op::Replace);
    EXPECT_EQ(e.instance_uuid, "i1");
    EXPECT_EQ(e.replicaset_uuid, "R1");
    EXPECT_EQ(e.current_state, "Online");
    EXPECT_EQ(e.address, "10.0.0.1:4327");
    EXPECT_FALSE(e.name);

    // Fields that did not change are omitted.
    events = events_from_notification(
        R"({"op":"replace","map":"instance","instance_uuid":"i1","current_state":"Offline"})");
    const auto &partial = std::get<InstanceEvent>(events.at(0));
    EXPECT_FALSE(partial.replicaset_uuid);
    EXPECT_FALSE(partial.address);
    EXPECT_EQ(partial.current_state, "Offline");
}

TEST(Notification, Bucket) {
    auto events = events_from_notification(note(
        R"("op":"replace","map":"bucket","tier":"default","state":"active","bucket_id":{"start":1,"end":1500},"current_replicaset_uuid":"R1")"));
    const auto &e = std::get<BucketEvent>(events.at(0));
    EXPECT_EQ(e.op, Op::Replace);
    EXPECT_EQ(e.tier, "default");
    EXPECT_EQ(e.state, "active");
    EXPECT_EQ(e.start, 1u);
    EXPECT_EQ(e.end, 1500u);
    EXPECT_EQ(e.current_replicaset_uuid, "R1");

    events = events_from_notification(
        R"({"op":"replace","map":"bucket","tier":"t","bucket_id":{"end":9,"start":9},"current_replicaset_uuid":"R1"})");
    EXPECT_EQ(std::get<BucketEvent>(events.at(0)).state, "active");  // default state

    events = events_from_notification(
        R"({"op":"delete","map":"bucket","tier":"t","bucket_id":{"start":5,"end":9}})");
    const auto &d = std::get<BucketEvent>(events.at(0));
    EXPECT_EQ(d.op, Op::Delete);
    EXPECT_EQ(d.start, 5u);
}

TEST(Notification, Tier) {
    auto events =
        events_from_notification(R"({"op":"replace","map":"tier","name":"cold","bucket_count":0})");
    const auto &e = std::get<TierEvent>(events.at(0));
    EXPECT_EQ(e.name, "cold");
    EXPECT_EQ(e.bucket_count, 0u);
}

TEST(Notification, ArrayOfNotificationsInOrder) {
    auto events = events_from_notification(R"([
        {"op":"replace","map":"tier","name":"default","bucket_count":3000},
        {"op":"replace","map":"replicaset","replicaset_uuid":"R1","tier":"default","current_master_uuid":"i1"},
        {"op":"replace","map":"instance","instance_uuid":"i1","replicaset_uuid":"R1","current_state":"Online","address":"h:4327"},
        {"op":"replace","map":"bucket","tier":"default","state":"active","bucket_id":{"start":1,"end":3000},"current_replicaset_uuid":"R1"}
    ])");
    ASSERT_EQ(events.size(), 4u);
    EXPECT_TRUE(std::holds_alternative<TierEvent>(events[0]));
    EXPECT_TRUE(std::holds_alternative<ReplicasetEvent>(events[1]));
    EXPECT_TRUE(std::holds_alternative<InstanceEvent>(events[2]));
    EXPECT_TRUE(std::holds_alternative<BucketEvent>(events[3]));
    Topology t;
    EXPECT_TRUE(t.apply_all(events));
    ASSERT_NE(t.find_bucket_master("default", 3000), nullptr);
    EXPECT_EQ(t.find_bucket_master("default", 3000)->address, "h:4327");
    EXPECT_TRUE(events_from_notification("[]").empty());
}

TEST(Notification, MalformedInput) {
    expect_invalid("{not json", "not valid JSON");
    expect_invalid("42", "element 0: a notification must be a JSON object");
    expect_invalid(R"([{"op":"delete","map":"instance","instance_uuid":"i"}, "x"])", "element 1");
    expect_invalid(R"({"map":"instance","instance_uuid":"i"})", "key \"op\" is missing");
    expect_invalid(R"({"op":"upsert","map":"instance","instance_uuid":"i"})", "key \"op\"");
    expect_invalid(R"({"op":1,"map":"instance","instance_uuid":"i"})",
                   "key \"op\" must be a string");
    expect_invalid(R"({"op":"replace","instance_uuid":"i"})", "key \"map\" is missing");
    expect_invalid(R"({"op":"replace","map":"shard"})", "key \"map\" has unknown value \"shard\"");
    expect_invalid(R"({"op":"replace","map":"instance"})", "key \"instance_uuid\" is missing");
    expect_invalid(R"({"op":"replace","map":"instance","instance_uuid":""})", "\"instance_uuid\"");
    expect_invalid(R"({"op":"replace","map":"instance","instance_uuid":5})", "\"instance_uuid\"");
    expect_invalid(
        R"({"op":"replace","map":"instance","instance_uuid":"i","current_state":["Online",1]})",
        "key \"current_state\" must be a string");
    expect_invalid(R"({"op":"replace","map":"instance","instance_uuid":"i","address":null})",
                   "key \"address\" must be a string");
    expect_invalid(R"({"op":"replace","map":"instance","instance_uuid":"i","replicaset_uuid":7})",
                   "\"replicaset_uuid\"");
    expect_invalid(R"({"op":"replace","map":"replicaset"})", "key \"replicaset_uuid\" is missing");
    expect_invalid(R"({"op":"replace","map":"replicaset","replicaset_uuid":"R","tier":3})",
                   "key \"tier\" must be a string");
    expect_invalid(R"({"op":"replace","map":"replicaset","replicaset_uuid":"R","tier":""})",
                   "key \"tier\"");
    expect_invalid(
        R"({"op":"replace","map":"replicaset","replicaset_uuid":"R","current_master_uuid":false})",
        "key \"current_master_uuid\" must be a string");
    const std::string good_bucket =
        R"("op":"replace","map":"bucket","tier":"t","current_replicaset_uuid":"R",)";
    expect_invalid("{" + good_bucket + R"("bucket_id":{"start":1}})",
                   "key \"bucket_id.end\" is missing");
    expect_invalid("{" + good_bucket + R"("bucket_id":[1,2]})",
                   "key \"bucket_id\" must be an object");
    expect_invalid("{" + good_bucket + R"("state":"active"})", "key \"bucket_id\" is missing");
    expect_invalid("{" + good_bucket + R"("bucket_id":{"start":0,"end":5}})",
                   "element 0: key \"bucket_id.start\" must be a positive integer");
    expect_invalid("{" + good_bucket + R"("bucket_id":{"start":-3,"end":5}})",
                   "key \"bucket_id.start\" must be a positive integer");
    expect_invalid("{" + good_bucket + R"("bucket_id":{"start":"1","end":5}})",
                   "key \"bucket_id.start\" must be a positive integer");
    expect_invalid("{" + good_bucket + R"("bucket_id":{"start":1,"end":2.5}})",
                   "key \"bucket_id.end\" must be a positive integer");
    expect_invalid("{" + good_bucket + R"("bucket_id":{"start":1,"end":4294967296}})",
                   "key \"bucket_id.end\" must be a positive integer");
    expect_invalid("{" + good_bucket + R"("bucket_id":{"start":9,"end":5}})",
                   "key \"bucket_id\" has start 9 greater than end 5");
    expect_invalid("{" + good_bucket + R"("bucket_id":{"start":1,"end":5},"state":7})",
                   "key \"state\" must be a string");
    expect_invalid(R"({"op":"replace","map":"bucket","tier":"t","bucket_id":{"start":1,"end":5}})",
                   "key \"current_replicaset_uuid\" is missing");
    expect_invalid(
        R"({"op":"replace","map":"bucket","bucket_id":{"start":1,"end":5},"current_replicaset_uuid":"R"})",
        "key \"tier\" is missing");
    expect_invalid(R"({"op":"replace","map":"tier","name":"t"})",
                   "key \"bucket_count\" is missing");
    expect_invalid(R"({"op":"replace","map":"tier","name":"t","bucket_count":-1})",
                   "key \"bucket_count\"");
    expect_invalid(R"({"op":"replace","map":"tier","bucket_count":10})", "key \"name\" is missing");
    expect_invalid(R"({"op":"delete","map":"tier","name":"t","bucket_count":10})", "key \"op\"");
    // The element index is the position in the array.
    expect_invalid(R"([{"op":"delete","map":"instance","instance_uuid":"a"},
                       {"op":"delete","map":"instance","instance_uuid":"b"},
                       {"op":"delete","map":"instance","instance_uuid":"c"},
                       {"op":"replace","map":"bucket","tier":"t","current_replicaset_uuid":"R",
                        "bucket_id":{"start":0,"end":1}}])",
                   "element 3: key \"bucket_id.start\" must be a positive integer");
}

}  // namespace
}  // namespace picoroute
