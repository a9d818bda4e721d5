// Errors raised by the core library. The PostgreSQL glue maps each kind to a SQLSTATE.
#pragma once
#include "core/firewall.h"

#include <stdexcept>
#include <string>

namespace picoroute {

enum class ErrorKind {
    InvalidInput,      // malformed JSON, missing or wrongly typed field, bad range (22023)
    InvalidCatalog,    // a catalog row that cannot be understood (XX000-like, data exception)
    CapacityExceeded,  // the topology does not fit the configured capacities (53400)
    OutOfRange,        // a value outside its domain, e.g. bucket outside 1..bucket_count (22003)
    UnsupportedType,   // a key value of a type Picodata cannot hash (42804)
};

class Error : public std::runtime_error {
  public:
    Error(ErrorKind kind, const std::string &message, std::string hint = {})
        : std::runtime_error(message), kind_(kind), hint_(std::move(hint)) {}
    ErrorKind kind() const { return kind_; }
    const std::string &hint() const { return hint_; }

  private:
    ErrorKind kind_;
    std::string hint_;
};

}  // namespace picoroute
