// ANALYZE of a picoroute foreign table: the row count and a sample, gathered through the cluster.
//
// Picodata has no TABLESAMPLE and no random(), so the sample is taken by bucket: rows are spread
// over the buckets by the hash of their sharding key, so the rows of randomly chosen buckets are a
// random sample of the keys (a cluster sample: rows with the same key come together). Two
// statements go to one coordinator:
//
//   SELECT count(*) FROM "t" OPTION (...)
//   SELECT "a", "b", ... FROM "t" WHERE "bucket_id" IN (<k random buckets>) LIMIT <2 x target>
//       OPTION (...)
//
// with k chosen so that the buckets hold about 1.2 times the target number of rows; when the
// table is global or small enough, the whole table is read (same LIMIT). The rows received are
// then sampled down to the target locally. reltuples becomes the exact count. The trailing OPTION
// clause (setting picoroute.analyze_option; none when the server's execution_options is 'off')
// lifts Picodata's limits on the rows a statement may gather (sql_motion_row_max, 5000 by
// default) and on the work of one storage (sql_vdbe_opcode_max), which a count or a sample of a
// large table exceeds. The table's own limit options do not apply: ANALYZE bounds itself.
//
// Cost on Picodata: the count scans the table on every storage. The sample statement reads the
// chosen buckets on every storage; `bucket_id IN (...)` is only a filter there (every replicaset is
// asked) but on releases that prune by bucket_id (26.2.1-rc2, capability prune_by_bucket_id), where
// it restricts the statement to the buckets' owners.
extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "common/pg_prng.h"
#include "foreign/fdwapi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

#include "pg/fdw/analyze.h"
#include "pg/fdw/options.h"
#include "pg/fdw/table_cache.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/remote/connection.h"
#include "pg/remote/leader_reads.h"
#include "pg/remote/rounds.h"
#include "pg/lookup.h"
#include "pg/settings.h"
#include "pg/sql_common.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;
using namespace picoroute::pg::fdw;

namespace {

// A name in Picodata's SQL: always double-quoted (Picodata keeps the case of quoted names and
// does not unescape a '"' inside them, so such a name cannot be sent).
std::string picodata_name(const char *name, const char *what) {
    if (strchr(name, '"') != nullptr)
        throw SqlError(ERRCODE_FDW_INVALID_ATTRIBUTE_VALUE,
                       std::string("picoroute: ") + what + " \"" + name +
                           "\" contains a double quote, which Picodata cannot read in a name",
                       {},
                       strcmp(what, "table") == 0
                           ? "Map it to a name without a double quote with the table_name option."
                           : "Rename the column, here and in Picodata.");
    return std::string("\"") + name + "\"";
}

// The OPTION clause of ANALYZE's statements: picoroute.analyze_option, unless the server takes
// no OPTION clause (execution_options 'off').
std::string analyze_option_clause(const TableInfo *table) {
    const char *value = setting_analyze_option;
    if (!table->exec_options || value == nullptr || value[0] == '\0')
        return {};
    return std::string(" OPTION (") + value + ")";
}

// What one ANALYZE gathered, as plain data for the log line.
struct SampleReport {
    double total;      // count(*) of the cluster
    int received;      // rows received from the cluster
    int kept;          // rows in the sample
    uint32_t buckets;  // buckets read (0: the whole table)
    uint32_t of;       // bucket_count of the tier
    char *address;     // the coordinator
};

// k distinct buckets out of 1..count, sorted (Floyd's algorithm).
std::vector<uint32_t> random_buckets(uint32_t count, uint32_t k) {
    std::set<uint32_t> chosen;
    for (uint32_t j = count - k + 1; j <= count; j++) {
        uint32_t t = static_cast<uint32_t>(pg_prng_uint64_range(&pg_global_prng_state, 1, j));
        if (!chosen.insert(t).second)
            chosen.insert(j);
    }
    return std::vector<uint32_t>(chosen.begin(), chosen.end());
}

ResultPtr run_one(const Target &target, const std::string &sql, const ConnParams &params,
                  const std::string &tier) {
    std::vector<Job> jobs(1);
    jobs[0].target = target;
    jobs[0].sql = sql;
    run_jobs(jobs, params, tier, ReadPref::Leader, Retry::Read);
    if (PQresultStatus(jobs[0].result.get()) != PGRES_TUPLES_OK)
        throw SqlError(ERRCODE_FDW_ERROR,
                       "picoroute: ANALYZE expected rows from " + describe(jobs[0].target), {}, {});
    return std::move(jobs[0].result);
}

// The select list of every live column of `rel`, and the 0-based attribute index of each.
std::string select_list(TupleDesc desc, std::vector<int> *attnums) {
    std::string columns;
    for (int i = 0; i < desc->natts; i++) {
        Form_pg_attribute attr = TupleDescAttr(desc, i);
        if (attr->attisdropped)
            continue;
        columns += (columns.empty() ? "" : ", ") + picodata_name(NameStr(attr->attname), "column");
        attnums->push_back(i);
    }
    return columns;
}

// A WHERE clause reading about 1.2 x targrows rows from random buckets of a sharded table larger
// than the sample, or "" (the whole table); sets report->buckets.
std::string bucket_filter(const TableInfo *table, uint32_t bucket_count, double total, int targrows,
                          SampleReport *report) {
    if (table->global || bucket_count == 0 || total <= targrows)
        return {};
    double wanted = std::ceil(bucket_count * (targrows * 6.0) / (total * 5.0));  // 1.2 x
    uint32_t k = static_cast<uint32_t>(std::min<double>(bucket_count, std::max(wanted, 1.0)));
    if (k >= bucket_count)
        return {};
    std::vector<uint32_t> buckets = random_buckets(bucket_count, k);
    std::string where = " WHERE \"bucket_id\" IN (";
    for (size_t i = 0; i < buckets.size(); i++)
        where += (i ? ", " : "") + std::to_string(buckets[i]);
    report->buckets = k;
    return where + ")";
}

// A uniform choice of min(received, targrows) of the received rows (partial Fisher-Yates), in the
// order they arrived.
std::vector<int> choose_rows(int received, int targrows) {
    std::vector<int> order(received);
    for (int i = 0; i < received; i++)
        order[i] = i;
    int keep = std::min(received, targrows);
    for (int i = 0; i < keep; i++) {
        int j = static_cast<int>(pg_prng_uint64_range(&pg_global_prng_state, i, received - 1));
        std::swap(order[i], order[j]);
    }
    order.resize(keep);
    std::sort(order.begin(), order.end());
    return order;
}

// Forms rows[] from the chosen rows of `res` (HeapTuples of `desc`, allocated in the caller's
// memory context; columns not selected are NULL).
void form_rows(TupleDesc desc, const PGresult *res, const std::vector<int> &attnums,
               const std::vector<int> &chosen, HeapTuple *rows) {
    pg_call([&] {
        AttInMetadata *meta = TupleDescGetAttInMetadata(desc);
        Datum *values = static_cast<Datum *>(palloc0(sizeof(Datum) * (desc->natts + 1)));
        bool *nulls = static_cast<bool *>(palloc(sizeof(bool) * (desc->natts + 1)));
        MemoryContext caller = CurrentMemoryContext;
        MemoryContext rowcxt =
            AllocSetContextCreate(caller, "picoroute analyze row", ALLOCSET_SMALL_SIZES);
        for (size_t n = 0; n < chosen.size(); n++) {
            int r = chosen[n];
            MemoryContextSwitchTo(rowcxt);
            for (int i = 0; i < desc->natts; i++) {
                values[i] = (Datum)0;
                nulls[i] = true;
            }
            for (size_t c = 0; c < attnums.size(); c++) {
                int i = attnums[c];
                bool isnull = PQgetisnull(res, r, static_cast<int>(c));
                char *text = isnull ? nullptr : PQgetvalue(res, r, static_cast<int>(c));
                values[i] = InputFunctionCall(&meta->attinfuncs[i], text, meta->attioparams[i],
                                              meta->atttypmods[i]);
                nulls[i] = isnull;
            }
            MemoryContextSwitchTo(caller);
            rows[n] = heap_form_tuple(desc, values, nulls);
            MemoryContextReset(rowcxt);
        }
        MemoryContextDelete(rowcxt);
    });
}

// Runs the count and the sample statements and fills rows[] (HeapTuples of `rel`, allocated in
// the caller's memory context). C++: called inside guarded().
int gather(Relation rel, TableInfo *table, HeapTuple *rows, int targrows, SampleReport *report) {
    TupleDesc desc = RelationGetDescr(rel);
    std::vector<int> attnums;  // 0-based attribute index of each selected column
    std::string columns = select_list(desc, &attnums);
    std::string from = " FROM " + picodata_name(table->remote_table, "table");
    std::string option = analyze_option_clause(table);
    const std::string tier_name = table->tier;

    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    int32_t tier = require_tier(view, map.generation, table->tier);
    uint32_t bucket_count = view.tier(tier).bucket_count;
    Target coordinator = coordinator_target(view);
    // The table's reads: its server's read_preference, the leaders for an unlogged table.
    ConnParams params = read_conn_params(table, GetUserId());

    ResultPtr counted = run_one(coordinator, "SELECT count(*)" + from + option, params, tier_name);
    if (PQntuples(counted.get()) != 1 || PQnfields(counted.get()) != 1 ||
        PQgetisnull(counted.get(), 0, 0))
        throw SqlError(
            ERRCODE_FDW_ERROR,
            "picoroute: ANALYZE: unexpected answer to count(*) from " + describe(coordinator));
    double total = strtod(PQgetvalue(counted.get(), 0, 0), nullptr);
    report->total = total;
    report->of = bucket_count;
    report->buckets = 0;
    report->received = 0;
    report->kept = 0;
    pg_call([&] { report->address = pstrdup(coordinator.address.c_str()); });
    if (total <= 0 || columns.empty())
        return 0;

    long limit = 2L * targrows;
    std::string where = bucket_filter(table, bucket_count, total, targrows, report);
    std::string select = "SELECT " + columns + from;
    ResultPtr sample =
        run_one(coordinator, select + where + " LIMIT " + std::to_string(limit) + option, params,
                tier_name);
    // Keys concentrated in a few buckets can leave the chosen ones nearly empty: then read the
    // first rows of the whole table instead (not random, but a sample of the right size).
    if (!where.empty() && PQntuples(sample.get()) < std::min<double>(total, targrows) / 4) {
        sample = run_one(coordinator, select + " LIMIT " + std::to_string(targrows) + option,
                         params, tier_name);
        report->buckets = 0;
    }
    const PGresult *res = sample.get();
    int received = PQntuples(res);
    if (PQnfields(res) != static_cast<int>(attnums.size()))
        throw SqlError(ERRCODE_FDW_ERROR,
                       "picoroute: ANALYZE: the remote table returned " +
                           std::to_string(PQnfields(res)) + " columns, expected " +
                           std::to_string(attnums.size()),
                       "Instance: " + describe(coordinator) + ".");
    std::vector<int> chosen = choose_rows(received, targrows);
    form_rows(desc, res, attnums, chosen, rows);
    report->received = received;
    report->kept = static_cast<int>(chosen.size());
    return report->kept;
}

int acquire_sample_rows(Relation rel, int elevel, HeapTuple *rows, int targrows, double *totalrows,
                        double *totaldeadrows) {
    TableInfo *table = get_table_info(RelationGetRelid(rel));
    SampleReport report = {};
    int kept = guarded([&] { return gather(rel, table, rows, targrows, &report); });
    *totalrows = report.total;
    *totaldeadrows = 0;
    if (report.buckets > 0)
        ereport(elevel,
                (errmsg("\"%s\": %.0f rows in Picodata; %d rows read from %u of %u buckets, "
                        "%d in the sample",
                        RelationGetRelationName(rel), report.total, report.received, report.buckets,
                        report.of, report.kept),
                 errdetail("Counted and sampled through %s.", report.address)));
    else
        ereport(elevel,
                (errmsg("\"%s\": %.0f rows in Picodata; %d rows read, %d in the sample",
                        RelationGetRelationName(rel), report.total, report.received, report.kept),
                 errdetail("Counted and sampled through %s.",
                           report.address ? report.address : "no instance")));
    return kept;
}

}  // namespace

namespace picoroute::pg::fdw {

bool analyze_foreign_table(Relation relation, AcquireSampleRowsFunc *func,
                           BlockNumber *totalpages) {
    (void)relation;
    *func = acquire_sample_rows;
    // No page count without a round trip; ANALYZE stores it as relpages, which picoroute does
    // not use for its estimates (reltuples is the exact count).
    *totalpages = 1;
    return true;
}

}  // namespace picoroute::pg::fdw
