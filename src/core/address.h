// Instance addresses: splitting and joining "host:port" as Picodata advertises it, the addresses
// of the topology map, and where picoroute may connect.
//
// The map decides where credentials go, so an address is accepted only as a TCP endpoint
// "host:port": a DNS hostname, an IPv4 literal or a bracketed IPv6 literal, and a numeric port in
// 1..65535. Anything else (a Unix-socket directory, blanks, '=' or quotes that could smuggle libpq
// keywords, a zone id) is rejected where the map is built and again before connecting.
#pragma once
#include "core/firewall.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace picoroute {

// Picodata's default pgproto port, for an advertised address that names none.
constexpr const char *kDefaultPgprotoPort = "4327";

// An address as Picodata advertises it, split but not validated.
struct HostPort {
    std::string host;  // IPv6 hosts keep no brackets here
    std::string port;  // empty when the address has none
    bool bracketed = false;
};

// Splits "host:port", "[v6]:port", "v6:port" (at the last colon) or a bare "host". Returns
// std::nullopt for an unclosed bracket, anything but ":port" after the bracket, or a port that is
// not all digits.
std::optional<HostPort> split_address(std::string_view address);

// "host:port", with brackets around a host that contains a colon (IPv6). The port is written as
// given, even empty.
std::string join_host_port(std::string_view host, std::string_view port);

struct TcpAddress {
    std::string host;  // IPv6 literals without brackets
    uint16_t port = 0;
    bool is_ipv4 = false;
    bool is_ipv6 = false;
    unsigned char ip[16] = {};  // the address bytes of an IP literal (4 or 16 used)
};

// Parses "host:port" or "[v6]:port". Returns std::nullopt and sets `why` (when given) to a short
// reason for anything that is not such an address.
std::optional<TcpAddress> parse_tcp_address(std::string_view address, std::string *why = nullptr);

// True for a DNS hostname: dot-separated labels of letters, digits and '-' (not at either end of a
// label), 1..63 bytes each, 253 bytes in all.
bool is_hostname(std::string_view host);

// The value of picoroute.allowed_hosts: comma-separated hostnames, IP literals and CIDR networks
// ("10.0.0.0/8", "fd00::/8"). Empty or "*": any TCP host.
class HostAllowList {
  public:
    // Throws Error(InvalidInput) naming the entry that cannot be understood.
    static HostAllowList parse(std::string_view list);
    // True when picoroute may connect to `address`. A hostname matches only a hostname entry
    // (compared without regard to case, never resolved); an IP literal matches an equal IP entry
    // or a network that contains it.
    bool allows(const TcpAddress &address) const;
    bool allows_any() const { return any_; }

  private:
    struct Network {
        bool v6 = false;
        unsigned char ip[16] = {};
        int prefix = 0;
    };
    bool any_ = true;
    std::vector<std::string> hostnames_;  // lower case
    std::vector<Network> networks_;
};

// `text` cut to at most `max_bytes` bytes without splitting a UTF-8 character (a cut never leaves
// a lead byte without its continuation bytes).
std::string utf8_truncate(std::string_view text, size_t max_bytes);

}  // namespace picoroute
