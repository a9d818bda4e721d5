// Bounded keyless reads: the chunked fallback of a base scan (see chunked.h).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "utils/elog.h"
#include "utils/rel.h"
}

#include "pg/fdw/chunked.h"

#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/settings.h"

#include <cstdlib>
#include <cstring>

namespace picoroute::pg::fdw {

namespace {

constexpr const char *kRowLimitText = "Exceeded maximum number of rows (";

std::string range_filter(const chunks::Chunk &c) {
    return "\"bucket_id\" BETWEEN " + std::to_string(c.first) + " AND " + std::to_string(c.last);
}

// The limit a row-limit error names ("... rows (N) in virtual table: M"), -1 when unreadable.
long long named_limit(const char *message) {
    const char *p = message != nullptr ? strstr(message, kRowLimitText) : nullptr;
    if (p == nullptr)
        return -1;
    return strtoll(p + strlen(kRowLimitText), nullptr, 10);
}

// The hint added to a row-limit error of a read that carried picoroute's bound and cannot be read
// in chunks (a pushed aggregate, join or ORDER BY / LIMIT, a scatter over masters).
std::string bound_hint(const RoutedStatement *st, int bound) {
    std::string out;
    if (st->setup->table->global && st->setup->table->motion_row_max < 0)
        return "A read of a global table gathers at most picoroute.keyless_row_max rows (" +
               std::to_string(bound) +
               ") at the instance that answers it. Every instance holds "
               "the whole table: set the foreign table option sql_motion_row_max '0' to read it "
               "at once.";
    if (st->setup->table->motion_row_max >= 0)
        out = "The sql_motion_row_max option of the foreign table or its server (" +
              std::to_string(bound) +
              ") bounds the rows one statement may gather: raise it, or "
              "set it to 0 for no bound.";
    else
        out = "A read without a sharding key may gather at most picoroute.keyless_row_max rows (" +
              std::to_string(bound) +
              ") at a coordinator: SET picoroute.keyless_row_max = 0 "
              "lifts the bound.";
    if (st->statement->tail != nullptr)
        out +=
            " Or set the foreign table option pushdown_aggregates 'off': the rows are then read "
            "here, in chunks of buckets when there are many.";
    else if (static_cast<Scatter>(st->setup->table->scatter) == Scatter::Masters)
        out +=
            " Or set the server option scatter 'coordinator': such a read is then done in "
            "chunks of buckets when it has many rows.";
    return out;
}

}  // namespace

bool is_row_limit_error(const PgError &e) {
    const ErrorData *d = e.data();
    return d != nullptr && d->sqlerrcode == ERRCODE_INTERNAL_ERROR && named_limit(d->message) >= 0;
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
    jobs[0].sql = part.count;
    jobs[0].values = part.base.values;
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
    job.sql = part.chunk_prefix + range_filter(chunk) + limits_.chunk_option;
    job.values = part.base.values;
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

namespace {

// Whether st's reads can go in chunks: a base scan of a sharded table, without a key, under a
// bound.
bool chunkable(const RoutedStatement *st) {
    return st->statement->chunk_from > 0 && st->last.keyless && !st->setup->table->global &&
           !st->statement->is_write && keyless_row_bound(st->setup->table) > 0;
}

// The part of a chunked read for `job`, one of st's jobs (a coordinator's statement, or a master's
// with its bucket filter).
std::unique_ptr<ChunkPart> part_for(const RoutedStatement *st, const Job &job,
                                    uint32_t bucket_count) {
    auto part = std::make_unique<ChunkPart>();
    part->base.target = job.target;
    part->base.values = job.values;
    part->base.own_values(&part->values);
    std::string filtered = with_bucket_filter(
        st->statement->plan.sql, st->statement->plan.has_where, job.target, "bucket_id");
    bool has_where =
        st->statement->plan.has_where || filtered.size() != strlen(st->statement->plan.sql);
    part->count = "SELECT \"bucket_id\", count(*)" + filtered.substr(st->statement->chunk_from) +
                  " GROUP BY \"bucket_id\"" +
                  option_clause_rows(st->setup->table, static_cast<int>(bucket_count), true);
    part->chunk_prefix = filtered + (has_where ? " AND " : " WHERE ");
    return part;
}

// A chunked read of `jobs` (C++).
ChunkedRead *new_chunked_read(const RoutedStatement *st, const std::vector<const Job *> &jobs,
                              Retry retry, int ncols) {
    TableInfo *t = st->setup->table;
    MapRef map = current_map();
    int32_t tier = require_tier(*map.view, map.generation, t->tier);
    ChunkLimits limits;
    limits.bucket_count = map.view->tier(tier).bucket_count;
    limits.bound = static_cast<uint64_t>(keyless_row_bound(t));
    limits.bound_from_option = t->motion_row_max >= 0;
    limits.chunk_option = option_clause_rows(t, keyless_row_bound(t), true);
    limits.table = RelationGetRelationName(st->setup->rel);
    std::vector<std::unique_ptr<ChunkPart>> parts;
    for (const Job *job : jobs)
        parts.push_back(part_for(st, *job, limits.bucket_count));
    Oid userid = OidIsValid(st->setup->userid) ? st->setup->userid : GetUserId();
    return new ChunkedRead(std::move(parts), std::move(limits), read_conn_params(t, userid),
                           t->tier, table_read_pref(t), retry, ncols,
                           GetMemoryChunkContext(const_cast<RoutedStatement *>(st)));
}

// Adds to a row-limit error the hint naming the bound, when the statement carried it.
void add_bound_hint(const RoutedStatement *st, const PgError &e) {
    int bound = keyless_row_bound(st->setup->table);
    ErrorData *d = e.data();
    if (st->last.keyless && bound > 0 && d->hint == nullptr && named_limit(d->message) == bound) {
        std::string hint = bound_hint(st, bound);
        pg_call([&] { d->hint = pstrdup(hint.c_str()); });
    }
}

}  // namespace

bool read_in_chunks(RoutedStatement *st, const std::vector<Job> &jobs, Retry retry,
                    const PgError &e, std::vector<ResultPtr> *out) {
    if (!is_row_limit_error(e))
        return false;
    if (!chunkable(st)) {
        add_bound_hint(st, e);
        return false;
    }
    std::vector<const Job *> all;
    for (const Job &job : jobs)
        all.push_back(&job);
    std::unique_ptr<ChunkedRead> read(new_chunked_read(st, all, retry, 0));
    *out = read->read_all();
    st->counts.chunks += read->sent();
    st->counts.sent_again += read->sent_again();
    return true;
}

bool fall_back_to_chunks(RoutedStatement *st, const PgError &e, bool starting) {
    if (!is_row_limit_error(e))
        return false;
    RowStream *stream = st->answers.stream;
    if (!chunkable(st) || stream == nullptr || stream->current_delivered() > 0 ||
        (starting && stream->jobs() != 1)) {
        add_bound_hint(st, e);
        return false;
    }
    st->answers.chunked =
        new_chunked_read(st, {&stream->current_job()}, stream->retry(), stream->ncols());
    if (starting) {
        st->counts.sent_again += stream->sent_again();
        delete stream;
        st->answers.stream = nullptr;
    } else {
        stream->skip_current();
    }
    return true;
}

}  // namespace picoroute::pg::fdw
