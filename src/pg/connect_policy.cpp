// picoroute.allowed_hosts and the address check before connecting (see connect_policy.h).
extern "C" {
#include "postgres.h"
}

#include "pg/connect_policy.h"

#include "pg/map_store.h"
#include "pg/settings.h"

#include <optional>

namespace picoroute::pg {

namespace {

// The parsed value of picoroute.allowed_hosts, kept until the setting changes.
std::string cached_text;
std::optional<HostAllowList> cached_list;
bool cached_star = false;

const HostAllowList &allow_list() {
    std::string text = setting_allowed_hosts ? setting_allowed_hosts : "";
    if (!cached_list || text != cached_text) {
        // The check hook of the setting refused anything that does not parse.
        cached_list = HostAllowList::parse(text);
        cached_text = text;
        size_t first = text.find_first_not_of(" \t\r\n");
        size_t last = text.find_last_not_of(" \t\r\n");
        cached_star = first != std::string::npos && text.substr(first, last - first + 1) == "*";
    }
    return *cached_list;
}

// Whether the current map was published from a catalog and holds an instance at `address`.
bool reported_by_catalog(const std::string &address) {
    MapRef map = current_map();
    if (map.origin != MapOrigin::Catalog)
        return false;
    const SnapshotView &view = *map.view;
    for (uint32_t i = 0; i < view.n_instances(); i++)
        if (view.str(view.instance(i).address) == address)
            return true;
    return false;
}

}  // namespace

std::string connect_refusal(const std::string &address, TcpAddress *out) {
    // The map is read only when the setting leaves the decision to the address's origin.
    const HostAllowList &list = allow_list();
    bool from_catalog = list.allows_any() && !cached_star && reported_by_catalog(address);
    return connect_refusal(address, from_catalog, out);
}

std::string connect_refusal(const std::string &address, bool from_catalog, TcpAddress *out) {
    std::string why;
    std::optional<TcpAddress> parsed = parse_tcp_address(address, &why);
    if (!parsed)
        return "address \"" + utf8_truncate(address, 100) + "\" is not a TCP host:port (" + why +
               ")";
    const HostAllowList &list = allow_list();
    if (!list.allows_any()) {
        if (!list.allows(*parsed))
            return "address " + address + " is not in picoroute.allowed_hosts";
    } else if (!cached_star && !from_catalog) {
        return "address " + address +
               " was not reported by a catalog the worker read (picoroute_apply_events gave it) "
               "and picoroute.allowed_hosts does not admit it: picoroute sends no credentials "
               "there";
    }
    *out = std::move(*parsed);
    return {};
}

}  // namespace picoroute::pg
