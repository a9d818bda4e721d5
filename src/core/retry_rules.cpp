#include "core/retry_rules.h"

namespace picoroute::retry {
namespace {

constexpr std::string_view kRefusals[] = {
    "retry is required: DML was sent to the replica during master switchover",
    "Can't modify data on a read-only instance",
    "instance is read-only: ",
    "Failed to get replicaset from bucket",
    "Failed to add a storage reference",
    "Failed to use a storage reference",
    "vshard storage is not configured",
    "cannot satisfy \"forward = off\": buckets are not present on the current node,",
};

}  // namespace

bool refused_before_running(std::string_view message) {
    for (std::string_view refusal : kRefusals)
        if (message.find(refusal) != std::string_view::npos)
            return true;
    return false;
}

bool read_retryable(std::string_view sqlstate, std::string_view message) {
    return refused_before_running(message) || sqlstate.substr(0, 2) == "08";
}

}  // namespace picoroute::retry
