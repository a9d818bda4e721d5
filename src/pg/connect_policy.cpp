// picoroute.allowed_hosts and the address check before connecting (see connect_policy.h).
extern "C" {
#include "postgres.h"
}

#include "pg/connect_policy.h"

#include "pg/settings.h"

#include <optional>

namespace picoroute::pg {

namespace {

// The parsed value of picoroute.allowed_hosts, kept until the setting changes.
std::string cached_text;
std::optional<HostAllowList> cached_list;

const HostAllowList &allow_list() {
    std::string text = setting_allowed_hosts ? setting_allowed_hosts : "";
    if (!cached_list || text != cached_text) {
        // The check hook of the setting refused anything that does not parse.
        cached_list = HostAllowList::parse(text);
        cached_text = text;
    }
    return *cached_list;
}

}  // namespace

std::string connect_refusal(const std::string &address, TcpAddress *out) {
    std::string why;
    std::optional<TcpAddress> parsed = parse_tcp_address(address, &why);
    if (!parsed)
        return "address \"" + utf8_truncate(address, 100) + "\" is not a TCP host:port (" + why +
               ")";
    if (!allow_list().allows(*parsed))
        return "address " + address + " is not in picoroute.allowed_hosts";
    *out = std::move(*parsed);
    return {};
}

}  // namespace picoroute::pg
