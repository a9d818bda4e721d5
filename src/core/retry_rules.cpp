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

bool closed_at_startup(std::string_view libpq_message) {
    // libpq's text for an end of file while it waits for the server's answer (PG 15, fe-misc.c
    // pqReadData and fe-connect.c PQconnectPoll).
    return libpq_message.find("server closed the connection unexpectedly") !=
           std::string_view::npos;
}

const char *const kClosedAtStartupDetail =
    "Picodata closes a connection without a word when it cannot read the startup packet, mostly "
    "its startup options (an item without '=', a value it does not take); an instance that stopped "
    "at that moment looks the same.";

}  // namespace picoroute::retry
