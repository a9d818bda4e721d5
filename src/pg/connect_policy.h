// Where picoroute may connect: every address taken from the topology map is checked here before a
// connection is opened (backends and the worker's fallback alike). The map decides where
// credentials go, so an address must be a TCP host:port (core/address.h) and, when
// picoroute.allowed_hosts is set, one of the hosts or networks it lists.
#pragma once

#include "core/address.h"

#include <string>

namespace picoroute::pg {

// Parses `address` into `out` and returns "" when picoroute may connect there; otherwise returns
// why not, naming the address (and picoroute.allowed_hosts when that is the reason).
std::string connect_refusal(const std::string &address, TcpAddress *out);

}  // namespace picoroute::pg
