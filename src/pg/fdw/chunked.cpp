// Bounded keyless reads of a routed statement: the chunked fallback of a base scan (see chunked.h).
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "utils/elog.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

#include "pg/fdw/chunked.h"
#include "pg/fdw/dialect.h"
#include "pg/fdw/table_cache.h"
#include "pg/map_store.h"
#include "pg/lookup.h"
#include "pg/sql_common.h"
#include "pg/stats/stats.h"

#include <cstring>

namespace picoroute::pg::fdw {

namespace {

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
    part->base.table = job.table;
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
    stats::table_chunked_read(t->relid);
    Oid userid = OidIsValid(st->setup->userid) ? st->setup->userid : GetUserId();
    return new ChunkedRead(std::move(parts), std::move(limits), read_conn_params(t, userid),
                           t->tier, table_read_pref(t), retry, ncols,
                           GetMemoryChunkContext(const_cast<RoutedStatement *>(st)));
}

// Adds to a row-limit error the hint naming the bound, when the statement carried it.
void add_bound_hint(const RoutedStatement *st, const PgError &e) {
    int bound = keyless_row_bound(st->setup->table);
    ErrorData *d = e.data();
    if (st->last.keyless && bound > 0 && d->hint == nullptr &&
        named_row_limit(d->message) == bound) {
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
