// The targets the tests of the routing decisions over fake lookups build
// (routing_grouping_test.cpp, routing_statement_test.cpp): a master and a coordinator by address,
// as the map's lookups return them (the address doubles as the instance's name).
#pragma once
#include "core/routing/target.h"

#include <string>

namespace picoroute::testing {

// The master of `replicaset` at `address`, as a lookup of a bucket's owner returns it.
inline routing::Target master_target(const std::string &address, const std::string &replicaset) {
    routing::Target t;
    t.address = address;
    t.replicaset = replicaset;
    t.instance = address;
    t.role = routing::Role::Master;
    t.sent = routing::Sent::RoutedByKey;
    return t;
}

// A coordinator at `address`.
inline routing::Target coordinator_target(const std::string &address) {
    routing::Target t;
    t.address = address;
    t.instance = address;
    t.role = routing::Role::Coordinator;
    return t;
}

}  // namespace picoroute::testing
