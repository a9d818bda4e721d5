// One statement for one instance and the I/O of one attempt (see job.h).
extern "C" {
#include "postgres.h"

#include "utils/errcodes.h"
}

#include "pg/remote/job.h"

#include "pg/guard.h"
#include "pg/remote/remote_stmt.h"

#include <cstdlib>

namespace picoroute::pg::remote {

void Job::own_values(std::vector<std::optional<std::string>> *store) {
    store->clear();
    for (const char *v : values)
        store->emplace_back(v != nullptr ? std::optional<std::string>(v) : std::nullopt);
    values.clear();
    for (const auto &v : *store)
        values.push_back(v ? v->c_str() : nullptr);
}

Job Job::copy() const {
    Job out;
    static_cast<JobStatement &>(out) = *this;
    return out;
}

routing::Answer answer_of(const PGresult *result) {
    routing::Answer a;
    switch (PQresultStatus(result)) {
        case PGRES_TUPLES_OK:
        case PGRES_SINGLE_TUPLE:
            a.status = routing::Answer::Status::Rows;
            a.rows = static_cast<uint64_t>(PQntuples(result));
            break;
        case PGRES_COMMAND_OK: {
            a.status = routing::Answer::Status::Command;
            const char *n = PQcmdTuples(const_cast<PGresult *>(result));
            a.counted = n != nullptr && n[0] != '\0';
            a.rows = a.counted ? strtoull(n, nullptr, 10) : 0;
            break;
        }
        case PGRES_FATAL_ERROR:
        case PGRES_NONFATAL_ERROR: {
            a.status = routing::Answer::Status::Error;
            const char *m = PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY);
            const char *code = PQresultErrorField(result, PG_DIAG_SQLSTATE);
            if (m != nullptr) {
                a.message = m;
                a.sqlstate = code != nullptr ? code : "";
            }
            break;
        }
        default:
            break;
    }
    return a;
}

Connection *send_job(Job &job, const ConnParams &params) {
    return send_routed(job.target.address, params, job.sql, job.values);
}

void collect_job(Job &job, Connection *connection) {
    job.result.reset(collect_routed(connection));
}

void check_answer(const Job &job, const std::string &detail) {
    ExecStatusType status = PQresultStatus(job.result.get());
    if (status == PGRES_TUPLES_OK || status == PGRES_COMMAND_OK)
        return;
    if (status == PGRES_FATAL_ERROR || status == PGRES_NONFATAL_ERROR)
        throw_remote_error(job.result.get(), job.target.address, job.target.replicaset,
                           job.shown_sql().c_str(), detail);
    throw SqlError(ERRCODE_FDW_ERROR,
                   std::string("picoroute: unexpected answer from ") + job.target.address + ": " +
                       PQresStatus(status),
                   "Only statements returning rows or a command status are supported.");
}

}  // namespace picoroute::pg::remote
