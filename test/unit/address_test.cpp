// Instance addresses (TCP host:port only), picoroute.allowed_hosts, and UTF-8-safe truncation.
#include "core/address.h"
#include "core/errors.h"
#include "core/notification.h"
#include "core/topology.h"

#include <gtest/gtest.h>

#include <string>

namespace picoroute {
namespace {

TEST(Address, AcceptsTcpHostPort) {
    auto a = parse_tcp_address("10.0.0.1:4327");
    ASSERT_TRUE(a);
    EXPECT_EQ(a->host, "10.0.0.1");
    EXPECT_EQ(a->port, 4327);
    EXPECT_TRUE(a->is_ipv4);
    auto b = parse_tcp_address("[fe80::1]:5433");
    ASSERT_TRUE(b);
    EXPECT_EQ(b->host, "fe80::1");
    EXPECT_TRUE(b->is_ipv6);
    auto c = parse_tcp_address("picodata-1.cluster.internal:65535");
    ASSERT_TRUE(c);
    EXPECT_FALSE(c->is_ipv4 || c->is_ipv6);
    EXPECT_EQ(c->port, 65535);
    EXPECT_TRUE(parse_tcp_address("localhost:1"));
}

TEST(Address, RejectsSocketsInjectionsAndJunk) {
    for (const char *bad : {"",
                            "/tmp:5432",
                            "/var/run/postgresql:5432",
                            "x:1 host=/tmp",
                            "x:1' host='/tmp",
                            "h:4327 sslmode=disable",
                            "h",
                            "h:",
                            ":4327",
                            "h:0",
                            "h:65536",
                            "h:+1",
                            "h:12a",
                            "h:123456",
                            "fe80::1:4327",
                            "[fe80::1]",
                            "[fe80::1%eth0]:1",
                            "[nothex]:1",
                            "-h:1",
                            "h-:1",
                            "a..b:1",
                            "h_1:1",
                            "h=1:1",
                            "@h:1",
                            "h\n:1",
                            "10.0.0.1/8:1"}) {
        std::string why;
        EXPECT_FALSE(parse_tcp_address(bad, &why)) << bad;
        EXPECT_FALSE(why.empty()) << bad;
    }
    EXPECT_FALSE(parse_tcp_address(std::string(64, 'a') + ":1"));  // a label longer than 63
}

TEST(Address, AllowList) {
    HostAllowList any = HostAllowList::parse("");
    EXPECT_TRUE(any.allows_any());
    EXPECT_TRUE(any.allows(*parse_tcp_address("1.2.3.4:1")));
    EXPECT_TRUE(HostAllowList::parse(" * ").allows_any());

    HostAllowList list =
        HostAllowList::parse("10.0.0.0/8, 192.168.1.7, Pico-1.Example, fd00::/8, [::1]");
    EXPECT_FALSE(list.allows_any());
    EXPECT_TRUE(list.allows(*parse_tcp_address("10.200.3.4:4327")));
    EXPECT_FALSE(list.allows(*parse_tcp_address("11.0.0.1:4327")));
    EXPECT_TRUE(list.allows(*parse_tcp_address("192.168.1.7:1")));
    EXPECT_FALSE(list.allows(*parse_tcp_address("192.168.1.8:1")));
    EXPECT_TRUE(list.allows(*parse_tcp_address("pico-1.example:1")));
    EXPECT_FALSE(list.allows(*parse_tcp_address("pico-2.example:1")));
    EXPECT_TRUE(list.allows(*parse_tcp_address("[fd12::5]:1")));
    EXPECT_TRUE(list.allows(*parse_tcp_address("[::1]:1")));
    EXPECT_FALSE(list.allows(*parse_tcp_address("[fe80::1]:1")));
    EXPECT_FALSE(list.allows(*parse_tcp_address("127.0.0.1:1")));
    // A hostname is never resolved: a network does not admit it.
    EXPECT_FALSE(HostAllowList::parse("127.0.0.0/8").allows(*parse_tcp_address("localhost:1")));
    EXPECT_TRUE(HostAllowList::parse("0.0.0.0/0").allows(*parse_tcp_address("8.8.8.8:1")));

    for (const char *bad : {"10.0.0.0/33", "a,,b", "/tmp", "10.0.0.1/x", "host name", "h=1"}) {
        try {
            HostAllowList::parse(bad);
            ADD_FAILURE() << "accepted " << bad;
        } catch (const Error &error) {
            EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
            EXPECT_NE(std::string(error.what()).find("picoroute.allowed_hosts"), std::string::npos);
        }
    }
}

TEST(Address, EventsWithANonTcpAddressAreRejected) {
    Topology t;
    const char *events[] = {
        R"({"op":"replace","map":"instance","instance_uuid":"i1","address":"/tmp:5432"})",
        R"({"op":"replace","map":"instance","instance_uuid":"i1","address":"x:1 host=/tmp"})",
    };
    for (const char *json : events) {
        try {
            t.apply_all(events_from_notification(json));
            ADD_FAILURE() << "accepted " << json;
        } catch (const Error &error) {
            EXPECT_EQ(error.kind(), ErrorKind::InvalidInput);
            EXPECT_NE(std::string(error.what()).find("host:port"), std::string::npos)
                << error.what();
        }
    }
    EXPECT_TRUE(t.instances().empty());
    // The empty address means "unknown" and stays accepted.
    t.apply_all(events_from_notification(
        R"({"op":"replace","map":"instance","instance_uuid":"i1","address":""})"));
    EXPECT_EQ(t.instances().size(), 1u);
}

TEST(Address, SplitsAdvertisedAddresses) {
    struct Case {
        const char *address, *host, *port;
        bool bracketed;
    };
    const Case cases[] = {
        {"pico-1:4327", "pico-1", "4327", false},
        {"10.0.0.1", "10.0.0.1", "", false},  // no port
        {"[fe80::1]:5433", "fe80::1", "5433", true},
        {"[::]", "::", "", true},
        {"fe80::1:4327", "fe80::1", "4327", false},  // without brackets: the last colon
        {"host:", "host", "", false},
    };
    for (const Case &c : cases) {
        std::optional<HostPort> parts = split_address(c.address);
        ASSERT_TRUE(parts) << c.address;
        EXPECT_EQ(parts->host, c.host) << c.address;
        EXPECT_EQ(parts->port, c.port) << c.address;
        EXPECT_EQ(parts->bracketed, c.bracketed) << c.address;
    }
    EXPECT_FALSE(split_address("[fe80::1"));       // unclosed bracket
    EXPECT_FALSE(split_address("[fe80::1]4327"));  // no colon after the bracket
    EXPECT_FALSE(split_address("host:43a7"));      // the port is not digits
    EXPECT_FALSE(split_address("x:1 host=/tmp"));  // nor is this
}

TEST(Address, JoinsHostAndPort) {
    EXPECT_EQ(join_host_port("pico-1", "4327"), "pico-1:4327");
    EXPECT_EQ(join_host_port("10.0.0.1", "5432"), "10.0.0.1:5432");
    EXPECT_EQ(join_host_port("fe80::1", "5433"), "[fe80::1]:5433");
    EXPECT_EQ(join_host_port("host", ""), "host:");
    // Split and joined again: the same address.
    for (const char *address : {"pico-1:4327", "[fe80::1]:5433", "127.0.0.1:1"}) {
        auto parts = split_address(address);
        ASSERT_TRUE(parts) << address;
        EXPECT_EQ(join_host_port(parts->host, parts->port), address);
    }
    EXPECT_STREQ(kDefaultPgprotoPort, "4327");
}

TEST(Utf8, TruncateKeepsWholeCharacters) {
    EXPECT_EQ(utf8_truncate("abc", 10), "abc");
    EXPECT_EQ(utf8_truncate("abc", 2), "ab");
    const std::string two = "\xd0\xb6\xd0\xb6";    // "жж", 2 bytes each
    EXPECT_EQ(utf8_truncate(two, 3), "\xd0\xb6");  // not "ж" + a lone lead byte
    EXPECT_EQ(utf8_truncate(two, 1), "");
    const std::string euro = "a\xe2\x82\xac";  // "a€"
    EXPECT_EQ(utf8_truncate(euro, 2), "a");
    EXPECT_EQ(utf8_truncate(euro, 3), "a");
    EXPECT_EQ(utf8_truncate(euro, 4), euro);
    const std::string emoji = "\xf0\x9f\x98\x80x";  // 4-byte character
    EXPECT_EQ(utf8_truncate(emoji, 3), "");
    EXPECT_EQ(utf8_truncate(emoji, 4), "\xf0\x9f\x98\x80");
    // Every cut of a long multibyte text is valid UTF-8 (no continuation byte left dangling).
    std::string text;
    for (int i = 0; i < 300; i++) {
        text += "\xd0\xb6\xe2\x82\xac";
    }
    for (size_t n = 0; n < 1023; n++) {
        std::string cut = utf8_truncate(text, n);
        ASSERT_LE(cut.size(), n);
        ASSERT_GE(cut.size() + 3, std::min(n, text.size()));
        size_t i = 0;
        while (i < cut.size()) {
            unsigned char c = static_cast<unsigned char>(cut[i]);
            size_t len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
            ASSERT_LE(i + len, cut.size()) << "cut at " << n;
            i += len;
        }
    }
}

}  // namespace
}  // namespace picoroute
