// Splitting and joining addresses, instance addresses and the allow list of
// picoroute.allowed_hosts (see address.h).
#include "core/address.h"

#include "core/errors.h"

#include <arpa/inet.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace picoroute {

namespace {

std::optional<TcpAddress> fail(std::string *why, const std::string &reason) {
    if (why != nullptr) {
        *why = reason;
    }
    return std::nullopt;
}

bool parse_ipv4(const std::string &text, unsigned char *out) {
    return inet_pton(AF_INET, text.c_str(), out) == 1;
}

bool parse_ipv6(const std::string &text, unsigned char *out) {
    return inet_pton(AF_INET6, text.c_str(), out) == 1;
}

std::string lower(std::string_view text) {
    std::string out(text);
    for (char &c : out) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return out;
}

std::string trim(std::string_view text) {
    size_t begin = 0, end = text.size();
    while (begin < end && std::isspace(static_cast<unsigned char>(text[begin]))) {
        ++begin;
    }
    while (end > begin && std::isspace(static_cast<unsigned char>(text[end - 1]))) {
        --end;
    }
    return std::string(text.substr(begin, end - begin));
}

bool prefix_matches(const unsigned char *a, const unsigned char *b, int prefix) {
    int full = prefix / 8;
    if (std::memcmp(a, b, static_cast<size_t>(full)) != 0) {
        return false;
    }
    int rest = prefix % 8;
    if (rest == 0) {
        return true;
    }
    unsigned char mask = static_cast<unsigned char>(0xFF << (8 - rest));
    return (a[full] & mask) == (b[full] & mask);
}

}  // namespace

std::optional<HostPort> split_address(std::string_view address) {
    HostPort out;
    if (!address.empty() && address.front() == '[') {
        size_t close = address.find(']');
        if (close == std::string_view::npos) {
            return std::nullopt;
        }
        out.host = std::string(address.substr(1, close - 1));
        out.bracketed = true;
        std::string_view rest = address.substr(close + 1);
        if (!rest.empty()) {
            if (rest.front() != ':') {
                return std::nullopt;
            }
            out.port = std::string(rest.substr(1));
        }
    } else {
        size_t colon = address.rfind(':');
        if (colon == std::string_view::npos) {
            out.host = std::string(address);
        } else {
            out.host = std::string(address.substr(0, colon));
            out.port = std::string(address.substr(colon + 1));
        }
    }
    for (char c : out.port) {
        if (!std::isdigit(static_cast<unsigned char>(c))) {
            return std::nullopt;
        }
    }
    return out;
}

std::string join_host_port(std::string_view host, std::string_view port) {
    bool v6 = host.find(':') != std::string_view::npos;
    std::string out = v6 ? "[" + std::string(host) + "]" : std::string(host);
    return out + ":" + std::string(port);
}

bool is_hostname(std::string_view host) {
    if (host.empty() || host.size() > 253) {
        return false;
    }
    size_t label_start = 0;
    for (size_t i = 0; i <= host.size(); ++i) {
        if (i == host.size() || host[i] == '.') {
            size_t length = i - label_start;
            if (length == 0 || length > 63 || host[label_start] == '-' || host[i - 1] == '-') {
                return false;
            }
            label_start = i + 1;
            continue;
        }
        unsigned char c = static_cast<unsigned char>(host[i]);
        if (!std::isalnum(c) && c != '-') {
            return false;
        }
    }
    return true;
}

std::optional<TcpAddress> parse_tcp_address(std::string_view address, std::string *why) {
    if (address.empty()) {
        return fail(why, "the address is empty");
    }
    if (address.size() > 300) {
        return fail(why, "the address is longer than 300 bytes");
    }
    TcpAddress out;
    std::string host;
    std::string_view port;
    if (address.front() == '[') {
        size_t close = address.find(']');
        if (close == std::string_view::npos || close + 1 >= address.size() ||
            address[close + 1] != ':') {
            return fail(why, "a bracketed IPv6 address must be followed by :port");
        }
        host = std::string(address.substr(1, close - 1));
        port = address.substr(close + 2);
        if (!parse_ipv6(host, out.ip)) {
            return fail(why, "'" + host + "' is not an IPv6 address");
        }
        out.is_ipv6 = true;
    } else {
        size_t colon = address.find(':');
        if (colon == std::string_view::npos) {
            return fail(why, "the address has no port (expected host:port)");
        }
        if (address.find(':', colon + 1) != std::string_view::npos) {
            return fail(why, "an IPv6 address must be written in brackets, [addr]:port");
        }
        host = std::string(address.substr(0, colon));
        port = address.substr(colon + 1);
        if (parse_ipv4(host, out.ip)) {
            out.is_ipv4 = true;
        } else if (!is_hostname(host)) {
            return fail(why, "the host is neither a hostname nor an IP address");
        }
    }
    if (port.empty() || port.size() > 5 || !std::all_of(port.begin(), port.end(), [](char c) {
            return std::isdigit(static_cast<unsigned char>(c)) != 0;
        })) {
        return fail(why, "the port is not a number");
    }
    unsigned long number = std::stoul(std::string(port));
    if (number < 1 || number > 65535) {
        return fail(why, "the port is outside 1..65535");
    }
    out.host = std::move(host);
    out.port = static_cast<uint16_t>(number);
    return out;
}

HostAllowList HostAllowList::parse(std::string_view list) {
    HostAllowList out;
    std::string all = trim(list);
    if (all.empty() || all == "*") {
        return out;
    }
    out.any_ = false;
    size_t start = 0;
    while (start <= all.size()) {
        size_t comma = all.find(',', start);
        if (comma == std::string::npos) {
            comma = all.size();
        }
        std::string entry = trim(std::string_view(all).substr(start, comma - start));
        start = comma + 1;
        if (entry.empty()) {
            throw Error(ErrorKind::InvalidInput, "picoroute.allowed_hosts has an empty entry");
        }
        auto bad = [&entry](const std::string &reason) {
            return Error(ErrorKind::InvalidInput,
                         "picoroute.allowed_hosts entry \"" + entry + "\" " + reason,
                         "Give hostnames, IP addresses or CIDR networks such as 10.0.0.0/8, "
                         "separated by commas.");
        };
        std::string address = entry;
        int prefix = -1;
        if (size_t slash = entry.find('/'); slash != std::string::npos) {
            std::string bits = entry.substr(slash + 1);
            if (bits.empty() || bits.size() > 3 ||
                !std::all_of(bits.begin(), bits.end(), [](char c) {
                    return std::isdigit(static_cast<unsigned char>(c)) != 0;
                })) {
                throw bad("has a prefix length that is not a number");
            }
            prefix = std::stoi(bits);
            address = entry.substr(0, slash);
        }
        if (address.size() >= 2 && address.front() == '[' && address.back() == ']') {
            address = address.substr(1, address.size() - 2);
        }
        Network network;
        if (parse_ipv4(address, network.ip)) {
            network.v6 = false;
            network.prefix = prefix < 0 ? 32 : prefix;
            if (network.prefix > 32) {
                throw bad("has a prefix length above 32");
            }
            out.networks_.push_back(network);
        } else if (parse_ipv6(address, network.ip)) {
            network.v6 = true;
            network.prefix = prefix < 0 ? 128 : prefix;
            if (network.prefix > 128) {
                throw bad("has a prefix length above 128");
            }
            out.networks_.push_back(network);
        } else if (prefix < 0 && is_hostname(address)) {
            out.hostnames_.push_back(lower(address));
        } else {
            throw bad("is neither a hostname, an IP address nor a CIDR network");
        }
        if (comma == all.size()) {
            break;
        }
    }
    return out;
}

bool HostAllowList::allows(const TcpAddress &address) const {
    if (any_) {
        return true;
    }
    if (address.is_ipv4 || address.is_ipv6) {
        for (const Network &network : networks_) {
            if (network.v6 == address.is_ipv6 &&
                prefix_matches(network.ip, address.ip, network.prefix)) {
                return true;
            }
        }
        return false;
    }
    std::string host = lower(address.host);
    return std::find(hostnames_.begin(), hostnames_.end(), host) != hostnames_.end();
}

std::string utf8_truncate(std::string_view text, size_t max_bytes) {
    if (text.size() <= max_bytes) {
        return std::string(text);
    }
    size_t cut = max_bytes;
    // Step back over continuation bytes (10xxxxxx) to the start of the character at the cut.
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
        --cut;
    }
    return std::string(text.substr(0, cut));
}

}  // namespace picoroute
