// Where picoroute may connect: every address taken from the topology map is checked here before a
// connection is opened (backends and the worker's fallback alike). The map decides where
// credentials go, so an address must be a TCP host:port (core/address.h) and
//   - when picoroute.allowed_hosts lists hosts or networks: one of them;
//   - when it is empty (the default): an address that a catalog read by the worker reported. An
//     address that picoroute_apply_events gave is refused before any network access (no
//     credential, not even a user name, is sent there);
//   - when it is '*': any address.
#pragma once

#include "core/address.h"

#include <string>

namespace picoroute::pg {

// For an address taken from the published map (routing connections): parses `address` into `out`
// and returns "" when picoroute may connect there; otherwise returns why not, naming the address
// (and picoroute.allowed_hosts). The address counts as reported by a catalog when the current map
// was published by the worker from a catalog and holds an instance at that address.
std::string connect_refusal(const std::string &address, TcpAddress *out);

// The same for an address whose origin the caller knows: `from_catalog` is true when a catalog
// read by the worker reported it.
std::string connect_refusal(const std::string &address, bool from_catalog, TcpAddress *out);

}  // namespace picoroute::pg
