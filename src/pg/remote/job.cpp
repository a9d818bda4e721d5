// One statement for one instance and the I/O of one attempt (see job.h).
extern "C" {
#include "postgres.h"

#include "utils/errcodes.h"
}

#include "pg/remote/job.h"

#include "pg/guard.h"
#include "pg/remote/remote_stmt.h"
#include "pg/remote/route_log.h"
#include "pg/stats/stats.h"

#include <cstdlib>
#include <cstring>

namespace picoroute::pg::remote {

static_assert(static_cast<uint32_t>(routing::Sent::Chunk) ==
                      static_cast<uint32_t>(stats::Sent::Chunk) &&
                  static_cast<uint32_t>(routing::Sent::KeyBatch) ==
                      static_cast<uint32_t>(stats::Sent::KeyBatch),
              "the routing kinds are counted in the order of stats::Sent");

namespace {

stats::Sent counted_kind(routing::Sent sent) {
    return static_cast<stats::Sent>(static_cast<uint32_t>(sent));
}

}  // namespace

void AnswerMeter::start() noexcept {
    stats_ = stats::enabled();
    armed_ = stats_ || route_log_on();
    rows_ = bytes_ = written_ = 0;
    error_ = Error::None;
    if (armed_)
        INSTR_TIME_SET_CURRENT(start_);
}

void AnswerMeter::add(const PGresult *result, bool final) noexcept {
    if (!armed_ || result == nullptr)
        return;
    switch (PQresultStatus(result)) {
        case PGRES_TUPLES_OK:
        case PGRES_SINGLE_TUPLE: {
            int rows = PQntuples(result), cols = PQnfields(result);
            rows_ += static_cast<uint64_t>(rows);
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++)
                    bytes_ += static_cast<uint64_t>(PQgetlength(result, r, c));
            break;
        }
        case PGRES_COMMAND_OK: {
            const char *n = PQcmdTuples(const_cast<PGresult *>(result));
            if (n != nullptr && n[0] != '\0')
                written_ += strtoull(n, nullptr, 10);
            break;
        }
        case PGRES_FATAL_ERROR:
        case PGRES_NONFATAL_ERROR: {
            if (!final && may_be_resent(result))
                break;  // sent again by remote_stmt: the second answer is the statement's
            routing::Answer answer = answer_of(result);
            error_ = routing::refused_before_running(answer.message) ||
                             routing::leader_read_refusal(answer)
                         ? Error::Refused
                         : Error::Remote;
            break;
        }
        default:
            break;
    }
}

void AnswerMeter::end(const Job &job) {
    if (!armed_)
        return;
    armed_ = false;
    instr_time now;
    INSTR_TIME_SET_CURRENT(now);
    INSTR_TIME_SUBTRACT(now, start_);
    uint64_t micros = static_cast<uint64_t>(INSTR_TIME_GET_MICROSEC(now));
    const std::string &address = job.target.address;
    if (stats_) {
        stats::answer_received(address, rows_, bytes_, micros);
        if (OidIsValid(job.table) && job.rows_of_table)
            stats::table_rows(job.table, rows_, written_);
        if (error_ != Error::None)
            stats::statement_failed(address, error_ == Error::Refused
                                                 ? stats::Failure::RefusedBeforeRunning
                                                 : stats::Failure::Remote);
    }
    if (route_log_on())
        log_route(job.target, job.shown_sql(), rows_ + written_, micros, error_ != Error::None);
}

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
    job.meter.start();
    Connection *c = nullptr;
    try {
        c = send_routed(job.target.address, params, job.sql, job.values);
    } catch (const ConnectionFailure &f) {
        stats::statement_failed(f.address(), stats::Failure::Connection);
        throw;
    }
    stats::statement_sent(job.target.address, counted_kind(job.target.sent));
    if (OidIsValid(job.table))
        stats::table_statement(job.table, counted_kind(job.target.sent));
    return c;
}

void collect_job(Job &job, Connection *connection) {
    try {
        job.result.reset(collect_routed(connection));
    } catch (const ConnectionFailure &) {
        count_lost(job);
        throw;
    }
    job.meter.add(job.result.get(), true);  // collect_routed sent it again when it was due
    job.meter.end(job);
}

void count_lost(const Job &job) noexcept {
    stats::statement_failed(job.target.address, stats::Failure::OutcomeUnknown);
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
