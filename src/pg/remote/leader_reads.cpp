// Reads that must run on the leaders (see leader_reads.h).
extern "C" {
#include "postgres.h"

#include "access/xact.h"
}

#include "pg/remote/leader_reads.h"

#include "core/routing/leader_reads.h"
#include "core/session_options.h"
#include "pg/guard.h"

#include <set>

namespace picoroute::pg::remote {

namespace {

std::set<std::string> learned;          // for the session's life
std::set<std::string> written_in_xact;  // emptied when the transaction ends
bool callback_registered = false;

void forget_writes(XactEvent event, void *) {
    if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_ABORT ||
        event == XACT_EVENT_PARALLEL_COMMIT || event == XACT_EVENT_PARALLEL_ABORT ||
        event == XACT_EVENT_PREPARE)
        written_in_xact.clear();
}

}  // namespace

ConnParams leader_params(ConnParams params) {
    if (!routing::names_other_than_leader(params.read_preference))
        return params;
    params.read_preference = "leader";
    for (auto &[keyword, value] : params.options)
        if (keyword == "options")
            value = with_read_preference(value, "leader");
    return params;
}

void learn_leader_reads(const std::string &server) {
    learned.insert(server);
}

bool leader_reads_learned(const std::string &server) {
    return !learned.empty() && learned.count(server) > 0;
}

void note_server_write(const std::string &server) {
    if (!callback_registered) {
        pg_call([] { RegisterXactCallback(forget_writes, nullptr); });
        callback_registered = true;
    }
    written_in_xact.insert(server);
}

bool server_written(const std::string &server) {
    return !written_in_xact.empty() && written_in_xact.count(server) > 0;
}

bool switch_to_leader_reads(const PGresult *refusal, ConnParams *params) {
    const char *m = PQresultErrorField(refusal, PG_DIAG_MESSAGE_PRIMARY);
    routing::LeaderSwitch decided =
        routing::leader_switch(m != nullptr ? m : "", params->read_preference);
    if (decided.learn)
        learn_leader_reads(params->server_name);
    if (!decided.switch_)
        return false;
    *params = leader_params(*params);
    return true;
}

}  // namespace picoroute::pg::remote
