// SQL functions of the routing layer:
//   picoroute_exec(tier, bucket_id, query, [params,] read_only) -> SETOF record
//                                                    (the owner of one bucket)
//   picoroute_exec_all(tier, query [, params]) -> SETOF record   (every master of a tier)
//   picoroute_exec_masters(tier, query, params) -> SETOF record
//                    (every master owning buckets, each restricted to them by {buckets})
//   picoroute_connections(), picoroute_disconnect(address), picoroute_disconnect_all()
//
// Parameters are bound as $1, $2, ... in text format (Picodata infers their types from the
// context); a NULL element is sent as NULL. The values never become part of the statement text.
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
#include "catalog/pg_type.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include "core/capabilities.h"
#include "core/session_options.h"
#include "core/routing/text.h"
#include "pg/guard.h"
#include "pg/lookup.h"
#include "pg/map_store.h"
#include "pg/remote/connection.h"
#include "pg/remote/leader_reads.h"
#include "pg/remote/rounds.h"
#include "pg/remote/write_ledger.h"
#include "pg/sql_common.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;
using namespace picoroute::pg::remote;

namespace {

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

// ---- statement text: parameters and placeholders --------------------------------------------

// The parameter value of the $n at q[pos] ("$" already seen), or 0 when q[pos] does not start a
// parameter reference. Values above the protocol's limit are reported as 65536.
int parameter_at(const std::string &q, size_t pos, size_t *end) {
    size_t i = pos + 1;
    long n = 0;
    while (i < q.size() && q[i] >= '0' && q[i] <= '9') {
        n = std::min(n * 10 + (q[i] - '0'), 65536L);
        i++;
    }
    if (i == pos + 1)
        return 0;
    *end = i;
    return static_cast<int>(n);
}

bool identifier_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$' || static_cast<unsigned char>(c) >= 0x80;
}

// "{buckets}" or "{buckets:qualifier}" where picoroute_exec_masters writes each master's filter.
using routing::Placeholder;

// What the statement text holds outside string literals, quoted identifiers and comments.
struct QueryScan {
    int max_param = 0;  // highest $n referenced
    std::vector<Placeholder> placeholders;
};

bool valid_qualifier(const std::string &q) {
    if (q.size() >= 2 && q.front() == '"' && q.back() == '"')
        return q.find('"', 1) == q.size() - 1;
    if (q.empty() || (q[0] >= '0' && q[0] <= '9') || q[0] == '$')
        return false;
    return std::all_of(q.begin(), q.end(), [](char c) { return identifier_char(c) && c != '$'; });
}

[[noreturn]] void bad_placeholder(const std::string &text) {
    throw SqlError(ERRCODE_SYNTAX_ERROR,
                   "picoroute: invalid placeholder \"" + text + "\" in the query", {},
                   "Write {buckets} where the bucket filter of each master goes, or "
                   "{buckets:alias} to qualify bucket_id with a table name or alias.");
}

// Scans the statement as Picodata reads it: '...' literals ('' inside), "..." identifiers,
// -- and /* */ comments. With `placeholders`, every '{' outside them must open a placeholder.
QueryScan scan_query(const std::string &q, bool placeholders) {
    QueryScan scan;
    size_t i = 0;
    while (i < q.size()) {
        char c = q[i];
        if (c == '\'' || c == '"') {
            size_t j = i + 1;
            while (j < q.size()) {
                if (q[j] == c) {
                    if (j + 1 < q.size() && q[j + 1] == c) {
                        j += 2;
                        continue;
                    }
                    break;
                }
                j++;
            }
            i = j + 1;
        } else if (c == '-' && i + 1 < q.size() && q[i + 1] == '-') {
            size_t nl = q.find('\n', i);
            i = nl == std::string::npos ? q.size() : nl + 1;
        } else if (c == '/' && i + 1 < q.size() && q[i + 1] == '*') {
            size_t close = q.find("*/", i + 2);
            i = close == std::string::npos ? q.size() : close + 2;
        } else if (c == '$' && (i == 0 || !identifier_char(q[i - 1]))) {
            size_t end = i + 1;
            int n = parameter_at(q, i, &end);
            scan.max_param = std::max(scan.max_param, n);
            i = end;
        } else if (c == '{' && placeholders) {
            size_t close = q.find('}', i);
            if (close == std::string::npos)
                bad_placeholder(q.substr(i, 40));
            std::string inner = q.substr(i + 1, close - i - 1);
            Placeholder p{i, close + 1, {}};
            if (inner.compare(0, 8, "buckets:") == 0) {
                p.qualifier = inner.substr(8);
                if (!valid_qualifier(p.qualifier))
                    bad_placeholder(q.substr(i, close + 1 - i));
            } else if (inner != "buckets") {
                bad_placeholder(q.substr(i, close + 1 - i));
            }
            scan.placeholders.push_back(std::move(p));
            i = close + 1;
        } else {
            i++;
        }
    }
    return scan;
}

// The number of values must match the highest $n of the statement: Picodata infers the type of
// each parameter from its context, so an unreferenced value could not be bound either.
void check_parameter_count(const QueryScan &scan, size_t nvalues, const char *function) {
    constexpr size_t kMaxParams = 65535;  // the protocol's limit, and Picodata's
    if (nvalues > kMaxParams || scan.max_param > static_cast<int>(kMaxParams))
        throw SqlError(ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                       std::string("picoroute: ") + function + ": too many parameters", {},
                       "A statement takes at most 65535 parameters.");
    if (static_cast<size_t>(scan.max_param) == nvalues)
        return;
    std::string given = std::to_string(nvalues) + (nvalues == 1 ? " value was" : " values were");
    if (static_cast<size_t>(scan.max_param) > nvalues)
        throw SqlError(ERRCODE_UNDEFINED_PARAMETER,
                       std::string("picoroute: ") + function + ": the query refers to $" +
                           std::to_string(scan.max_param) + " but " + given + " given",
                       {},
                       nvalues == 0 ? "Pass the values in a text array after the query, e.g. "
                                      "ARRAY['42', 'abc']; they are bound as $1, $2, ..."
                                    : "Give one value per parameter, $1 first.");
    throw SqlError(
        ERRCODE_INVALID_PARAMETER_VALUE,
        std::string("picoroute: ") + function + ": " + given + " given but the query refers to " +
            (scan.max_param == 0 ? std::string("no parameter")
                                 : "parameters up to $" + std::to_string(scan.max_param)),
        {}, "Give one value per parameter, $1 first; each must appear in the query.");
}

// Argument `argno` of a non-strict function, which must not be NULL.
void require_argument(FunctionCallInfo fcinfo, int argno, const char *name, const char *function) {
    if (PG_ARGISNULL(argno))
        throw SqlError(
            ERRCODE_NULL_VALUE_NOT_ALLOWED,
            std::string("picoroute: ") + function + ": argument " + name + " must not be NULL", {},
            std::string(name) == "params" ? "Pass '{}'::text[] for no parameters." : std::string());
}

// The elements of a one-dimensional text[] argument; std::nullopt for NULL elements.
std::vector<std::optional<std::string>> text_array_argument(FunctionCallInfo fcinfo, int argno,
                                                            const char *function) {
    std::vector<std::optional<std::string>> out;
    int ndim = 0;
    Datum *elems = nullptr;
    bool *nulls = nullptr;
    int n = 0;
    pg_call([&] {
        ArrayType *array = PG_GETARG_ARRAYTYPE_P(argno);
        ndim = ARR_NDIM(array);
        if (ndim <= 1)
            deconstruct_array(array, TEXTOID, -1, false, TYPALIGN_INT, &elems, &nulls, &n);
    });
    if (ndim > 1)
        throw SqlError(
            ERRCODE_ARRAY_SUBSCRIPT_ERROR,
            std::string("picoroute: ") + function + ": params must be a one-dimensional array",
            "It has " + std::to_string(ndim) + " dimensions.",
            "Give the values in order: ARRAY['a', 'b'].");
    out.reserve(n);
    for (int i = 0; i < n; i++) {
        if (nulls[i]) {
            out.emplace_back(std::nullopt);
            continue;
        }
        text *t = reinterpret_cast<text *>(DatumGetPointer(elems[i]));
        out.emplace_back(std::string(VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)));
    }
    return out;
}

// libpq's view of the values: pointers into `values`, nullptr for NULL.
std::vector<const char *> value_pointers(const std::vector<std::optional<std::string>> &values) {
    std::vector<const char *> out;
    out.reserve(values.size());
    for (const auto &v : values)
        out.push_back(v ? v->c_str() : nullptr);
    return out;
}

// ---- the calls --------------------------------------------------------------------------------

// The arguments every exec function reads by name.
struct ExecArgs {
    std::string tier;
    std::string query;
    std::vector<std::optional<std::string>> values;  // of "params"; empty without it
};

// Reads the arguments named in `names` (in argument order): "tier" and "query" as text, "params"
// as a text[]; the others are left to the caller. The forms with params are not strict
// (`check_nulls`): any NULL argument is refused first, naming it. Starts the materialized result.
ExecArgs exec_args(FunctionCallInfo fcinfo, const char *function,
                   std::initializer_list<const char *> names, bool check_nulls) {
    if (check_nulls) {
        int argno = 0;
        for (const char *name : names)
            require_argument(fcinfo, argno++, name, function);
    }
    pg_call([&] { InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC); });
    ExecArgs args;
    int argno = 0;
    for (std::string_view name : names) {
        if (name == "tier")
            args.tier = text_arg(fcinfo, argno);
        else if (name == "query")
            args.query = text_arg(fcinfo, argno);
        else if (name == "params")
            args.values = text_array_argument(fcinfo, argno, function);
        argno++;
    }
    return args;
}

// The credentials of picoroute.conninfo, with a startup read_preference where the cluster's
// version has one (a session that names none takes the cluster's setting, which may be replica):
// "leader", or "any" for a `read_only` call (the replica it is sent to serves it, or the master
// when there is no replica), unless this session learned that reads must be leader reads
// (leader_reads.h). A read_preference in picoroute.conninfo's options is replaced. While no version
// is detected nothing is named, as the foreign tables assume no capability then (a server that is
// not Picodata refuses an unknown startup option).
ConnParams exec_params(bool read_only) {
    ConnParams params = conninfo_params();
    std::optional<std::string> version = current_map().view->cluster_version();
    if (!version || !caps::has(*version, caps::Capability::ReadPreference))
        return params;
    params.read_preference = routing::exec_read_preference(read_only, leader_reads_learned(""));
    bool found = false;
    for (auto &[keyword, value] : params.options)
        if (keyword == "options") {
            value = with_read_preference(value, params.read_preference);
            found = true;
        }
    if (!found)
        params.options.emplace_back("options", startup_options(params.read_preference, false));
    return params;
}

// Runs the query on the owner of `bucket` (see picoroute_exec) and stores the rows.
void exec_on_bucket(FunctionCallInfo fcinfo, const ExecArgs &args, int32 bucket, bool read_only) {
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    int32_t tier = require_tier(view, map.generation, args.tier);
    uint32_t bucket_id = require_bucket_in_range(view, tier, bucket);
    ConnParams params = exec_params(read_only);
    ReadPref pref = routing::exec_read_pref(params.read_preference, read_only);
    std::vector<Job> jobs(1);
    jobs[0].target = point_target(view, tier, bucket_id, pref);
    jobs[0].sql = args.query;
    jobs[0].values = value_pointers(args.values);
    // A write's log lives with the query (write_ledger.h): an error later in it still says what
    // this call committed.
    WriteLog *log = read_only ? nullptr : statement_write_log(fcinfo->flinfo->fn_mcxt);
    run_jobs(jobs, params, args.tier, pref, read_only ? Retry::Read : Retry::Write, log);
    store_results(fcinfo, jobs);
}

// Runs the query on every master of the tier and stores all rows. With `placeholders`, only the
// masters that own buckets run it, each with its {buckets} placeholders filled in.
void exec_on_masters(FunctionCallInfo fcinfo, const ExecArgs &args,
                     const QueryScan *placeholders = nullptr) {
    MapRef map = current_map();
    int32_t tier = require_tier(*map.view, map.generation, args.tier);
    std::vector<Target> masters = master_targets(*map.view, tier);
    std::vector<Job> jobs;
    for (Target &master : masters) {
        if (placeholders != nullptr && master.ranges.empty())
            continue;
        Job job;
        job.sql =
            placeholders != nullptr
                ? routing::fill_placeholders(args.query, placeholders->placeholders, master.ranges)
                : args.query;
        job.target = std::move(master);
        job.values = value_pointers(args.values);
        jobs.push_back(std::move(job));
    }
    run_jobs(jobs, exec_params(false), args.tier, ReadPref::Leader, Retry::Never);
    store_results(fcinfo, jobs);
}

}  // namespace

PICOROUTE_SQL_FUNCTION(picoroute_exec) {
    const char *fn = "picoroute_exec";
    ExecArgs args = exec_args(fcinfo, fn, {"tier", "bucket_id", "query", "read_only"}, true);
    check_parameter_count(scan_query(args.query, false), 0, fn);
    exec_on_bucket(fcinfo, args, PG_GETARG_INT32(1), PG_GETARG_BOOL(3));
    return (Datum)0;
}

PICOROUTE_SQL_FUNCTION(picoroute_exec_params) {
    const char *fn = "picoroute_exec";
    ExecArgs args =
        exec_args(fcinfo, fn, {"tier", "bucket_id", "query", "params", "read_only"}, true);
    check_parameter_count(scan_query(args.query, false), args.values.size(), fn);
    exec_on_bucket(fcinfo, args, PG_GETARG_INT32(1), PG_GETARG_BOOL(4));
    return (Datum)0;
}

PICOROUTE_SQL_FUNCTION(picoroute_exec_all) {
    const char *fn = "picoroute_exec_all";
    ExecArgs args = exec_args(fcinfo, fn, {"tier", "query"}, true);
    check_parameter_count(scan_query(args.query, false), 0, fn);
    exec_on_masters(fcinfo, args);
    return (Datum)0;
}

PICOROUTE_SQL_FUNCTION(picoroute_exec_all_params) {
    const char *fn = "picoroute_exec_all";
    ExecArgs args = exec_args(fcinfo, fn, {"tier", "query", "params"}, true);
    check_parameter_count(scan_query(args.query, false), args.values.size(), fn);
    exec_on_masters(fcinfo, args);
    return (Datum)0;
}

// Every master whose replicaset owns buckets of the tier runs the query with each {buckets}
// placeholder replaced by a condition on its own bucket ranges; a master that owns none gets
// nothing. The conditions of all masters partition 1..bucket_count (master_targets refuses a map
// that does not cover every bucket), and every Picodata instance answers for the whole cluster,
// so each row is read exactly once, even where the map lags a bucket move.
PICOROUTE_SQL_FUNCTION(picoroute_exec_masters) {
    const char *fn = "picoroute_exec_masters";
    ExecArgs args = exec_args(fcinfo, fn, {"tier", "query", "params"}, true);
    QueryScan scan = scan_query(args.query, true);
    if (scan.placeholders.empty())
        throw SqlError(ERRCODE_SYNTAX_ERROR,
                       "picoroute: picoroute_exec_masters: the query has no {buckets} "
                       "placeholder",
                       "Without it every master would answer for the whole cluster and "
                       "each row would come back once per master.",
                       "Write the placeholder as a condition: ... WHERE {buckets}, or "
                       "... AND {buckets:alias} in a join.");
    check_parameter_count(scan, args.values.size(), fn);
    exec_on_masters(fcinfo, args, &scan);
    return (Datum)0;
}

// The connection cache of this backend, one row per connection. PostgreSQL builds the rows from
// the listing's strings without creating any C++ object.
PICOROUTE_SQL_FUNCTION(picoroute_connections) {
    std::vector<ConnectionInfo> rows = list_connections();
    pg_call([&] {
        InitMaterializedSRF(fcinfo, 0);
        ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
        TimestampTz now = GetCurrentTimestamp();
        for (const ConnectionInfo &r : rows) {
            Datum values[6];
            bool nulls[6] = {false, false, false, false, false, false};
            values[0] = CStringGetTextDatum(r.address.c_str());
            values[1] = CStringGetTextDatum(r.remote_user.c_str());
            if (!r.server_name.empty())
                values[2] = CStringGetTextDatum(r.server_name.c_str());
            else
                nulls[2] = true;
            Interval *age = static_cast<Interval *>(palloc0(sizeof(Interval)));
            age->time = now - r.opened_at;
            values[3] = IntervalPGetDatum(age);
            values[4] = Int64GetDatum(static_cast<int64>(r.statements));
            values[5] = CStringGetTextDatum(r.state.c_str());
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        }
    });
    return (Datum)0;
}

PICOROUTE_SQL_FUNCTION(picoroute_disconnect) {
    std::string address(text_arg(fcinfo, 0));
    PG_RETURN_INT32(address.empty() ? 0 : disconnect(address));
}

PICOROUTE_SQL_FUNCTION(picoroute_disconnect_all) {
    PG_RETURN_INT32(disconnect(std::string()));
}
