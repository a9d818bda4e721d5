// What an instance's answer says under picoroute's rules on remote errors (see answer_rules.h).
#include "pg/remote/answer_rules.h"

namespace picoroute::pg::remote {

namespace {

const char *error_message(const PGresult *result) {
    if (result == nullptr || PQresultStatus(result) != PGRES_FATAL_ERROR)
        return nullptr;
    return PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
}

}  // namespace

const char *refusal_text(const PGresult *result, bool read) {
    const char *m = error_message(result);
    if (m == nullptr)
        return nullptr;
    bool again = read ? routing::read_retryable(m) : routing::refused_before_running(m);
    return again ? m : nullptr;
}

routing::Outcome answer_outcome(const PGresult *result) {
    const char *m = error_message(result);
    if (m == nullptr)
        return routing::Outcome::Failed;
    const char *code = PQresultErrorField(result, PG_DIAG_SQLSTATE);
    return routing::outcome_of(code != nullptr ? code : "", m);
}

std::string failed_on(const std::string &address, bool may_span, const PGresult *result) {
    const std::string where = "The statement failed on instance " + address;
    if (may_span)
        return where +
               ". It spans several replicasets, and Picodata does not apply such a statement "
               "atomically: it may have been applied on some of them. ";
    switch (answer_outcome(result)) {
        case routing::Outcome::NotRun:
            return where + " before running and was not applied there. ";
        case routing::Outcome::Unknown:
            return where + " after it was sent on to a storage: it may have been applied there. ";
        case routing::Outcome::Failed:
            break;
    }
    return where + ". ";
}

bool proven_not_run(bool may_span, const PGresult *result) {
    return !may_span && answer_outcome(result) == routing::Outcome::NotRun;
}

bool leader_read_refusal(const PGresult *result) {
    const char *m = error_message(result);
    return m != nullptr && routing::needs_leader_read(m);
}

}  // namespace picoroute::pg::remote
