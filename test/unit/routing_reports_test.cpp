// The texts picoroute raises when a routed statement cannot run (core/routing/reports.h) that the
// failover tests do not show: the masters a scatter cannot ask, a coordinator missing, a scan cut
// in the middle, the context of a remote error.
#include "core/routing/reports.h"
#include "routing_map.h"

#include <gtest/gtest.h>

#include <string>

namespace picoroute {
using namespace picoroute::testing;

TEST(ReportsTest, TheMastersAScatterCannotAskAreNamed) {
    Fixture down({instance("b1", std::string("r2"), std::string("Offline"),
                           std::string("10.0.0.3:4327"), std::string("b1"))});
    routing::Report r =
        routing::masters_unavailable(down.view, down.t, routing::master_targets(down.view, down.t));
    EXPECT_EQ(r.sqlstate, "08006");
    EXPECT_EQ(r.message, "picoroute: replicaset \"rs2\" (r2) of tier \"t\" has no online master");
    EXPECT_EQ(r.detail, "Its master b1 is not online.");
    Fixture partial({bucket_delete("t", 1501)});
    r = routing::masters_unavailable(partial.view, partial.t,
                                     routing::master_targets(partial.view, partial.t));
    EXPECT_EQ(r.sqlstate, "55000");
    EXPECT_EQ(r.detail, "1500 of 3000 buckets have a known replicaset.");
    routing::MastersPlan none;
    none.status = routing::MastersPlan::Status::NoReplicasets;
    r = routing::masters_unavailable(partial.view, partial.t, none);
    EXPECT_EQ(r.message, "picoroute: tier \"t\" has no replicasets in the topology map");
}

TEST(ReportsTest, NoCoordinatorNamesWhatWasUnreachable) {
    routing::Report r = routing::no_coordinator({});
    EXPECT_EQ(r.sqlstate, "08006");
    EXPECT_EQ(r.detail, "");
    EXPECT_EQ(routing::no_coordinator({"a:1", "b:1"}).detail, "Unreachable: a:1, b:1");
}

TEST(ReportsTest, AScanCutInTheMiddleIsNotRunAgain) {
    routing::Target t;
    t.address = "a:1";
    routing::Report r = routing::lost_mid_scan(t, 42, "EOF");
    EXPECT_EQ(r.message,
              "picoroute: lost the connection to Picodata instance a:1 in the middle of "
              "a scan: EOF");
    EXPECT_EQ(r.detail, "Target: a:1 (coordinator). 42 rows had been read from it.");
}

TEST(ReportsTest, ARemoteErrorNamesItsInstanceAndStatement) {
    EXPECT_EQ(routing::remote_context("a:1", "rs1", "SELECT 1"),
              "remote SQL on Picodata instance a:1 (replicaset rs1): SELECT 1");
    EXPECT_EQ(routing::remote_context("a:1", "", "SELECT 1"),
              "remote SQL on Picodata instance a:1: SELECT 1");
    EXPECT_EQ(routing::elapsed_ms(1000, 1001), 1);
    EXPECT_EQ(routing::elapsed_ms(1000, 1000), 0);
    EXPECT_EQ(routing::elapsed_ms(5000, 1000), 0);
}

}  // namespace picoroute
