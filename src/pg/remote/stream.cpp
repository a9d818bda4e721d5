// Streaming the answers of routed reads (see stream.h).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "utils/elog.h"
}

#include "pg/remote/stream.h"

#include "core/routing/answer.h"
#include "core/routing/reports.h"
#include "core/routing/stream.h"
#include "pg/guard.h"
#include "pg/lookup.h"
#include "pg/remote/leader_reads.h"
#include "pg/remote/remote_stmt.h"
#include "pg/stats/stats.h"
#include "pg/worker_status.h"

#include <algorithm>

namespace picoroute::pg::remote {

namespace {

using routing::StreamFallback;

[[noreturn]] void lost_mid_scan(const Job &job, size_t delivered, const std::string &message) {
    wake_worker();
    throw report_error(routing::lost_mid_scan(job.target, delivered, message));
}

}  // namespace

RowStream::RowStream(std::vector<Job> jobs, ConnParams params, std::string tier,
                     routing::ReadPref pref, routing::Retry retry, int ncols, MemoryContext context)
    : sources_(jobs.size()),
      params_(std::move(params)),
      tier_(std::move(tier)),
      pref_(pref),
      retry_(retry),
      ncols_(ncols),
      context_(context),
      owner_(CurrentResourceOwner) {
    for (size_t i = 0; i < jobs.size(); i++) {
        Source &s = sources_[i];
        s.job = std::move(jobs[i]);
        s.job.own_values(&s.values);
    }
}

RowStream::~RowStream() {
    for (Source &s : sources_)
        release(s);
}

void RowStream::release(Source &s) noexcept {
    Connection *c = s.conn;
    if (c == nullptr)
        return;
    s.conn = nullptr;
    c->reader = nullptr;
    // An answer that has fully arrived costs nothing to finish, and the connection stays cached.
    // Otherwise the instance is asked to cancel the statement (a closed connection alone does not
    // stop a statement that is not sending rows, such as a slow filter or a sleep), and the
    // connection is closed without waiting for the answer.
    if (!finish_if_arrived(c)) {
        cancel_statement(c);
        discard_connection(c);
        return;
    }
    try {
        s.job.meter.end(s.job);  // its answer arrived whole (an error before the rows, say)
    } catch (const PgError &) {
        // the route's log line only, out of memory: the statistics were counted before it
    }
}

void RowStream::start() {
    sweep_connections();
    for (size_t i = 0; i < sources_.size(); i++) {
        Source &s = sources_[i];
        // A second statement to the same instance (a scatter's master in several statements)
        // waits for the first one's answer to be read: sent now, it would make the first one's
        // rows be read ahead into memory. (A scan has few jobs: no set is built for them.)
        s.deferred = std::any_of(sources_.begin(), sources_.begin() + i, [&](const Source &e) {
            return e.job.target.address == s.job.target.address;
        });
        if (!s.deferred)
            send(s);
    }
}

void RowStream::advance() {
    // The instance of the job just read is free: its next statement starts now, while the jobs
    // before that one are read.
    const std::string &address = sources_[current_].job.target.address;
    for (size_t i = current_ + 1; i < sources_.size(); i++) {
        if (sources_[i].deferred && sources_[i].job.target.address == address) {
            sources_[i].deferred = false;
            send(sources_[i]);
            break;
        }
    }
    current_++;
}

void RowStream::send(Source &s) {
    // Waits for the switchover, or for a master of the tier that Picodata would wait for
    // (routing::hold): run_jobs holds it.
    if (held(s.job, params_, tier_, pref_)) {
        run_buffered(s);
        return;
    }
    Connection *c = nullptr;
    try {
        c = send_job(s.job, params_);
    } catch (const ConnectionFailure &) {
        run_buffered(s);  // never sent: run_jobs applies its retry rules
        return;
    }
    c->reader = this;
    s.conn = c;
    // Without single-row mode the answer arrives whole and is handed over row by row.
    PQsetSingleRowMode(c->conn);
}

bool RowStream::read_as_leader(Source &s, const PGresult *refusal) {
    if (!switch_to_leader_reads(refusal, &params_))
        return false;
    // The stream's later statements (the same read on other instances) go as leader reads too.
    pref_ = ReadPref::Leader;
    s.job.target = leader_target(s.job.target, tier_);
    sent_again_++;
    stats::statement_resent(s.job.target.address);
    run_buffered(s);
    return true;
}

bool RowStream::fall_back(Source &s, const PGresult *answer, routing::StreamRetry retry) {
    if (retry.as_leader && read_as_leader(s, answer))
        return true;
    if (!retry.again)
        return false;
    stats::statement_resent(s.job.target.address);
    run_buffered(s);  // the first statement again, then run_jobs' retries if it fails again
    sent_again_++;
    return true;
}

void RowStream::run_buffered(Source &s) {
    std::vector<Job> one;
    one.push_back(s.job.copy());
    run_jobs(one, params_, tier_, pref_, retry_, nullptr, &sent_again_);
    s.job.target = one[0].target;
    s.whole_row = 0;
    s.whole = std::move(one[0].result);
    if (!rows_in(s, s.whole.get()))
        s.whole.reset();
}

bool RowStream::rows_in(const Source &s, const PGresult *result) {
    ExecStatusType status = PQresultStatus(result);
    if (status == PGRES_FATAL_ERROR || status == PGRES_NONFATAL_ERROR)
        throw_remote_error(result, s.job.target.address, s.job.target.replicaset,
                           s.job.shown_sql().c_str());
    if (status != PGRES_SINGLE_TUPLE && status != PGRES_TUPLES_OK)
        throw SqlError(ERRCODE_FDW_ERROR,
                       std::string("picoroute: unexpected answer from ") + s.job.target.address +
                           ": " + PQresStatus(status),
                       "Remote SQL: " + s.job.shown_sql());
    if (ncols_ > 0 && PQnfields(result) != ncols_)
        throw SqlError(
            ERRCODE_FDW_ERROR,
            "picoroute: the remote query returned " + std::to_string(PQnfields(result)) +
                " columns, expected " + std::to_string(ncols_),
            "Instance: " + describe(s.job.target) + ". Remote SQL: " + s.job.shown_sql());
    return PQntuples(result) > 0;
}

void RowStream::resend(Source &s) {
    Connection *c = s.conn;
    // The end of the invalidated answer, read past the meter: the statement's answer is the
    // second execution's.
    while (ResultPtr rest{next_result(c)}) {
    }
    c->reader = nullptr;
    s.conn = nullptr;
    try {
        resend_invalidated(c);
    } catch (const ConnectionFailure &) {
        discard_connection(c);
        run_buffered(s);
        return;
    }
    c->reader = this;
    s.conn = c;
    PQsetSingleRowMode(c->conn);
}

ResultPtr RowStream::next_result_of(Source &s) {
    if (s.lost)
        throw ConnectionFailure(s.job.target.address,
                                "the connection was closed while the scan read from it", true);
    if (s.conn == nullptr)
        return nullptr;
    ResultPtr result(next_result(s.conn));
    s.job.meter.add(result.get());
    // An error is the whole answer: counted now, as a scan that fails on it does not read on.
    if (result == nullptr || s.job.meter.failed())
        s.job.meter.end(s.job);
    if (result == nullptr) {
        s.conn->reader = nullptr;
        s.conn = nullptr;
    }
    return result;
}

bool RowStream::next_whole_row(Source &s, const char **values) {
    if (!s.whole)
        return false;
    const PGresult *w = s.whole.get();
    if (s.whole_row >= PQntuples(w)) {
        s.whole.reset();
        return false;
    }
    for (int c = 0; c < ncols_; c++)
        values[c] = PQgetisnull(w, s.whole_row, c) ? nullptr : PQgetvalue(w, s.whole_row, c);
    s.whole_row++;
    s.delivered++;
    return true;
}

bool RowStream::next_ahead_row(Source &s, const char **values) {
    if (!s.ahead)
        return false;
    if (s.ahead->next(values)) {
        s.delivered++;
        return true;
    }
    s.ahead.reset();  // every row read ahead was handed over: the store and its file go
    return false;
}

void RowStream::after_lost(Source &s, const std::string &failure) {
    if (routing::after_lost_connection(s.delivered) == StreamFallback::LostMidScan)
        lost_mid_scan(s.job, s.delivered, failure);
    run_buffered(s);
}

bool RowStream::next(const char **values) {
    row_.reset();
    while (current_ < sources_.size()) {
        Source &s = sources_[current_];
        if (s.deferred) {  // the statements before it to its instance have been read
            s.deferred = false;
            send(s);
            continue;
        }
        if (next_whole_row(s, values) || next_ahead_row(s, values))
            return true;
        if (s.invalidated) {
            s.invalidated = false;
            run_buffered(s);  // prepared again by the cache
            continue;
        }
        if (s.ahead_end) {
            ResultPtr end = std::move(s.ahead_end);
            if (fall_back(s, end.get(),
                          routing::after_error_answer(answer_of(end.get()), s.delivered, retry_)))
                continue;
            rows_in(s, end.get());  // throws for an error
        }
        if (!s.failure.empty()) {
            std::string failure = std::move(s.failure);
            s.failure.clear();
            after_lost(s, failure);
            continue;
        }
        if (s.conn == nullptr && !s.lost) {
            advance();
            continue;
        }
        ResultPtr result;
        try {
            result = next_result_of(s);
        } catch (const ConnectionFailure &f) {
            count_lost(s.job);
            release(s);
            s.lost = false;
            after_lost(s, f.what());
            continue;
        }
        if (result == nullptr) {
            advance();
            continue;
        }
        // A further row of a streamed answer: its first row passed rows_in, and every row of one
        // answer has the columns of its first.
        if (s.delivered > 0 && PQresultStatus(result.get()) == PGRES_SINGLE_TUPLE)
            return hand_over(s, std::move(result), values);
        if (s.delivered == 0 && statement_invalidated(s.conn, result.get())) {
            result.reset();
            resend(s);
            continue;
        }
        if (PQresultStatus(result.get()) == PGRES_FATAL_ERROR) {
            routing::StreamRetry retry =
                routing::after_error_answer(answer_of(result.get()), s.delivered, retry_);
            if (retry.any()) {
                while (next_result_of(s) != nullptr) {  // the end of that answer: it idles
                }
                if (fall_back(s, result.get(), retry))
                    continue;
            }
        }
        if (!rows_in(s, result.get()))
            continue;
        if (PQntuples(result.get()) > 1) {  // not in single-row mode: the whole answer at once
            s.whole_row = 0;
            s.whole = std::move(result);
            continue;
        }
        return hand_over(s, std::move(result), values);
    }
    return false;
}

bool RowStream::hand_over(Source &s, ResultPtr row, const char **values) {
    row_ = std::move(row);
    const PGresult *r = row_.get();
    for (int c = 0; c < ncols_; c++)
        values[c] = PQgetisnull(r, 0, c) ? nullptr : PQgetvalue(r, 0, c);
    s.delivered++;
    return true;
}

void RowStream::skip_current() {
    if (current_ >= sources_.size())
        return;
    Source &s = sources_[current_];
    release(s);
    s.lost = false;
    s.whole.reset();
    s.ahead.reset();
    s.ahead_end.reset();
    s.failure.clear();
    s.invalidated = false;
    s.deferred = false;
    current_++;
}

void RowStream::read_rest(Connection *connection) {
    for (Source &s : sources_) {
        if (s.conn != connection)
            continue;
        try {
            read_ahead(s, connection);
        } catch (const ConnectionFailure &f) {
            count_lost(s.job);
            s.failure = f.what();
            connection->busy = false;  // broken: the cache closes it and opens another
        }
        // An interrupt (PgError) leaves the source reading the connection: the statement that
        // wanted it fails, and the stream, if it goes on, serves its rows read ahead first.
        connection->reader = nullptr;
        s.conn = nullptr;
        return;
    }
}

void RowStream::read_ahead(Source &s, Connection *connection) {
    for (;;) {
        ResultPtr result(next_result(connection));
        s.job.meter.add(result.get());
        if (result == nullptr || s.job.meter.failed())
            s.job.meter.end(s.job);
        if (result == nullptr)
            return;
        ExecStatusType status = PQresultStatus(result.get());
        bool rows = status == PGRES_SINGLE_TUPLE || status == PGRES_TUPLES_OK;
        if (!rows || (ncols_ > 0 && PQnfields(result.get()) != ncols_)) {
            bool none_ahead = !s.ahead || s.ahead->waiting() == 0;
            if (s.ahead_end == nullptr && none_ahead && s.delivered == 0 &&
                statement_invalidated(connection, result.get())) {
                s.invalidated = true;  // run again (prepared again) by next()
                continue;
            }
            if (s.ahead_end == nullptr)
                s.ahead_end = std::move(result);  // reported after the rows before it
            continue;
        }
        if (s.ahead_end != nullptr || PQntuples(result.get()) == 0)
            continue;
        if (!s.ahead)
            s.ahead = std::make_unique<RowSpill>(context_, owner_, ncols_ > 0 ? ncols_ : 0);
        for (int r = 0; r < PQntuples(result.get()); r++)
            s.ahead->put(result.get(), r);
        // Rows that have arrived are read without waiting: a cancel or statement_timeout must
        // still end a long read-ahead. Checked once the result is stored, so that none is lost
        // for a stream that goes on (its source still reads the connection).
        pg_call([] { CHECK_FOR_INTERRUPTS(); });
    }
}

void RowStream::forget(Connection *connection) noexcept {
    for (Source &s : sources_) {
        if (s.conn == connection) {
            s.conn = nullptr;
            s.lost = true;
        }
    }
}

}  // namespace picoroute::pg::remote
