#include "core/routing/answer.h"

namespace picoroute::routing {
namespace {

constexpr std::string_view kRefusals[] = {
    "retry is required: DML was sent to the replica during master switchover",
    "Can't modify data on a read-only instance",
    "instance is read-only: ",
    "Failed to get replicaset from bucket",
    "Failed to add a storage reference",
    "Failed to use a storage reference",
    "vshard storage is not configured",
    "failed to add local bucket reference: ",
    "failed to use local bucket reference: ",
    "failed to switch user for add local bucket reference",
    "failed to switch user for use local bucket reference",
    "cannot satisfy \"forward = off\": buckets are not present on the current node,",
};

// A coordinator's connection to a replicaset that failed: after "Error on replicaset <uuid>: ".
constexpr std::string_view kTransportFailures[] = {
    "Peer closed",
    "Connection is not established",
};

constexpr std::string_view kOnReplicaset = "Error on replicaset ";

// The codes pgproto answers with before a statement runs (src/pgproto/error.rs).
constexpr std::string_view kBeforeRunningCodes[] = {"22P02", "22P03", "0A000", "42P03",
                                                    "42P05", "42999", "08P01"};

bool contains(std::string_view text, std::string_view part) {
    return text.find(part) != std::string_view::npos;
}

// The text after "Error on replicaset <uuid>: ", or "" when `message` has no such part.
std::string_view replicaset_failure(std::string_view message) {
    size_t at = message.find(kOnReplicaset);
    if (at == std::string_view::npos)
        return {};
    size_t colon = message.find(": ", at + kOnReplicaset.size());
    return colon == std::string_view::npos ? std::string_view() : message.substr(colon + 2);
}

}  // namespace

bool refused_before_running(std::string_view message) {
    for (std::string_view refusal : kRefusals)
        if (contains(message, refusal))
            return true;
    return false;
}

bool read_retryable(std::string_view message) {
    if (refused_before_running(message))
        return true;
    std::string_view failure = replicaset_failure(message);
    for (std::string_view transport : kTransportFailures)
        if (failure.substr(0, transport.size()) == transport)
            return true;
    return false;
}

bool needs_leader_read(std::string_view message) {
    return contains(message,
                    "read_preference must be set to 'leader' when querying unlogged "
                    "tables") ||
           contains(message,
                    "read_preference must be set to 'leader' when sql_preemption is "
                    "enabled");
}

Outcome outcome_of(std::string_view sqlstate, std::string_view message) {
    if (refused_before_running(message) || needs_leader_read(message) ||
        contains(message, "rule parsing error"))
        return Outcome::NotRun;
    for (std::string_view code : kBeforeRunningCodes)
        if (sqlstate == code)
            return Outcome::NotRun;
    if (contains(message, kOnReplicaset) || contains(message, "dql timeout exceeded"))
        return Outcome::Unknown;
    return Outcome::Failed;
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

bool resendable(const Answer &answer, bool read) {
    if (!answer.error() || answer.message.empty())
        return false;
    return read ? read_retryable(answer.message) : refused_before_running(answer.message);
}

Outcome outcome(const Answer &answer) {
    if (!answer.error() || answer.message.empty())
        return Outcome::Failed;
    return outcome_of(answer.sqlstate, answer.message);
}

bool proven_not_run(const Answer &answer, bool spans) {
    return !spans && outcome(answer) == Outcome::NotRun;
}

bool leader_read_refusal(const Answer &answer) {
    return answer.error() && needs_leader_read(answer.message);
}

}  // namespace picoroute::routing
