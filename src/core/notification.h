// Topology notification JSON (facts, section 5) -> events: the decoder of the push source.
#pragma once
#include "core/firewall.h"

#include "core/events.h"

#include <string_view>
#include <vector>

namespace picoroute {

// Accepts one notification object or an array of them. Maps: "replicaset", "instance", "bucket"
// (facts, section 5) and, as a picoroute extension, "tier" with "name" and "bucket_count".
// Unknown keys are ignored; a missing required key, a wrongly typed value, an unknown "op" or
// "map", or a bad range throws Error(InvalidInput) naming the element index and the key. Nothing
// is returned on error.
// `first_index` is the index of the first element in the caller's numbering (a caller that
// decodes a long array in slices numbers its errors as in the whole array).
std::vector<Event> events_from_notification(std::string_view json, size_t first_index = 0);

}  // namespace picoroute
