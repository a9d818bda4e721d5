// Where topology events come from. The worker asks its source for the events of one refresh and
// applies them; it does not know whether they were polled from the catalog (today) or pushed by
// Picodata as notifications (facts, section 5; tomorrow).
#pragma once
#include "core/firewall.h"

#include "core/events.h"
#include "core/topology.h"

#include <stdexcept>
#include <string>
#include <vector>

namespace picoroute {

struct SourceUpdate {
    // The events come from a different instance (or a new notification stream) than the previous
    // update: the topology must be cleared before they are applied (seed 002).
    bool reset = false;
    std::vector<Event> events;
    // The instance the update was read from ("host:port").
    std::string instance;
    // Non-fatal problems, e.g. a tier whose bucket map could not be read.
    std::vector<std::string> warnings;
};

// A failed refresh: nothing could be read, or what was read cannot be understood.
class SourceError : public std::runtime_error {
  public:
    explicit SourceError(const std::string &message, std::string hint = {})
        : std::runtime_error(message), hint_(std::move(hint)) {}
    const std::string &hint() const { return hint_; }

  private:
    std::string hint_;
};

class TopologySource {
  public:
    virtual ~TopologySource() = default;
    // One refresh. `current` is the topology the events will be applied to (after a clear when the
    // update says reset). Throws SourceError.
    virtual SourceUpdate fetch(const Topology &current) = 0;
    // Drops any connection, e.g. after the settings changed; the next fetch starts anew.
    virtual void reset() = 0;
};

}  // namespace picoroute
