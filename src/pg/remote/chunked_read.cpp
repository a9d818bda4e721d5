// Bounded keyless reads: one or more statements read in chunks of buckets (see chunked_read.h).
extern "C" {
#include "postgres.h"

#include "utils/elog.h"
}

#include "pg/remote/chunked_read.h"

#include <cstdlib>
#include <cstring>

namespace picoroute::pg::remote {

namespace {

constexpr const char *kRowLimitText = "Exceeded maximum number of rows (";

std::string range_filter(const chunks::Chunk &c) {
    return "\"bucket_id\" BETWEEN " + std::to_string(c.first) + " AND " + std::to_string(c.last);
}

// The limit a row-limit error names ("... rows (N) in virtual table: M"), -1 when unreadable.

}  // namespace

long long named_row_limit(const char *message) {
    const char *p = message != nullptr ? strstr(message, kRowLimitText) : nullptr;
    if (p == nullptr)
        return -1;
    return strtoll(p + strlen(kRowLimitText), nullptr, 10);
}

bool is_row_limit_error(const PgError &e) {
    const ErrorData *d = e.data();
    return d != nullptr && d->sqlerrcode == ERRCODE_INTERNAL_ERROR &&
           named_row_limit(d->message) >= 0;
}

ChunkedRead::ChunkedRead(std::vector<std::unique_ptr<ChunkPart>> parts, ChunkLimits limits,
                         ConnParams params, std::string tier, ReadPref pref, Retry retry, int ncols,
                         MemoryContext context)
    : parts_(std::move(parts)),
      limits_(std::move(limits)),
      params_(std::move(params)),
      tier_(std::move(tier)),
      pref_(pref),
      retry_(retry),
      ncols_(ncols),
      context_(context) {}

uint32_t ChunkedRead::sent_again() const {
    return sent_again_ + (stream_ ? stream_->sent_again() : 0);
}

bool ChunkedRead::plan_next_part() {
    if (part_ >= parts_.size())
        return false;
    const ChunkPart &part = *parts_[part_++];
    std::vector<Job> jobs(1);
    jobs[0].target = part.base.target;
    jobs[0].target.sent = routing::Sent::Chunk;  // a statement of the chunked read
    jobs[0].sql = part.count;
    jobs[0].values = part.base.values;
    jobs[0].table = part.base.table;
    jobs[0].rows_of_table = false;  // counts per bucket, not the table's rows
    run_jobs(jobs, params_, tier_, pref_, retry_, nullptr, &sent_again_);
    const PGresult *r = jobs[0].result.get();
    if (PQnfields(r) != 2)
        throw SqlError(ERRCODE_FDW_ERROR,
                       "picoroute: the count of rows per bucket returned " +
                           std::to_string(PQnfields(r)) + " columns, expected 2",
                       "Remote SQL: " + part.count);
    std::vector<chunks::BucketCount> counts;
    for (int i = 0; i < PQntuples(r); i++) {
        if (PQgetisnull(r, i, 0) || PQgetisnull(r, i, 1))
            continue;
        counts.push_back({static_cast<uint32_t>(strtoul(PQgetvalue(r, i, 0), nullptr, 10)),
                          strtoull(PQgetvalue(r, i, 1), nullptr, 10)});
    }
    chunks::ChunkPlan plan =
        chunks::plan_chunks(std::move(counts), limits_.bound, limits_.bucket_count);
    if (plan.too_large)
        too_large(plan.too_large->bucket, plan.too_large->rows);
    queue_.assign(plan.chunks.begin(), plan.chunks.end());
    return true;
}

Job ChunkedRead::job_for(const chunks::Chunk &chunk) const {
    const ChunkPart &part = *parts_[part_ - 1];
    Job job;
    job.target = part.base.target;
    job.target.sent = routing::Sent::Chunk;
    job.sql = part.chunk_prefix + range_filter(chunk) + limits_.chunk_option;
    job.values = part.base.values;
    job.table = part.base.table;
    return job;
}

void ChunkedRead::split(const chunks::Chunk &chunk) {
    auto halves = chunks::split_chunk(chunk);
    if (!halves)
        too_large(chunk.first, 0);
    queue_.push_front(halves->second);
    queue_.push_front(halves->first);
}

void ChunkedRead::too_large(uint32_t bucket, uint64_t rows) const {
    std::string bound = std::to_string(limits_.bound);
    std::string count = rows > 0 ? std::to_string(rows) : "more than " + bound;
    std::string setting = limits_.bound_from_option
                              ? "the sql_motion_row_max option of the foreign table or its server"
                              : "picoroute.keyless_row_max";
    std::string hint =
        limits_.bound_from_option
            ? "Raise the sql_motion_row_max option of foreign table \"" + limits_.table +
                  "\" (or of its server) to at least " + count + ", or set it to 0 for no bound."
            : "Raise picoroute.keyless_row_max to at least " + count +
                  (rows > 0 ? " (SET picoroute.keyless_row_max = " + std::to_string(rows) + ")"
                            : std::string()) +
                  ", or set it to 0 for no bound.";
    throw SqlError(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                   "picoroute: bucket " + std::to_string(bucket) + " of foreign table \"" +
                       limits_.table + "\" holds " + count +
                       " rows that the scan reads, more than " + setting + " (" + bound + ")",
                   "A read without a sharding key gathers at most that many rows at a Picodata "
                   "coordinator per statement; a larger answer is read in chunks of buckets, and "
                   "one bucket is the smallest chunk.",
                   hint);
}

bool ChunkedRead::take_next_chunk() {
    while (queue_.empty())
        if (!plan_next_part())
            return false;
    current_ = queue_.front();
    queue_.pop_front();
    sent_++;
    return true;
}

bool ChunkedRead::next(const char **values) {
    for (;;) {
        if (stream_) {
            try {
                if (stream_->next(values))
                    return true;
            } catch (const PgError &e) {
                // Picodata gathers a chunk whole before it sends a row: none of it was read.
                if (!is_row_limit_error(e) || stream_->current_delivered() > 0)
                    throw;
                sent_again_ += stream_->sent_again();
                stream_.reset();
                split(current_);
                continue;
            }
            sent_again_ += stream_->sent_again();
            stream_.reset();
        }
        if (!take_next_chunk())
            return false;
        std::vector<Job> jobs;
        jobs.push_back(job_for(current_));
        stream_ = std::make_unique<RowStream>(std::move(jobs), params_, tier_, pref_, retry_,
                                              ncols_, context_);
        try {
            stream_->start();
        } catch (const PgError &e) {
            if (!is_row_limit_error(e))
                throw;
            sent_again_ += stream_->sent_again();
            stream_.reset();
            split(current_);
        }
    }
}

std::vector<ResultPtr> ChunkedRead::read_all() {
    std::vector<ResultPtr> out;
    while (take_next_chunk()) {
        std::vector<Job> jobs;
        jobs.push_back(job_for(current_));
        try {
            run_jobs(jobs, params_, tier_, pref_, retry_, nullptr, &sent_again_);
        } catch (const PgError &e) {
            if (!is_row_limit_error(e))
                throw;
            split(current_);
            continue;
        }
        out.push_back(std::move(jobs[0].result));
    }
    return out;
}

}  // namespace picoroute::pg::remote
