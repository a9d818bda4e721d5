// What the failover tests share (routing_failover_test.cpp, routing_failover_guarantees_test.cpp):
// the targets, failures, answers and attempts they build on the map of routing_map.h:
//   tier "t": r1 owns 1-1500 (master a1 10.0.0.1, replica a2 10.0.0.2), r2 owns 1501-3000 (master
//   b1 10.0.0.3), r3 (master c1 10.0.0.4) owns nothing; tier "u": r4 (d1 10.0.0.5, d2 10.0.0.6).
#pragma once
#include "core/remote_text.h"
#include "core/routing/failover.h"
#include "core/routing/sqlstate_map.h"
#include "core/routing/text.h"
#include "routing_map.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace picoroute::testing {

using routing::Answer;
using routing::Attempt;
using routing::Failover;
using routing::Failure;
using routing::MapScope;
using routing::ReadPref;
using routing::Retry;
using routing::Role;
using routing::Sent;
using routing::Step;
using routing::Target;
using routing::WriteLog;

inline constexpr routing::Micros kSince = 1000000;  // when the failover began
inline constexpr int64_t kWaitMs = 10000;           // picoroute.failover_wait
inline constexpr routing::Micros kDeadline = kSince + kWaitMs * 1000;
inline const std::string kA1 = "10.0.0.1:4327", kA2 = "10.0.0.2:4327", kB1 = "10.0.0.3:4327",
                         kC1 = "10.0.0.4:4327";

inline MapScope scope(const Fixture &f, ReadPref pref = ReadPref::Leader,
                      const std::string &version = "26.1.1") {
    MapScope map;
    map.view = &f.view;
    map.tier = "t";
    map.pref = pref;
    map.version = version;
    return map;
}

// The owner of `buckets` (all of one replicaset), routed by key.
inline Target owner(const Fixture &f, std::vector<uint32_t> buckets,
                    ReadPref pref = ReadPref::Leader) {
    Target t;
    EXPECT_TRUE(routing::bucket_target(f.view, f.t, buckets[0], pref, 0, &t));
    t.buckets = std::move(buckets);
    return t;
}

inline Target coordinator(const std::string &address, std::vector<uint32_t> buckets = {}) {
    Target t;
    t.address = address;
    t.role = Role::Coordinator;
    t.buckets = std::move(buckets);
    return t;
}

inline Failure failure(Failure::Kind kind, const std::string &address,
                       const std::string &message = "connection refused") {
    Failure f;
    f.kind = kind;
    f.address = address;
    f.message = message;
    return f;
}

inline Answer error(const std::string &message, const std::string &sqlstate = "XX000") {
    Answer a;
    a.status = Answer::Status::Error;
    a.sqlstate = sqlstate;
    a.message = message;
    return a;
}

inline Answer command(uint64_t rows) {
    Answer a;
    a.status = Answer::Status::Command;
    a.counted = true;
    a.rows = rows;
    return a;
}

inline Attempt answered(Answer answer = command(1)) {
    Attempt a;
    a.kind = Attempt::Kind::Answered;
    a.answer = std::move(answer);
    return a;
}

inline Attempt failed(Attempt::Kind kind, const std::string &address, const std::string &message) {
    Attempt a;
    a.kind = kind;
    a.address = address;
    a.message = message;
    return a;
}

// r1's master a1 stopped; the map shows it Offline, r1 not switched yet.
inline Fixture a1_stopped() {
    return Fixture({instance("a1", std::string("r1"), std::string("Offline"),
                             std::string("10.0.0.1:4327"), std::string("a1"))});
}
// r1 switched to a2; a1 Offline.
inline Fixture r1_switched() {
    return Fixture({replicaset("r1", std::string("t"), std::string("a2"), std::string("rs1")),
                    instance("a1", std::string("r1"), std::string("Offline"),
                             std::string("10.0.0.1:4327"), std::string("a1"))});
}
// r3's master c1 stopped (r3 owns no bucket: only vshard's wait for every master notices).
inline Fixture c1_stopped() {
    return Fixture({instance("c1", std::string("r3"), std::string("Offline"),
                             std::string("10.0.0.4:4327"), std::string("c1"))});
}

}  // namespace picoroute::testing
