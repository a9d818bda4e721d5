// The routed statement shared by scans, pushed joins and upper relations, and direct
// modifications: its parameters and key values evaluated per execution, the routing decision (the
// owner of each bucket the key gives; a global table, a scatter through a coordinator or over
// every master otherwise), the statement as each target gets it, and its execution (whole answers
// or a stream) through the remote layer; the routing EXPLAIN shows (its lines: routed_explain.cpp).
//
// A bucket picoroute computes decides where a statement goes, never which rows it sees: a statement
// that fixes the sharding key is sent as written, without a bucket_id term (Picodata routes it by
// its key; a bucket computed differently would otherwise make it read nothing and change nothing),
// so one text, prepared once per connection, serves every key. Only a master of a 'masters'
// scatter gets a bucket filter, the list of its own buckets (core/routing/target.h). The buckets
// are computed at execution time from constants and parameter values, so a prepared statement goes
// where the map of the moment it runs says.
extern "C" {
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

#include "core/bucket_hash.h"
#include "core/capabilities.h"
#include "core/routing/grouping.h"
#include "core/routing/statement.h"
#include "core/routing/text.h"
#include "pg/fdw/chunked.h"
#include "pg/fdw/dialect.h"
#include "pg/fdw/keys.h"
#include "pg/fdw/options.h"
#include "pg/fdw/plan_private.h"
#include "pg/fdw/route_check.h"
#include "pg/fdw/routed.h"
#include "pg/fdw/table_cache.h"
#include "pg/guard.h"
#include "pg/key_datum.h"
#include "pg/map_store.h"
#include "pg/remote/connection.h"
#include "pg/remote/leader_reads.h"
#include "pg/remote/rounds.h"
#include "pg/lookup.h"
#include "pg/remote/stream.h"
#include "pg/sql_common.h"

#include <algorithm>
#include <memory>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace picoroute::pg::fdw {

namespace {

void cleanup_results(void *arg) {
    release_results(static_cast<RoutedStatement *>(arg));
}

// Text values of the $n parameters, written in Picodata's format whatever the session's
// DateStyle or extra_float_digits (plain: may ereport). The values are computed first, under the
// session's settings (an InitPlan may run here), and only their output uses the fixed ones.
const char **evaluate_params(RoutedStatement *st, ExprContext *econtext) {
    const char **values =
        static_cast<const char **>(palloc0(sizeof(char *) * (st->statement->plan.nparams + 1)));
    Datum *datums =
        static_cast<Datum *>(palloc0(sizeof(Datum) * (st->statement->plan.nparams + 1)));
    bool *nulls = static_cast<bool *>(palloc0(sizeof(bool) * (st->statement->plan.nparams + 1)));
    int n = 0;
    ListCell *lc;
    foreach (lc, st->params.states) {
        ExprState *es = static_cast<ExprState *>(lfirst(lc));
        datums[n] = ExecEvalExpr(es, econtext, &nulls[n]);
        if (!nulls[n] && st->params.typmods[n] >= 0)
            datums[n] = numeric_to_typmod(datums[n], st->params.typmods[n]);
        n++;
    }
    if (n == 0)
        return values;
    int nestlevel = st->params.need_modes ? set_transmission_modes() : -1;
    for (int i = 0; i < n; i++) {
        char *text = nulls[i] ? nullptr : OutputFunctionCall(&st->params.out[i], datums[i]);
        if (text != nullptr && st->params.trim[i])
            trim_trailing_blanks(text);
        values[i] = text;
    }
    if (nestlevel >= 0)
        reset_transmission_modes(nestlevel);
    return values;
}

// The sharding-key values of one execution as the core's decision takes them: each value is
// encoded (add_key_datum) only when the decision hashes it.
routing::KeyValues core_key_values(RoutedStatement *st, KeyValues *keys) {
    routing::KeyValues out;
    int nkeys = list_length(st->statement->plan.key_kinds);
    for (int i = 0; i < nkeys; i++)
        out.counts.push_back(static_cast<size_t>(keys[i].n));
    HashRule rule = st->setup->table->hash_rule;
    out.encode = [keys, rule](size_t column, size_t index) {
        KeyEncoder encoder(rule);
        add_key_datum(encoder, keys[column].type, keys[column].values[index],
                      keys[column].nulls[index]);
        return encoder.bytes();
    };
    return out;
}

// Whether Picodata hashes the key values of `keys` differently from picoroute (the route check,
// route_check.cpp; with `may_check` it runs when none is recorded). C++: inside guarded().
bool key_disagrees(RoutedStatement *st, KeyValues *keys, bool may_check) {
    int nkeys = list_length(st->statement->plan.key_kinds);
    Oid few[8];  // the usual key, without an allocation per statement
    std::vector<Oid> many(nkeys > 8 ? static_cast<size_t>(nkeys) : 0);
    Oid *types = nkeys > 8 ? many.data() : few;
    for (int i = 0; i < nkeys; i++)
        types[i] = keys[i].type;
    Oid userid = OidIsValid(st->setup->userid) ? st->setup->userid : GetUserId();
    return key_route(st->setup->table, types, nkeys, userid, may_check) == KeyRoute::Coordinator;
}

// The routing decision (core/routing/statement.h): targets, retry policy and, when `describe`, a
// description (C++: inside guarded()). *keyless tells whether the statement goes out without a
// sharding key (scatter, global table).
std::vector<Target> decide_targets(RoutedStatement *st, KeyValues *keys, int32_t *tier_out,
                                   Retry *retry, std::string *description, bool *keyless,
                                   bool describe = true, bool may_check = true) {
    TableInfo *t = st->setup->table;
    // Before the map is read: a check may read a newer map, which replaces this backend's copy.
    bool disagrees = keys != nullptr && !t->global && key_disagrees(st, keys, may_check);
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    int32_t tier = require_tier(view, map.generation, t->tier);
    *tier_out = tier;
    routing::StatementInfo info;
    info.global = t->global;
    info.write = st->statement->is_write;
    info.read_pref = table_read_pref(t);
    info.scatter_masters = static_cast<Scatter>(t->scatter) == Scatter::Masters;
    info.prune_by_bucket_id = t->capabilities.has(caps::Capability::PruneByBucketId);
    info.where_chains = st->statement->plan.where_chains > 0
                            ? static_cast<size_t>(st->statement->plan.where_chains)
                            : 1;
    info.tier = t->tier;
    info.bucket_count = view.tier(tier).bucket_count;
    info.describe = describe;
    if (keys != nullptr)
        info.keys = core_key_values(st, keys);
    info.hashing_disagrees = disagrees;
    routing::StatementLookups lookups;
    lookups.spread = [&](ReadPref pref, bool write) {
        return spread_target(view, tier, pref, write);
    };
    lookups.masters = [&] { return master_targets(view, tier); };
    lookups.group = [&](const std::set<uint32_t> &buckets, ReadPref pref) {
        return group_buckets(view, tier, buckets, pref);
    };
    routing::StatementRoute route = routing::route_statement(info, lookups);
    *retry = route.retry;
    *keyless = route.keyless;
    *description = std::move(route.description);
    return std::move(route.targets);
}

// The statement as sent to `target` (routing::text_for): a master's bucket filter (a 'masters'
// scatter only), the pushed tail, the scan's LIMIT, then the OPTION clause (always last).
std::string statement_for(RoutedStatement *st, const Target &target, bool keyless) {
    routing::StatementText text;
    text.sql = st->statement->plan.sql;
    text.has_where = st->statement->plan.has_where;
    if (st->statement->bucket_column != nullptr)
        text.column = st->statement->bucket_column;
    if (st->statement->tail != nullptr)
        text.tail = st->statement->tail;
    text.row_limit = st->statement->row_limit;
    text.option = option_clause(st->setup->table, keyless, !st->statement->is_write);
    return routing::text_for(text, target);
}

void save_description(RoutedStatement *st, const std::string &description) {
    MemoryContext cxt = GetMemoryChunkContext(st);
    pg_call([&] {
        if (st->last.routing != nullptr)  // a rescan's previous decision
            pfree(st->last.routing);
        st->last.routing = MemoryContextStrdup(cxt, description.c_str());
    });
}

// The jobs of one execution: the routing decision (saved for EXPLAIN ANALYZE and errors), each
// target's statement as sent and the parameter values (C++: inside guarded()). Shared by
// execute_routed and stream_routed.
std::vector<Job> routed_jobs(RoutedStatement *st, KeyValues *keys, const char **values,
                             Retry *retry) {
    std::string description;
    bool keyless = true;
    int32_t tier = kNone;  // an index into the map of the decision only
    std::vector<Target> targets =
        decide_targets(st, keys, &tier, retry, &description, &keyless, st->setup->describe);
    if (st->setup->describe)
        save_description(st, description);
    std::vector<Job> jobs(targets.size());
    for (size_t i = 0; i < targets.size(); i++) {
        jobs[i].sql = statement_for(st, targets[i], keyless);
        jobs[i].values.assign(values, values + st->statement->plan.nparams);
        jobs[i].may_span = st->statement->is_write && !st->setup->table->global &&
                           !one_replicaset(targets[i], st->setup->table->tier);
        jobs[i].sharded = !st->setup->table->global;
        jobs[i].table = st->setup->table->relid;
        jobs[i].target = std::move(targets[i]);
    }
    st->last.keyless = keyless;
    return jobs;
}

// A batch's keys grouped by the instance their bucket's routing gives (routing::group_by_owner:
// the grouping of INSERT rows too, so a key list never needs a second hop), at most b.max_keys per
// statement (routing::key_slices). A key Picodata hashes differently, a global table or a tier
// without buckets send every key to one coordinator of the tier (C++: inside guarded()).
std::vector<Job> batched_jobs(RoutedStatement *st, const BatchedLookup &b, KeyValues *keys,
                              const char **key_texts) {
    TableInfo *t = st->setup->table;
    // Before the map is read: a check may read a newer map, which replaces this backend's copy.
    bool coordinator = t->global || key_disagrees(st, keys, true);
    MapRef map = current_map();
    const SnapshotView &view = *map.view;
    int32_t tier = require_tier(view, map.generation, t->tier);
    uint32_t count = view.tier(tier).bucket_count;
    coordinator = coordinator || count == 0;
    std::vector<routing::Group> groups = routing::group_by_owner(
        keys->n,
        [&](int i) -> std::optional<uint32_t> {
            if (coordinator)
                return std::nullopt;
            KeyEncoder encoder(t->hash_rule);
            add_key_datum(encoder, keys->type, keys->values[i], keys->nulls[i]);
            return bucket_id_for_bytes(encoder.bytes(), count);
        },
        owner_lookups(view, tier, table_read_pref(t), coordinator));
    // A batch reads as many rows as a small scan: the row and instruction limits are lifted,
    // unless the table or server gives them (see pg/batch_join/executor.cpp).
    std::string option = option_clause(t, true, false);
    std::vector<Job> jobs;
    for (const routing::Group &group : groups) {
        for (const routing::KeySlice &slice :
             routing::key_slices(group.members.size(), static_cast<size_t>(b.max_keys))) {
            Job job;
            job.target = group.target;
            job.sharded = !t->global;
            job.table = t->relid;
            job.sql =
                routing::key_list_text(b.base, b.has_where, b.column, b.ncond + 1, slice.padded) +
                option;
            job.values.assign(b.cond_values, b.cond_values + b.ncond);
            for (size_t k = 0; k < slice.padded; k++)
                job.values.push_back(
                    key_texts[group.members[slice.from + std::min(k, slice.n - 1)]]);
            jobs.push_back(std::move(job));
        }
    }
    return jobs;
}

}  // namespace

const char **evaluate_routed_params(RoutedStatement *st, ExprContext *econtext) {
    return evaluate_params(st, econtext);
}

int execute_batched(RoutedStatement *st, const BatchedLookup &b, KeyValues *keys,
                    const char **key_texts) {
    release_results(st);
    if (keys->n == 0)
        return 0;
    Oid userid = OidIsValid(st->setup->userid) ? st->setup->userid : GetUserId();
    return guarded([&] {
        std::vector<Job> jobs = batched_jobs(st, b, keys, key_texts);
        std::set<std::string> owners;
        for (const Job &job : jobs)
            owners.insert(job.target.address);
        save_description(st, std::to_string(keys->n) + " keys: " + std::to_string(jobs.size()) +
                                 " statements to " + std::to_string(owners.size()) +
                                 " instances, by the key's bucket");
        if (jobs.empty())
            return 0;
        run_jobs(jobs, read_conn_params(st->setup->table, userid), st->setup->table->tier,
                 table_read_pref(st->setup->table), Retry::Read);
        MemoryContext cxt = GetMemoryChunkContext(st);
        pg_call([&] {
            if (st->answers.results != nullptr)
                pfree(st->answers.results);
            st->answers.results = static_cast<PGresult **>(
                MemoryContextAllocZero(cxt, sizeof(PGresult *) * jobs.size()));
        });
        for (size_t i = 0; i < jobs.size(); i++)
            st->answers.results[i] = jobs[i].result.release();
        st->answers.nresults = static_cast<int>(jobs.size());
        return static_cast<int>(jobs.size());
    });
}

RoutedStatement *new_routed_statement(MemoryContext parent, const RoutedSetup &setup,
                                      const RemoteStatement &statement) {
    MemoryContext cxt = AllocSetContextCreate(parent, "picoroute statement", ALLOCSET_SMALL_SIZES);
    RoutedStatement *st =
        new (MemoryContextAllocZero(cxt, sizeof(RoutedStatement))) RoutedStatement{};
    st->statement =
        new (MemoryContextAlloc(cxt, sizeof(RemoteStatement))) RemoteStatement(statement);
    st->setup = new (MemoryContextAlloc(cxt, sizeof(RoutedSetup))) RoutedSetup(setup);
    st->cleanup.func = cleanup_results;
    st->cleanup.arg = st;
    MemoryContextRegisterResetCallback(cxt, &st->cleanup);
    return st;
}

RoutedStatement *init_routed_statement(PlanState *ps, RoutedSetup setup,
                                       const RemoteStatement &statement, List *exprs) {
    setup.describe = ps->state->es_instrument != 0;
    RoutedStatement *st = new_routed_statement(ps->state->es_query_cxt, setup, statement);
    int nparams = statement.plan.nparams;
    TableInfo *table = setup.table;
    List *param_exprs = list_copy_head(exprs, nparams);
    List *key_exprs = list_copy_tail(exprs, nparams);
    st->params.states = ExecInitExprList(param_exprs, ps);
    st->keys.states = ExecInitExprList(key_exprs, ps);
    st->params.out = static_cast<FmgrInfo *>(palloc0(sizeof(FmgrInfo) * (nparams + 1)));
    st->params.typmods = static_cast<int32 *>(palloc0(sizeof(int32) * (nparams + 1)));
    st->params.trim = static_cast<bool *>(palloc0(sizeof(bool) * (nparams + 1)));
    int i = 0;
    ListCell *lc;
    foreach (lc, param_exprs) {
        Node *expr = static_cast<Node *>(lfirst(lc));
        Oid out;
        bool varlena;
        getTypeOutputInfo(exprType(expr), &out, &varlena);
        // A parameter compared with a numeric(p,s) column is marked by the deparser (see
        // with_column_scale): its value gets the column's scale.
        st->params.typmods[i] = IsA(expr, RelabelType) && exprType(expr) == NUMERICOID
                                    ? reinterpret_cast<RelabelType *>(expr)->resulttypmod
                                    : -1;
        if (output_needs_transmission_modes(exprType(expr)))
            st->params.need_modes = true;
        st->params.trim[i] = exprType(expr) == BPCHAROID;
        fmgr_info(out, &st->params.out[i++]);
    }
    int nkeys = list_length(statement.plan.key_kinds);
    st->keys.types = static_cast<Oid *>(palloc0(sizeof(Oid) * (nkeys + 1)));
    st->keys.typmods = static_cast<int32 *>(palloc0(sizeof(int32) * (nkeys + 1)));
    // The scanned relation's descriptor has the key columns' types: no catalog lookup per
    // execution.
    bool own_rel = setup.rel != nullptr && RelationGetRelid(setup.rel) == table->relid;
    for (int k = 0; k < nkeys && k < table->nkeys; k++) {
        if (own_rel) {
            Form_pg_attribute att =
                TupleDescAttr(RelationGetDescr(setup.rel), table->key_attnums[k] - 1);
            st->keys.types[k] = att->atttypid;
            st->keys.typmods[k] = att->atttypmod;
            continue;
        }
        Oid type, collation;
        get_atttypetypmodcoll(table->relid, table->key_attnums[k], &type, &st->keys.typmods[k],
                              &collation);
        st->keys.types[k] = type;
    }
    return st;
}

namespace {

// Ends st's chunked read, keeping its counts for EXPLAIN ANALYZE.
void retire_chunked(RoutedStatement *st) {
    if (st->answers.chunked == nullptr)
        return;
    st->counts.chunks += st->answers.chunked->sent();
    st->counts.sent_again += st->answers.chunked->sent_again();
    delete st->answers.chunked;
    st->answers.chunked = nullptr;
}

}  // namespace

void release_results(RoutedStatement *st) {
    for (int i = 0; i < st->answers.nresults; i++) {
        if (st->answers.results[i] != nullptr)
            PQclear(st->answers.results[i]);
        st->answers.results[i] = nullptr;
    }
    st->answers.nresults = 0;
    if (st->answers.stream != nullptr)
        st->counts.sent_again += st->answers.stream->sent_again();
    delete st->answers.stream;
    st->answers.stream = nullptr;
    retire_chunked(st);
}

void execute_routed(RoutedStatement *st, ExprContext *econtext) {
    const char **values = evaluate_params(st, econtext);
    KeyValues *keys = evaluate_keys(st->keys, st->statement->plan.key_kinds, econtext);
    execute_routed_values(st, values, keys);
}

void execute_routed_values(RoutedStatement *st, const char **values, KeyValues *keys) {
    release_results(st);
    st->last.row_limit_exceeded = false;
    Oid userid = OidIsValid(st->setup->userid) ? st->setup->userid : GetUserId();
    if (st->statement->is_write)
        before_remote_write(RelationGetRelationName(st->setup->rel));
    guarded([&] {
        Retry retry = Retry::Read;
        std::vector<Job> jobs = routed_jobs(st, keys, values, &retry);
        if (jobs.empty())
            return;
        // A write's log lives with the statement (write_ledger.h), or is the caller's (a
        // TRUNCATE of several tables).
        if (st->statement->is_write && st->log == nullptr)
            st->log = statement_write_log(GetMemoryChunkContext(st));
        ReadPref pref =
            st->statement->is_write ? ReadPref::Leader : table_read_pref(st->setup->table);
        if (st->statement->is_write)
            note_server_write(st->setup->table->server_name);  // later reads go to the leaders
        try {
            run_jobs(jobs,
                     st->statement->is_write ? conn_params_for(st->setup->table->serverid, userid)
                                             : read_conn_params(st->setup->table, userid),
                     st->setup->table->tier, pref, retry,
                     st->statement->is_write ? st->log : nullptr, &st->counts.sent_again);
        } catch (const PgError &e) {
            // The caller computes the same rows here (a pushed ORDER BY or LIMIT over the bound).
            if (st->setup->row_limit_fallback && is_row_limit_error(e)) {
                st->last.row_limit_exceeded = true;
                return;
            }
            // Nothing was handed over yet: every job is read again, in chunks.
            std::vector<ResultPtr> chunks;
            if (!read_in_chunks(st, jobs, retry, e, &chunks))
                throw;
            jobs.resize(chunks.size());
            for (size_t i = 0; i < chunks.size(); i++)
                jobs[i].result = std::move(chunks[i]);
        }
        PGresult **results = nullptr;
        MemoryContext cxt = GetMemoryChunkContext(st);
        pg_call([&] {
            if (st->answers.results != nullptr) {  // a rescan: the previous execution's array
                pfree(st->answers.results);
                st->answers.results = nullptr;
            }
            results = static_cast<PGresult **>(
                MemoryContextAllocZero(cxt, sizeof(PGresult *) * jobs.size()));
        });
        st->answers.results = results;
        for (size_t i = 0; i < jobs.size(); i++)
            st->answers.results[i] = jobs[i].result.release();
        st->answers.nresults = static_cast<int>(jobs.size());
    });
}

void stream_routed(RoutedStatement *st, ExprContext *econtext, int ncols) {
    release_results(st);
    const char **values = evaluate_params(st, econtext);
    KeyValues *keys = evaluate_keys(st->keys, st->statement->plan.key_kinds, econtext);
    Oid userid = OidIsValid(st->setup->userid) ? st->setup->userid : GetUserId();
    guarded([&] {
        Retry retry = Retry::Read;
        std::vector<Job> jobs = routed_jobs(st, keys, values, &retry);
        if (jobs.empty())
            return;
        st->answers.stream =
            std::make_unique<RowStream>(std::move(jobs), read_conn_params(st->setup->table, userid),
                                        st->setup->table->tier, table_read_pref(st->setup->table),
                                        retry, ncols, GetMemoryChunkContext(st))
                .release();
        try {
            st->answers.stream->start();
        } catch (const PgError &e) {
            if (!fall_back_to_chunks(st, e, true))
                throw;
        }
    });
}

bool stream_next(RoutedStatement *st, const char **values) {
    if (st->answers.stream == nullptr && st->answers.chunked == nullptr)
        return false;
    return guarded([&] {
        for (;;) {
            if (st->answers.chunked != nullptr) {
                if (st->answers.chunked->next(values))
                    return true;
                retire_chunked(st);
            }
            if (st->answers.stream == nullptr)
                return false;
            try {
                return st->answers.stream->next(values);
            } catch (const PgError &e) {
                // A row-limit error arrives before any row of its job (a coordinator gathers the
                // answer first); after a row, reading in chunks would hand rows over twice.
                if (!fall_back_to_chunks(st, e, false))
                    throw;
            }
        }
    });
}

void stream_row_done(RoutedStatement *st) {
    if (st->answers.stream != nullptr)
        st->answers.stream->release_row();
}

void explain_routing(RoutedStatement *st, ExprContext *econtext, bool params_unknown,
                     const char **routing, const char **sql) {
    if (params_unknown && st->statement->plan.key_kinds != NIL) {
        *routing = pstrdup("depends on run-time values: by sharding key, computed at execution");
        return;
    }
    KeyValues *keys = evaluate_keys(st->keys, st->statement->plan.key_kinds, econtext);
    guarded([&] {
        int32_t tier = kNone;
        Retry retry = Retry::Read;
        std::string description;
        bool keyless = true;
        // EXPLAIN shows the verdict recorded, and asks the cluster nothing.
        std::vector<Target> targets =
            decide_targets(st, keys, &tier, &retry, &description, &keyless, true, false);
        std::string routed = targets.size() == 1 ? statement_for(st, targets[0], keyless) : "";
        pg_call([&] {
            *routing = pstrdup(description.c_str());
            if (!routed.empty())
                *sql = pstrdup(routed.c_str());
        });
    });
}

}  // namespace picoroute::pg::fdw
