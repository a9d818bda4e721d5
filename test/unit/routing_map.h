// A topology map for the routing tests (core/routing/): two tiers, their replicasets and
// instances, built from events as the worker builds it, and the view the decisions read.
#pragma once
#include "core/routing/target.h"
#include "core/snapshot.h"
#include "core/topology.h"
#include "event_builders.h"

#include <string>
#include <vector>

namespace picoroute::testing {

inline const SnapshotLimits kLimits{64, 32, 1024};

// Tier "t" of 3000 buckets: r1 owns 1-1500 (master a1, replica a2), r2 owns 1501-3000 (master
// b1), r3 (master c1) owns no bucket. Tier "u" of 10 buckets: r4 (master d1, replica d2) owns
// them all.
inline std::string build_image(const std::vector<Event> &extra) {
    Topology topology;
    std::vector<Event> events = {
        tier("t", 3000),
        tier("u", 10),
        replicaset("r1", std::string("t"), std::string("a1"), std::string("rs1")),
        replicaset("r2", std::string("t"), std::string("b1"), std::string("rs2")),
        replicaset("r3", std::string("t"), std::string("c1"), std::string("rs3")),
        replicaset("r4", std::string("u"), std::string("d1"), std::string("rs4")),
        instance("a1", std::string("r1"), std::string("Online"), std::string("10.0.0.1:4327"),
                 std::string("a1")),
        instance("a2", std::string("r1"), std::string("Online"), std::string("10.0.0.2:4327"),
                 std::string("a2")),
        instance("b1", std::string("r2"), std::string("Online"), std::string("10.0.0.3:4327"),
                 std::string("b1")),
        instance("c1", std::string("r3"), std::string("Online"), std::string("10.0.0.4:4327"),
                 std::string("c1")),
        instance("d1", std::string("r4"), std::string("Online"), std::string("10.0.0.5:4327"),
                 std::string("d1")),
        instance("d2", std::string("r4"), std::string("Online"), std::string("10.0.0.6:4327"),
                 std::string("d2")),
        bucket("t", 1, 1500, "r1"),
        bucket("t", 1501, 3000, "r2"),
        bucket("u", 1, 10, "r4"),
    };
    events.insert(events.end(), extra.begin(), extra.end());
    for (const Event &e : events)
        topology.apply(e);
    return build_snapshot(topology, kLimits);
}

struct Fixture {
    std::string image;
    SnapshotView view;
    int32_t t, u;

    explicit Fixture(const std::vector<Event> &extra = {})
        : image(build_image(extra)),
          view(image.data(), image.size()),
          t(view.find_tier("t")),
          u(view.find_tier("u")) {}
};

inline std::vector<std::string> addresses(const std::vector<routing::Target> &targets) {
    std::vector<std::string> out;
    for (const routing::Target &target : targets)
        out.push_back(target.address);
    return out;
}

}  // namespace picoroute::testing
