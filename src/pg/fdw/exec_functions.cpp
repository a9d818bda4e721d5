// SQL functions of the routing layer:
//   picoroute_exec(tier, bucket_id, query, read_only) -> SETOF record  (the owner of one bucket)
//   picoroute_exec_all(tier, query) -> SETOF record               (every master of a tier)
//   picoroute_connections(), picoroute_disconnect(address), picoroute_disconnect_all()
//
// picoroute_exec and picoroute_exec_all connect with the credentials of picoroute.conninfo (its
// user, password, dbname, sslmode, passfile...; host and port come from the topology). They are
// not granted to PUBLIC: whoever may call them acts on Picodata as that user.
extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

PG_FUNCTION_INFO_V1(picoroute_exec);
PG_FUNCTION_INFO_V1(picoroute_exec_all);
PG_FUNCTION_INFO_V1(picoroute_connections);
PG_FUNCTION_INFO_V1(picoroute_disconnect);
PG_FUNCTION_INFO_V1(picoroute_disconnect_all);
}

#include "pg/fdw/connection.h"
#include "pg/fdw/routing.h"
#include "pg/guard.h"
#include "pg/map_store.h"

#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;
using namespace picoroute::pg::fdw;

namespace {

std::string text_argument(FunctionCallInfo fcinfo, int argno) {
    text *value = nullptr;
    pg_call([&] { value = PG_GETARG_TEXT_PP(argno); });
    return std::string(VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value));
}

// Stores the rows of every job's result in the materialized result of the call, converting the
// text values with the input functions of the caller's column definition list.
void store_results(FunctionCallInfo fcinfo, std::vector<Job> &jobs) {
    ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    TupleDesc desc = rsinfo->setDesc;
    for (const Job &job : jobs) {
        const PGresult *res = job.result.get();
        if (PQresultStatus(res) != PGRES_TUPLES_OK)
            continue;
        if (PQnfields(res) != desc->natts)
            throw SqlError(
                ERRCODE_DATATYPE_MISMATCH,
                "picoroute: the remote query returned " + std::to_string(PQnfields(res)) +
                    " columns but the column definition list has " + std::to_string(desc->natts),
                "Instance: " + describe(job.target) + ".",
                "List one column per remote result column: AS t(a bigint, b text).");
    }
    pg_call([&] {
        AttInMetadata *meta = TupleDescGetAttInMetadata(desc);
        char **values = static_cast<char **>(palloc0(sizeof(char *) * (desc->natts + 1)));
        MemoryContext rowcxt =
            AllocSetContextCreate(CurrentMemoryContext, "picoroute_exec row", ALLOCSET_SMALL_SIZES);
        for (size_t j = 0; j < jobs.size(); j++) {
            const PGresult *res = jobs[j].result.get();
            if (PQresultStatus(res) != PGRES_TUPLES_OK)
                continue;
            int nrows = PQntuples(res);
            for (int r = 0; r < nrows; r++) {
                for (int c = 0; c < desc->natts; c++)
                    values[c] = PQgetisnull(res, r, c) ? nullptr : PQgetvalue(res, r, c);
                MemoryContext old = MemoryContextSwitchTo(rowcxt);
                HeapTuple tuple = BuildTupleFromCStrings(meta, values);
                MemoryContextSwitchTo(old);
                tuplestore_puttuple(rsinfo->setResult, tuple);
                MemoryContextReset(rowcxt);
            }
        }
        MemoryContextDelete(rowcxt);
    });
}

}  // namespace

extern "C" Datum picoroute_exec(PG_FUNCTION_ARGS) {
    require_preloaded();
    guarded([&] {
        pg_call([&] { InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC); });
        std::string tier_name = text_argument(fcinfo, 0);
        int32 bucket = PG_GETARG_INT32(1);
        std::string query = text_argument(fcinfo, 2);
        bool read_only = PG_NARGS() > 3 && !PG_ARGISNULL(3) && PG_GETARG_BOOL(3);

        MapRef map = current_map();
        const SnapshotView &view = *map.view;
        int32_t tier = tier_or_error(view, map.generation, tier_name);
        uint32_t count = view.tier(tier).bucket_count;
        if (bucket < 1 || (count != 0 && static_cast<uint32_t>(bucket) > count))
            throw SqlError(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                           "picoroute: bucket id " + std::to_string(bucket) +
                               " is out of range for tier \"" + tier_name + "\"",
                           {},
                           count != 0 ? "Bucket ids run from 1 to " + std::to_string(count) + "."
                                      : "Bucket ids start at 1.");
        ReadPref pref = read_only ? ReadPref::Replica : ReadPref::Leader;
        std::vector<Job> jobs(1);
        if (!bucket_target(view, tier, static_cast<uint32_t>(bucket), pref, &jobs[0].target))
            jobs[0].target = coordinator_target(view);
        jobs[0].target.buckets = {static_cast<uint32_t>(bucket)};
        jobs[0].sql = query;
        WriteLog log;
        run_jobs(jobs, conninfo_params(), tier, pref, read_only ? Retry::Read : Retry::Write,
                 read_only ? nullptr : &log);
        store_results(fcinfo, jobs);
    });
    return (Datum)0;
}

extern "C" Datum picoroute_exec_all(PG_FUNCTION_ARGS) {
    require_preloaded();
    guarded([&] {
        pg_call([&] { InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC); });
        std::string tier_name = text_argument(fcinfo, 0);
        std::string query = text_argument(fcinfo, 1);
        MapRef map = current_map();
        int32_t tier = tier_or_error(*map.view, map.generation, tier_name);
        std::vector<Target> masters = master_targets(*map.view, tier);
        std::vector<Job> jobs(masters.size());
        for (size_t i = 0; i < masters.size(); i++) {
            jobs[i].target = masters[i];
            jobs[i].sql = query;
        }
        run_jobs(jobs, conninfo_params(), tier, ReadPref::Leader, Retry::Never);
        store_results(fcinfo, jobs);
    });
    return (Datum)0;
}

namespace {

struct PlainRow {
    char *address, *user, *server, *state;
    TimestampTz opened;
    int64 statements;
};

// The cache listing as palloc'd plain data, so that no C++ object is alive while PostgreSQL
// builds the result.
PlainRow *connection_rows(int *count) {
    return guarded([&] {
        std::vector<ConnectionInfo> rows = list_connections();
        int n = static_cast<int>(rows.size());
        PlainRow *plain = nullptr;
        pg_call([&] { plain = static_cast<PlainRow *>(palloc0(sizeof(PlainRow) * (n + 1))); });
        for (int i = 0; i < n; i++) {
            const ConnectionInfo &r = rows[i];
            pg_call([&] {
                plain[i].address = pstrdup(r.address.c_str());
                plain[i].user = pstrdup(r.remote_user.c_str());
                plain[i].server = r.server_name.empty() ? nullptr : pstrdup(r.server_name.c_str());
                plain[i].state = pstrdup(r.state.c_str());
            });
            plain[i].opened = r.opened_at;
            plain[i].statements = static_cast<int64>(r.statements);
        }
        *count = n;
        return plain;
    });
}

}  // namespace

extern "C" Datum picoroute_connections(PG_FUNCTION_ARGS) {
    int n = 0;
    PlainRow *plain = connection_rows(&n);
    InitMaterializedSRF(fcinfo, 0);
    ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
    TimestampTz now = GetCurrentTimestamp();
    for (int i = 0; i < n; i++) {
        Datum values[6];
        bool nulls[6] = {false, false, false, false, false, false};
        values[0] = CStringGetTextDatum(plain[i].address);
        values[1] = CStringGetTextDatum(plain[i].user);
        if (plain[i].server)
            values[2] = CStringGetTextDatum(plain[i].server);
        else
            nulls[2] = true;
        Interval *age = static_cast<Interval *>(palloc0(sizeof(Interval)));
        age->time = now - plain[i].opened;
        values[3] = IntervalPGetDatum(age);
        values[4] = Int64GetDatum(plain[i].statements);
        values[5] = CStringGetTextDatum(plain[i].state);
        tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
    }
    return (Datum)0;
}

extern "C" Datum picoroute_disconnect(PG_FUNCTION_ARGS) {
    text *arg = PG_GETARG_TEXT_PP(0);
    char *address = text_to_cstring(arg);
    if (address[0] == '\0')
        PG_RETURN_INT32(0);
    int closed = guarded([&] { return disconnect(address); });
    PG_RETURN_INT32(closed);
}

extern "C" Datum picoroute_disconnect_all(PG_FUNCTION_ARGS) {
    int closed = guarded([] { return disconnect(std::string()); });
    PG_RETURN_INT32(closed);
}
