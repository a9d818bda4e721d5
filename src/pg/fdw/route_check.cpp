// The route check of a foreign table (what and why: core/route_check.h; where verdicts live:
// pg/route_checks.h). Before keys of a table are routed by the bucket picoroute computes, one
// online master of the table's tier is asked to EXPLAIN a statement that fixes a sample key:
//
//     EXPLAIN SELECT "k1" FROM "t" WHERE ("k1" = <value>) AND ("k2" = <value>)
//
// once with each value written as the deparser writes a constant of its type (a literal, or a
// parameter for types Picodata takes no literal of: what a scan with constants sends) and once
// with every value as a text parameter, bound as every other parameter is (what lookups per outer
// row, batched joins, key arrays, prepared statements and INSERT rows send), on a connection of
// the user mapping the statements use. picoroute's bucket of the same values comes from the same
// code that routes them (key_datum.h, the table's hashing rule). Picodata's EXPLAIN binds the
// parameters before it computes the buckets (ExecutingQuery::as_explain on the bound statement,
// sql-planner/src/ir/explain.rs and the test test_query_explain_16 at 25.5.10; at 26.3.0
// bind_params, sql-ir/src/ir/api/parameter.rs:34, turns each parameter into a constant of the
// bound value before dispatch_bound_statement_impl, src/sql.rs, explains the statement) and
// answers in one text column, one row per line
// (port_read_explain in src/pgproto/backend/storage.rs at 25.5.10, ExplainIter at 26.3.0; the
// column is "QUERY PLAN" up to 26.2.0, "EXPLAIN" from 26.2.1-rc1, src/pgproto/backend/describe.rs).
// A keyed SELECT is what is asked at every version: an INSERT ... VALUES says "buckets = unknown"
// before the 26.1 series (26.1.0 tag; a segment motion, can_estimate_buckets in
// sql-planner/src/ir/explain/execution_info.rs at 25.5.10) and INSERT rows are bound as text
// parameters typed by their column, as the SELECT's parameters are.
extern "C" {
#include "postgres.h"

#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "utils/timestamp.h"
#include "nodes/makefuncs.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
}

#include "core/remote_text.h"
#include "core/route_check.h"
#include "pg/fdw/deparse.h"
#include "pg/fdw/dialect.h"
#include "pg/fdw/options.h"
#include "pg/fdw/route_check.h"
#include "pg/fdw/table_cache.h"
#include "pg/guard.h"
#include "pg/key_datum.h"
#include "pg/libpq_io.h"
#include "pg/map_store.h"
#include "pg/remote/connection.h"
#include "pg/remote/leader_reads.h"
#include "pg/remote/rounds.h"
#include "pg/lookup.h"
#include "pg/route_checks.h"
#include "pg/sql_common.h"
#include "pg/stats/connections.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace picoroute::pg::fdw {

namespace {

using route_check::Outcome;
using route_check::State;

// The time the EXPLAIN statements of one check may take together, once connected (the connection
// itself is bounded by picoroute.connect_timeout).
constexpr int kCheckAnswerMs = 3000;
// The most bytes of a check's detail (a remote error may be megabytes long).
constexpr size_t kDetailMax = 300;

struct KeyColumn {
    std::string name;  // the remote column, quoted
    Oid type;          // the type of the values routed
    int32 typmod;      // the column's (a numeric is hashed with its scale)
    Oid collation;
};

std::vector<KeyColumn> key_columns(const TableInfo *t, const Oid *types) {
    std::vector<KeyColumn> out;
    for (int k = 0; k < t->nkeys; k++) {
        const char *name = nullptr;
        Oid type = InvalidOid, collation = InvalidOid;
        int32 typmod = -1;
        pg_call([&] {
            name = quote_remote_identifier(get_attname(t->relid, t->key_attnums[k], false));
            get_atttypetypmodcoll(t->relid, t->key_attnums[k], &type, &typmod, &collation);
        });
        out.push_back({name, types[k], types[k] == NUMERICOID ? typmod : -1, collation});
    }
    return out;
}

// The values of one sample key, made by each type's input function (a numeric then gets the
// column's scale, as evaluate_keys gives a key value).
std::vector<Datum> sample_datums(const std::vector<KeyColumn> &columns,
                                 const std::vector<std::string> &texts) {
    std::vector<Datum> out(columns.size());
    for (size_t i = 0; i < columns.size(); i++) {
        const char *text = texts[i].c_str();
        const KeyColumn &c = columns[i];
        Datum *value = &out[i];
        pg_call([&] {
            Oid input, ioparam;
            getTypeInputInfo(c.type, &input, &ioparam);
            *value = OidInputFunctionCall(input, const_cast<char *>(text), ioparam, -1);
            if (c.type == NUMERICOID)
                *value = numeric_to_typmod(*value, c.typmod);
        });
    }
    return out;
}

// The text a value is bound as, written with the fixed settings parameters are written with.
std::string param_text(Oid type, Datum value) {
    char *text = nullptr;
    pg_call([&] {
        Oid output;
        bool varlena;
        getTypeOutputInfo(type, &output, &varlena);
        int nestlevel = output_needs_transmission_modes(type) ? set_transmission_modes() : -1;
        text = OidOutputFunctionCall(output, value);
        if (nestlevel >= 0)
            reset_transmission_modes(nestlevel);
    });
    return text;
}

struct ExplainStatement {
    std::string sql;
    std::vector<std::string> values;  // $1.. as text
    const char *form;                 // "literal" or "parameter"
};

// The condition on each key column: as the deparser writes the constant (`literal`), or $n.
ExplainStatement check_statement(const TableInfo *t, const std::vector<KeyColumn> &columns,
                                 const std::vector<Datum> &values, bool literal) {
    ExplainStatement out;
    out.form = literal ? "literal" : "parameter";
    std::string where;
    for (size_t i = 0; i < columns.size(); i++) {
        const KeyColumn &c = columns[i];
        std::string value;
        if (literal) {
            char *text = nullptr;
            int nparams = static_cast<int>(out.values.size());
            List *params = NIL;
            pg_call([&] {
                int16 len;
                bool byval;
                get_typlenbyval(c.type, &len, &byval);
                Const *constant = makeConst(c.type, -1, c.collation, len, values[i], false, byval);
                // The deparser numbers its parameters from 1: shift them after the ones before.
                for (int p = 0; p < nparams; p++)
                    params = lappend(params, makeNullConst(INT4OID, -1, InvalidOid));
                StringInfoData buf;
                initStringInfo(&buf);
                deparse_constant(&buf, t->relid, constant, &params);
                text = buf.data;
            });
            value = text;
            if (list_length(params) > nparams)
                out.values.push_back(param_text(c.type, values[i]));
        } else {
            out.values.push_back(param_text(c.type, values[i]));
            value = "$" + std::to_string(out.values.size());
        }
        where += (i > 0 ? " AND (" : "(") + c.name + " = " + value + ")";
    }
    out.sql = "EXPLAIN SELECT " + columns[0].name + " FROM " +
              quote_remote_identifier(t->remote_table) + " WHERE " + where;
    return out;
}

// A connection of its own for one check (the session's cached ones may be busy with a scan), every
// answer awaited until one deadline. It takes its place under
// picoroute.max_connections_per_instance as a cached connection does (closing an idle one of this
// session to the instance, or waiting), and is listed in picoroute_stat_connections while it is
// open.
class CheckConnection {
  public:
    CheckConnection(const std::string &address, const ConnParams &params) : address_(address) {
        stats::Admission admission(address_, [&] { return disconnect(address_) > 0; });
        conn_ = open_connection(address_, params);
        admission.opened(this, PQuser(conn_) ? PQuser(conn_) : "", params.server_name,
                         GetCurrentTimestamp());
        deadline_ = deadline_in(kCheckAnswerMs);
    }
    ~CheckConnection() {
        stats::connection_closed(this);
        PQfinish(conn_);
    }
    CheckConnection(const CheckConnection &) = delete;
    CheckConnection &operator=(const CheckConnection &) = delete;

    // The rows of the answer's first column; throws a std::runtime_error naming what failed.
    std::vector<std::string> explain(const ExplainStatement &st);

  private:
    std::string address_;
    PGconn *conn_ = nullptr;
    TimestampTz deadline_ = 0;
    uint64_t statements_ = 0;
};

std::vector<std::string> CheckConnection::explain(const ExplainStatement &st) {
    std::vector<const char *> values;
    for (const std::string &v : st.values)
        values.push_back(v.c_str());
    if (!PQsendQueryParams(conn_, st.sql.c_str(), static_cast<int>(values.size()), nullptr,
                           values.data(), nullptr, nullptr, 0))
        throw std::runtime_error(libpq_message(PQerrorMessage(conn_)));
    stats::connection_state(this, true, PQTRANS_ACTIVE, ++statements_, 0);
    Waiter waiter{conn_, latch_checks_interrupts, deadline_, nullptr};
    ResultPtr last;
    IoOutcome outcome = flush_output(waiter);
    if (outcome == IoOutcome::Done)
        outcome = read_last_result(waiter, last);
    if (outcome == IoOutcome::Timeout)
        throw std::runtime_error("no answer from " + address_ + " within " +
                                 std::to_string(kCheckAnswerMs) + " ms");
    if (last != nullptr && is_copy_result(last.get()))
        throw std::runtime_error(address_ + " answered with a COPY state");
    if (outcome != IoOutcome::Done || last == nullptr)
        throw std::runtime_error(address_ + ": " + libpq_message(PQerrorMessage(conn_)));
    if (PQresultStatus(last.get()) != PGRES_TUPLES_OK)
        throw std::runtime_error(address_ + " refused " + st.sql + ": " +
                                 libpq_message(PQresultErrorMessage(last.get())));
    stats::connection_state(this, false, PQtransactionStatus(conn_), statements_, 0);
    std::vector<std::string> rows;
    for (int r = 0; r < PQntuples(last.get()); r++)
        rows.emplace_back(PQnfields(last.get()) > 0 ? PQgetvalue(last.get(), r, 0) : "");
    return rows;
}

struct CheckTarget {
    const TableInfo *table;
    const Oid *types;  // of the key values, one per key column
    std::vector<std::string> picodata_types;
    Oid userid;
};

// Asks the cluster about each sample key in both forms; the first disagreement or inconclusive
// answer ends the check.
CheckResult run_check(const CheckTarget &c) {
    CheckResult result;
    MapRef map = current_map();
    int32_t tier = require_tier(*map.view, map.generation, c.table->tier);
    uint32_t bucket_count = map.view->tier(tier).bucket_count;
    if (bucket_count == 0)
        throw std::runtime_error("the bucket count of tier \"" + std::string(c.table->tier) +
                                 "\" is not known yet");
    Target target = spread_target(*map.view, tier, ReadPref::Leader, false);
    CheckConnection conn(target.address, conn_params_for(c.table->serverid, c.userid));
    std::vector<KeyColumn> columns = key_columns(c.table, c.types);
    std::vector<Oid> types(c.types, c.types + columns.size());
    std::unique_ptr<bool[]> nulls(new bool[types.size() + 1]());
    CheckResult first;  // what the view shows of an agreement: the first sample
    for (const std::vector<std::string> &sample : route_check::key_samples(c.picodata_types)) {
        std::vector<Datum> values = sample_datums(columns, sample);
        uint32_t ours = key_bucket(static_cast<int>(types.size()), types.data(), values.data(),
                                   nulls.get(), bucket_count, c.table->hash_rule);
        result.sample = route_check::format_sample(c.picodata_types, sample);
        result.picoroute_bucket = ours;
        std::vector<ExplainStatement> statements = {
            check_statement(c.table, columns, values, true),
            check_statement(c.table, columns, values, false)};
        if (statements[0].sql == statements[1].sql)
            statements.pop_back();  // every value already goes as a parameter
        for (const ExplainStatement &st : statements) {
            route_check::ExplainBuckets answer =
                route_check::parse_explain_buckets(conn.explain(st));
            route_check::Judgement j = route_check::judge(answer, ours);
            result.picodata_bucket = j.picodata_bucket.value_or(0);
            result.detail = std::string(st.form) +
                            " key: " + (j.outcome == Outcome::Agreed ? answer.line : j.reason);
            if (j.outcome == Outcome::Agreed)
                continue;
            result.state = j.outcome == Outcome::Disagreed ? State::Disagreed : State::Unknown;
            return result;
        }
        if (first.sample.empty())
            first = result;
    }
    if (first.sample.empty())
        throw std::runtime_error("no sample key for the key types " +
                                 route_check::signature_text(c.picodata_types));
    first.state = State::Agreed;
    return first;
}

std::string qualified_name(Oid relid) {
    const char *name = nullptr;
    pg_call([&] {
        name = quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
                                          get_rel_name(relid));
    });
    return name;
}

// The check, run and recorded. A check that cannot run is recorded as unknown (retried later);
// an interrupt (a cancel, statement_timeout) still ends the statement.
CheckResult check_and_record(const CheckTarget &c, const CheckTicket &ticket) {
    CheckResult result;
    try {
        result = run_check(c);
    } catch (const PgError &e) {
        result.state = State::Unknown;
        result.detail = e.what();
        if (is_local_interrupt(e)) {
            result.detail = bounded_utf8(result.detail, kDetailMax);
            result.table = qualified_name(c.table->relid);
            record_check(ticket, result);
            throw;
        }
    } catch (const ConnectionFailure &e) {
        result.state = State::Unknown;
        result.detail = e.address() + ": " + e.what();
    } catch (const std::exception &e) {
        result.state = State::Unknown;
        result.detail = e.what();
    }
    // A remote text: valid UTF-8, and short enough for the view and one log line.
    result.detail = bounded_utf8(result.detail, kDetailMax);
    result.table = qualified_name(c.table->relid);
    record_check(ticket, result);
    return result;
}

// The one WARNING of a disagreement (the backend that found it), and a LOG line for a check that
// did not conclude.
void report(const CheckTarget &c, const CheckKey &key, const CheckResult &r) {
    std::string version = key.version.empty() ? "(version not detected)" : key.version;
    std::string types = key.signature;
    if (r.state == State::Disagreed) {
        std::string message = "picoroute: Picodata " + version + " hashes the sharding key (" +
                              types + ") of foreign table " + r.table +
                              " differently from picoroute";
        std::string detail =
            "Key " + r.sample + ": Picodata's bucket " +
            (r.picodata_bucket > 0 ? std::to_string(r.picodata_bucket) : std::string("-")) + " (" +
            r.detail + "), picoroute's bucket " + std::to_string(r.picoroute_bucket) +
            " (hashed by the rule of Picodata " + hash_rule_name(c.table->hash_rule) + ").";
        pg_call([&] {
            ereport(WARNING, (errcode(ERRCODE_FDW_INCONSISTENT_DESCRIPTOR_INFORMATION),
                              errmsg("%s", message.c_str()), errdetail("%s", detail.c_str()),
                              errhint("Statements of this table that fix its sharding key go "
                                      "through a coordinator, which routes them by Picodata's "
                                      "own hashing. See the view picoroute_route_checks.")));
        });
    } else if (r.state == State::Unknown) {
        std::string message = "picoroute: the route check of foreign table " + r.table + " (" +
                              types + ", Picodata " + version + ") did not conclude: " + r.detail;
        pg_call([&] { ereport(LOG, (errmsg("%s", message.c_str()))); });
    }
}

// Where each table's key verdict was last found (by map generation, double rule and key types):
// while the map and the types stay, a statement reads that entry's word and nothing else.
struct Memo {
    uint64_t generation = 0;
    uint8_t rule = 0;
    std::vector<Oid> types;
    CheckTicket entry;
};

std::unordered_map<Oid, Memo> &memos() {
    static std::unordered_map<Oid, Memo> memo;
    return memo;
}

KeyRoute route_of(CheckStep step) {
    return step == CheckStep::ThroughCoordinator ? KeyRoute::Coordinator : KeyRoute::ByBucket;
}

void warn_full(const TableInfo *t) {
    static std::set<Oid> warned;
    if (!warned.insert(t->relid).second)
        return;
    std::string message =
        "picoroute: the table of route checks is full (picoroute.max_route_checks = " +
        std::to_string(route_checks_capacity()) + "): keyed statements of foreign table " +
        qualified_name(t->relid) + " are routed by picoroute's bucket unchecked";
    pg_call([&] {
        ereport(WARNING,
                (errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED), errmsg("%s", message.c_str()),
                 errhint("Raise picoroute.max_route_checks and restart the server.")));
    });
}

}  // namespace

KeyRoute key_route(const TableInfo *table, const Oid *types, int ntypes, Oid userid,
                   bool may_check) {
    if (!setting_route_check || table->global || ntypes != table->nkeys || ntypes == 0)
        return KeyRoute::ByBucket;
    uint64_t generation = published_generation();
    auto rule = static_cast<uint8_t>(table->hash_rule);
    auto memo = memos().find(table->relid);
    if (memo != memos().end() && memo->second.generation == generation &&
        memo->second.rule == rule && memo->second.types.size() == static_cast<size_t>(ntypes) &&
        std::equal(types, types + ntypes, memo->second.types.begin()))
        if (std::optional<CheckStep> step = entry_step(memo->second.entry, may_check))
            return route_of(*step);
    CheckTarget c{table, types, {}, userid};
    for (int i = 0; i < ntypes; i++) {
        const KeyType *kt = find_key_type(types[i]);
        if (kt == nullptr || kt->hash_class == HashClass::None)
            return KeyRoute::ByBucket;  // not hashed here: nothing to check
        c.picodata_types.push_back(kt->picodata_type);
    }
    CheckKey key;
    key.relid = table->relid;
    key.rule = rule;
    key.signature = route_check::signature_text(c.picodata_types);
    key.version = current_map().view->cluster_version().value_or("");
    CheckTicket ticket, entry;
    CheckStep step = consult_check(key, may_check, &ticket, &entry);
    memos()[table->relid] = Memo{generation, rule, std::vector<Oid>(types, types + ntypes), entry};
    switch (step) {
        case CheckStep::ByBucket:
            return KeyRoute::ByBucket;
        case CheckStep::ThroughCoordinator:
            return KeyRoute::Coordinator;
        case CheckStep::Full:
            warn_full(table);
            return KeyRoute::ByBucket;
        case CheckStep::Check:
            break;
    }
    CheckResult result = check_and_record(c, ticket);
    report(c, key, result);
    return result.state == State::Disagreed ? KeyRoute::Coordinator : KeyRoute::ByBucket;
}

}  // namespace picoroute::pg::fdw
