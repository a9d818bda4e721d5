// Batched joins with a foreign table, execution: reads up to picoroute.join_batch_size outer rows
// (a NULL key matches nothing: an inner or semi join drops the row), sends the batch's distinct
// keys as IN lists, one statement per instance that owns their buckets (fdw/routed.cpp:
// execute_batched, with the retries and failover of any read), hashes the answer's rows by key
// and walks, for each stored outer row in order, the inner rows with the same key hash: those that
// pass the table's local conditions and the join's clauses (evaluated here again, the key equality
// included) match. An inner or left join emits each match, a semi join the first; a left or anti
// join emits an outer row without a match with NULL inner columns; every emitted row passes the
// filters over the join's result and is projected as planned.
//
// Everything a batch holds (outer rows, keys, inner rows, the hash tables) lives in one memory
// context reset at the next batch.
extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "parser/parsetree.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/ruleutils.h"
}

#include "pg/batch_join/batch_join.h"
#include "pg/batch_join/plan_private.h"
#include "pg/fdw/declcheck.h"
#include "pg/fdw/dialect.h"
#include "pg/fdw/keys.h"
#include "pg/fdw/options.h"
#include "pg/fdw/routed.h"
#include "pg/fdw/table_cache.h"
#include "pg/guard.h"

#include <string>

namespace picoroute::pg::batch_join {

using namespace picoroute::pg::fdw;

CustomScanMethods batched_join_scan_methods;

namespace {

CustomExecMethods exec_methods;

struct BatchState {
    CustomScanState css;  // first: the executor sees a CustomScanState
    PlanState *outer;
    RoutedStatement *st;
    BatchedJoinPlan plan;  // as planned (plan_private.h)
    BatchedLookup lookup;
    int *sources;  // plan.sources as an array: outer column (> 0) or -attnum
    int nsources;
    Oid key_type;
    FmgrInfo hash_fn, eq_fn, out_fn;
    AttInMetadata *attinmeta;
    const char *option_text;  // the statements' OPTION clause ("" for none), for EXPLAIN
    int natts;                // the table's attributes
    TupleTableSlot *outer_slot;
    MemoryContext batch_cxt;
    // the current batch
    ExprState *join_qual;   // the join's own clauses, over the scan tuple
    ExprState *inner_qual;  // the table's conditions evaluated here
    int nouter;
    MinimalTuple *outer_rows;
    Datum *outer_keys;
    bool *outer_null;  // a NULL key: no inner row (kept by left and anti joins only)
    uint32 *outer_hash;
    int ninner;
    Datum **inner_values;
    bool **inner_nulls;
    uint32 *inner_hash;
    int *inner_next;  // chain of inner rows with the same hash slot, -1 at the end
    int *heads;       // per hash slot: first inner row, -1 for none
    uint32 mask;
    int cur_outer;  // the outer row being joined; nouter when the batch is done
    int cur_inner;  // the next inner row of its chain, -1 at the end
    bool matched;   // cur_outer has met an inner row that passes the join's clauses
    bool outer_done;
    // EXPLAIN ANALYZE
    long batches;
    long statements;
    long inner_rows;
};

uint32 slots_for(int n) {
    uint32 size = 16;
    while (size < static_cast<uint32>(n) * 2)
        size <<= 1;
    return size;
}

uint32 key_hash(BatchState *bs, Datum value) {
    return DatumGetUInt32(FunctionCall1Coll(&bs->hash_fn, bs->plan.collation, value));
}

// Reads up to `batch` outer rows into the batch context: those with a non-NULL key, and for a left
// or anti join those with a NULL key too (they match nothing).
void read_outer(BatchState *bs) {
    int16 typlen;
    bool typbyval;
    get_typlenbyval(bs->key_type, &typlen, &typbyval);
    bs->outer_rows =
        static_cast<MinimalTuple *>(palloc(sizeof(MinimalTuple) * bs->plan.batch_size));
    bs->outer_keys = static_cast<Datum *>(palloc(sizeof(Datum) * bs->plan.batch_size));
    bs->outer_hash = static_cast<uint32 *>(palloc(sizeof(uint32) * bs->plan.batch_size));
    bs->outer_null = static_cast<bool *>(palloc(sizeof(bool) * bs->plan.batch_size));
    bool keep_null = bs->plan.jointype == JOIN_LEFT || bs->plan.jointype == JOIN_ANTI;
    bs->nouter = 0;
    while (bs->nouter < bs->plan.batch_size) {
        MemoryContext old = MemoryContextSwitchTo(bs->css.ss.ps.state->es_query_cxt);
        TupleTableSlot *slot = ExecProcNode(bs->outer);
        MemoryContextSwitchTo(old);
        if (TupIsNull(slot)) {
            bs->outer_done = true;
            return;
        }
        bool isnull;
        Datum key = slot_getattr(slot, bs->plan.outer_key, &isnull);
        if (isnull && !keep_null)
            continue;
        int n = bs->nouter++;
        bs->outer_rows[n] = ExecCopySlotMinimalTuple(slot);
        bs->outer_null[n] = isnull;
        bs->outer_keys[n] = isnull ? (Datum)0 : datumCopy(key, typbyval, typlen);
        bs->outer_hash[n] = isnull ? 0 : key_hash(bs, bs->outer_keys[n]);
    }
}

// The batch's distinct keys (indexes into outer_keys), found with the key type's equality.
KeyValues *distinct_keys(BatchState *bs, const char ***texts) {
    uint32 mask = slots_for(bs->nouter) - 1;
    int *heads = static_cast<int *>(palloc(sizeof(int) * (mask + 1)));
    for (uint32 i = 0; i <= mask; i++)
        heads[i] = -1;
    int *next = static_cast<int *>(palloc(sizeof(int) * (bs->nouter + 1)));
    int *members = static_cast<int *>(palloc(sizeof(int) * (bs->nouter + 1)));
    int n = 0;
    for (int i = 0; i < bs->nouter; i++) {
        if (bs->outer_null[i])
            continue;
        uint32 slot = bs->outer_hash[i] & mask;
        bool seen = false;
        for (int d = heads[slot]; d >= 0 && !seen; d = next[d])
            seen = bs->outer_hash[members[d]] == bs->outer_hash[i] &&
                   DatumGetBool(FunctionCall2Coll(&bs->eq_fn, bs->plan.collation,
                                                  bs->outer_keys[members[d]], bs->outer_keys[i]));
        if (seen)
            continue;
        members[n] = i;
        next[n] = heads[slot];
        heads[slot] = n++;
    }
    KeyValues *keys = static_cast<KeyValues *>(palloc0(sizeof(KeyValues)));
    keys->n = n;
    keys->type = bs->key_type;
    keys->values = static_cast<Datum *>(palloc(sizeof(Datum) * (n + 1)));
    keys->nulls = static_cast<bool *>(palloc0(sizeof(bool) * (n + 1)));
    *texts = static_cast<const char **>(palloc(sizeof(char *) * (n + 1)));
    int nestlevel = set_transmission_modes();
    for (int d = 0; d < n; d++) {
        keys->values[d] = bs->outer_keys[members[d]];
        (*texts)[d] = OutputFunctionCall(&bs->out_fn, keys->values[d]);
    }
    reset_transmission_modes(nestlevel);
    return keys;
}

// One answer row into the inner table: every attribute converted, the key hashed.
void add_inner_row(BatchState *bs, PGresult *res, int row) {
    int n = bs->ninner;
    Datum *values = static_cast<Datum *>(palloc0(sizeof(Datum) * (bs->natts + 1)));
    bool *nulls = static_cast<bool *>(palloc(sizeof(bool) * (bs->natts + 1)));
    for (int i = 0; i <= bs->natts; i++)
        nulls[i] = true;
    AttInMetadata *meta = bs->attinmeta;
    int col = 0;
    ListCell *lc;
    foreach (lc, bs->plan.retrieved_attrs) {
        int i = lfirst_int(lc) - 1;
        char *text = PQgetisnull(res, row, col) ? nullptr : PQgetvalue(res, row, col);
        col++;
        values[i] = InputFunctionCall(&meta->attinfuncs[i], text, meta->attioparams[i],
                                      meta->atttypmods[i]);
        nulls[i] = text == nullptr;
    }
    if (nulls[bs->plan.key_attno - 1])
        return;  // matches no outer row
    bs->inner_values[n] = values;
    bs->inner_nulls[n] = nulls;
    bs->inner_hash[n] = key_hash(bs, values[bs->plan.key_attno - 1]);
    uint32 slot = bs->inner_hash[n] & bs->mask;
    bs->inner_next[n] = bs->heads[slot];
    bs->heads[slot] = n;
    bs->ninner++;
}

// The answers of one batch as a hash table of inner rows; the PGresults are released.
void build_inner(BatchState *bs) {
    RoutedStatement *st = bs->st;
    int expected = list_length(bs->plan.retrieved_attrs), total = 0;
    for (int r = 0; r < st->answers.nresults; r++) {
        PGresult *res = st->answers.results[r];
        if (PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) != expected)
            ereport(ERROR, (errcode(ERRCODE_FDW_ERROR),
                            errmsg("picoroute: the remote query returned %d columns, expected %d",
                                   PQnfields(res), expected),
                            errcontext("remote SQL: %s", bs->lookup.base)));
        total += PQntuples(res);
    }
    bs->ninner = 0;
    bs->mask = slots_for(total) - 1;
    bs->heads = static_cast<int *>(palloc(sizeof(int) * (bs->mask + 1)));
    for (uint32 i = 0; i <= bs->mask; i++)
        bs->heads[i] = -1;
    bs->inner_values = static_cast<Datum **>(palloc(sizeof(Datum *) * (total + 1)));
    bs->inner_nulls = static_cast<bool **>(palloc(sizeof(bool *) * (total + 1)));
    bs->inner_hash = static_cast<uint32 *>(palloc(sizeof(uint32) * (total + 1)));
    bs->inner_next = static_cast<int *>(palloc(sizeof(int) * (total + 1)));
    for (int r = 0; r < st->answers.nresults; r++)
        for (int row = 0; row < PQntuples(st->answers.results[r]); row++)
            add_inner_row(bs, st->answers.results[r], row);
    bs->inner_rows += total;
    release_results(st);
}

// The first inner row of outer row `i`'s chain (-1: none).
int chain_of(BatchState *bs, int i) {
    return bs->outer_null[i] ? -1 : bs->heads[bs->outer_hash[i] & bs->mask];
}

// Reads the next batch and looks its keys up. False when the outer side has no row left.
bool next_batch(BatchState *bs) {
    MemoryContextReset(bs->batch_cxt);
    bs->nouter = 0;
    bs->ninner = 0;
    if (bs->outer_done)
        return false;
    MemoryContext old = MemoryContextSwitchTo(bs->batch_cxt);
    read_outer(bs);
    if (bs->nouter > 0) {
        const char **texts = nullptr;
        KeyValues *keys = distinct_keys(bs, &texts);
        bs->lookup.cond_values = evaluate_routed_params(bs->st, bs->css.ss.ps.ps_ExprContext);
        bs->statements += execute_batched(bs->st, bs->lookup, keys, texts);
        build_inner(bs);
        bs->batches++;
    }
    MemoryContextSwitchTo(old);
    bs->cur_outer = 0;
    bs->cur_inner = -1;
    bs->matched = false;
    if (bs->nouter > 0)
        bs->cur_inner = chain_of(bs, 0);
    return bs->nouter > 0;  // read_outer stops short of a row only at the outer side's end
}

// The scan tuple of outer row cur_outer joined with inner row `inner`.
TupleTableSlot *joined_tuple(BatchState *bs, int inner) {
    TupleTableSlot *scan = bs->css.ss.ss_ScanTupleSlot;
    ExecClearTuple(scan);
    ExecStoreMinimalTuple(bs->outer_rows[bs->cur_outer], bs->outer_slot, false);
    slot_getallattrs(bs->outer_slot);
    for (int i = 0; i < bs->nsources; i++) {
        int src = bs->sources[i];
        if (src > 0) {
            scan->tts_values[i] = bs->outer_slot->tts_values[src - 1];
            scan->tts_isnull[i] = bs->outer_slot->tts_isnull[src - 1];
        } else if (inner < 0) {  // a left join's outer row without a match
            scan->tts_values[i] = (Datum)0;
            scan->tts_isnull[i] = true;
        } else {
            scan->tts_values[i] = bs->inner_values[inner][-src - 1];
            scan->tts_isnull[i] = bs->inner_nulls[inner][-src - 1];
        }
    }
    return ExecStoreVirtualTuple(scan);
}

// The projection of the scan tuple in econtext when the filters over the join's result pass, else
// nullptr.
TupleTableSlot *emit(CustomScanState *node, ExprContext *econtext) {
    if (node->ss.ps.qual != nullptr && !ExecQual(node->ss.ps.qual, econtext)) {
        InstrCountFiltered1(node, 1);
        return nullptr;
    }
    if (node->ss.ps.ps_ProjInfo == nullptr)
        return econtext->ecxt_scantuple;
    return ExecProject(node->ss.ps.ps_ProjInfo);
}

// The end of outer row cur_outer's chain: a left or anti join emits it with NULL inner columns when
// no inner row matched. Moves to the next outer row.
TupleTableSlot *end_of_chain(BatchState *bs, ExprContext *econtext) {
    TupleTableSlot *result = nullptr;
    bool extend = bs->plan.jointype == JOIN_LEFT || bs->plan.jointype == JOIN_ANTI;
    if (extend && !bs->matched) {
        ResetExprContext(econtext);
        econtext->ecxt_scantuple = joined_tuple(bs, -1);
        result = emit(&bs->css, econtext);
    }
    bs->matched = false;
    if (++bs->cur_outer < bs->nouter)
        bs->cur_inner = chain_of(bs, bs->cur_outer);
    return result;
}

TupleTableSlot *exec_batched(CustomScanState *node) {
    BatchState *bs = reinterpret_cast<BatchState *>(node);
    ExprContext *econtext = node->ss.ps.ps_ExprContext;
    for (;;) {
        CHECK_FOR_INTERRUPTS();
        if (bs->cur_outer >= bs->nouter) {
            if (!next_batch(bs))
                return ExecClearTuple(node->ss.ps.ps_ResultTupleSlot);
            continue;
        }
        int inner = bs->cur_inner;
        if (inner < 0) {
            TupleTableSlot *result = end_of_chain(bs, econtext);
            if (result != nullptr)
                return result;
            continue;
        }
        bs->cur_inner = bs->inner_next[inner];
        if (bs->inner_hash[inner] != bs->outer_hash[bs->cur_outer])
            continue;
        ResetExprContext(econtext);
        econtext->ecxt_scantuple = joined_tuple(bs, inner);
        if (!ExecQual(bs->inner_qual, econtext) || !ExecQual(bs->join_qual, econtext)) {
            InstrCountFiltered2(node, 1);
            continue;
        }
        bs->matched = true;
        if (bs->plan.jointype == JOIN_ANTI || bs->plan.jointype == JOIN_SEMI)
            bs->cur_inner = -1;  // one match decides the outer row
        if (bs->plan.jointype == JOIN_ANTI)
            continue;
        TupleTableSlot *result = emit(node, econtext);
        if (result != nullptr)
            return result;
    }
}

void init_key_functions(BatchState *bs) {
    Oid eq_op = bs->plan.eq_op;
    RegProcedure lhs, rhs;
    if (!get_op_hash_functions(eq_op, &lhs, &rhs))
        elog(ERROR, "picoroute: no hash function for operator %u", eq_op);
    fmgr_info(lhs, &bs->hash_fn);
    fmgr_info(get_opcode(eq_op), &bs->eq_fn);
    Oid out;
    bool varlena;
    getTypeOutputInfo(bs->key_type, &out, &varlena);
    fmgr_info(out, &bs->out_fn);
}

// The foreign table's index in the executor's range table: the varno of its columns in the scan
// tuple (set_plan_refs offsets them when the join is in a subquery; custom_private is not).
Index inner_rti(CustomScan *plan, List *sources) {
    ListCell *ls, *lt;
    forboth(ls, sources, lt, plan->custom_scan_tlist) {
        if (lfirst_int(ls) < 0)
            return static_cast<Index>(
                reinterpret_cast<Var *>(lfirst_node(TargetEntry, lt)->expr)->varno);
    }
    elog(ERROR, "picoroute: the batched join reads no column of its foreign table");
    return 0;
}

void begin_batched(CustomScanState *node, EState *estate, int eflags) {
    BatchState *bs = reinterpret_cast<BatchState *>(node);
    CustomScan *plan = reinterpret_cast<CustomScan *>(node->ss.ps.plan);
    bs->outer = ExecInitNode(static_cast<Plan *>(linitial(plan->custom_plans)), estate, eflags);
    node->custom_ps = list_make1(bs->outer);
    bs->plan = decode_plan(plan->custom_private);
    Index rti = inner_rti(plan, bs->plan.sources);
    Relation rel = ExecGetRangeTableRelation(estate, rti);
    RangeTblEntry *rte = exec_rt_fetch(rti, estate);
    Oid userid = user_for_rte(rte);
    TableInfo *table = get_table_info(RelationGetRelid(rel));
    if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
        check_declaration_at_first_use(table, userid);
    int ncond = bs->plan.statement.nparams;
    RemoteStatement statement;
    statement.plan = bs->plan.statement;
    statement.plan.key_kinds = list_make1_int(KEY_SCALAR);  // each key of a batch
    RoutedSetup setup;
    setup.table = table;
    setup.rel = rel;
    setup.userid = userid;
    BatchedJoinExprs exprs = decode_exprs(plan->custom_exprs, ncond);
    bs->st = init_routed_statement(&node->ss.ps, setup, statement, exprs.params);
    bs->join_qual = ExecInitQual(exprs.join_quals, &node->ss.ps);
    bs->inner_qual = ExecInitQual(exprs.inner_quals, &node->ss.ps);
    bs->lookup = BatchedLookup{
        bs->plan.statement.sql, bs->plan.statement.has_where, bs->plan.key_column, ncond, nullptr,
        bs->plan.max_keys};
    List *sources = bs->plan.sources;
    bs->nsources = list_length(sources);
    bs->sources = static_cast<int *>(palloc(sizeof(int) * (bs->nsources + 1)));
    for (int i = 0; i < bs->nsources; i++)
        bs->sources[i] = list_nth_int(sources, i);
    bs->key_type = get_atttype(RelationGetRelid(rel), bs->plan.key_attno);
    init_key_functions(bs);
    bs->attinmeta = TupleDescGetAttInMetadata(RelationGetDescr(rel));
    bs->option_text = "";
    guarded([&] {
        std::string option = option_clause(table, true, false);
        pg_call([&] { bs->option_text = pstrdup(option.c_str()); });
    });
    bs->natts = RelationGetDescr(rel)->natts;
    bs->outer_slot =
        ExecInitExtraTupleSlot(estate, ExecGetResultType(bs->outer), &TTSOpsMinimalTuple);
    bs->batch_cxt =
        AllocSetContextCreate(estate->es_query_cxt, "picoroute batch", ALLOCSET_DEFAULT_SIZES);
}

void rescan_batched(CustomScanState *node) {
    BatchState *bs = reinterpret_cast<BatchState *>(node);
    MemoryContextReset(bs->batch_cxt);
    bs->nouter = 0;
    bs->ninner = 0;
    bs->cur_outer = 0;
    bs->cur_inner = -1;
    bs->matched = false;
    bs->outer_done = false;
    release_results(bs->st);
    if (node->ss.ps.chgParam != nullptr)
        UpdateChangedParamSet(bs->outer, node->ss.ps.chgParam);
    ExecReScan(bs->outer);
}

void end_batched(CustomScanState *node) {
    BatchState *bs = reinterpret_cast<BatchState *>(node);
    if (bs->st != nullptr)
        release_results(bs->st);
    if (bs->outer != nullptr)
        ExecEndNode(bs->outer);
}

// EXPLAIN's line for one implicitly AND-ed list of the plan's expressions (none for an empty list).
void explain_quals(CustomScanState *node, List *ancestors, ExplainState *es, const char *label,
                   List *quals) {
    CustomScan *plan = reinterpret_cast<CustomScan *>(node->ss.ps.plan);
    if (quals == NIL)
        return;
    List *context = set_deparse_context_plan(es->deparse_cxt, &plan->scan.plan, ancestors);
    char *text = deparse_expression(reinterpret_cast<Node *>(make_ands_explicit(quals)), context,
                                    es->verbose || list_length(es->rtable) > 1, false);
    ExplainPropertyText(label, text, es);
}

const char *join_type_name(JoinType jointype) {
    switch (jointype) {
        case JOIN_LEFT:
            return "Left";
        case JOIN_SEMI:
            return "Semi";
        case JOIN_ANTI:
            return "Anti";
        default:
            return "Inner";
    }
}

void explain_batched(CustomScanState *node, List *ancestors, ExplainState *es) {
    BatchState *bs = reinterpret_cast<BatchState *>(node);
    ExplainPropertyText("Join Type", join_type_name(bs->plan.jointype), es);
    BatchedJoinExprs exprs = decode_exprs(
        reinterpret_cast<CustomScan *>(node->ss.ps.plan)->custom_exprs, bs->plan.statement.nparams);
    explain_quals(node, ancestors, es, "Join Filter", exprs.join_quals);
    explain_quals(node, ancestors, es, "Local Filter on Foreign Table", exprs.inner_quals);
    ExplainPropertyInteger("Batch Size", nullptr, bs->plan.batch_size, es);
    ExplainPropertyInteger("Keys per Statement", nullptr, bs->lookup.max_keys, es);
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(&sql, "%s %s %s IN ($%d, ...)%s", bs->lookup.base,
                     bs->lookup.has_where ? "AND" : "WHERE", bs->lookup.column,
                     bs->lookup.ncond + 1, bs->option_text);
    ExplainPropertyText("Remote SQL", sql.data, es);
    ExplainPropertyText("Routing",
                        "by sharding key: each batch's distinct keys, one statement per instance "
                        "that owns their buckets",
                        es);
    if (es->analyze) {
        ExplainPropertyInteger("Batches", nullptr, bs->batches, es);
        ExplainPropertyInteger("Remote Statements", nullptr, bs->statements, es);
        ExplainPropertyInteger("Remote Rows", nullptr, bs->inner_rows, es);
        if (bs->st->last.routing != nullptr)
            ExplainPropertyText("Last Batch", bs->st->last.routing, es);
    }
}

Node *create_batched_state(CustomScan *) {
    BatchState *bs = static_cast<BatchState *>(palloc0(sizeof(BatchState)));
    NodeSetTag(&bs->css, T_CustomScanState);
    bs->css.methods = &exec_methods;
    return reinterpret_cast<Node *>(&bs->css);
}

}  // namespace

Oid batched_join_table(CustomScan *plan, List *rtable) {
    if (plan->methods != &batched_join_scan_methods)
        return InvalidOid;
    BatchedJoinPlan decoded = decode_plan(plan->custom_private);
    return rt_fetch(inner_rti(plan, decoded.sources), rtable)->relid;
}

void register_batched_join_exec() {
    batched_join_scan_methods.CustomName = kBatchedJoinName;
    batched_join_scan_methods.CreateCustomScanState = create_batched_state;
    exec_methods.CustomName = kBatchedJoinName;
    exec_methods.BeginCustomScan = begin_batched;
    exec_methods.ExecCustomScan = exec_batched;
    exec_methods.EndCustomScan = end_batched;
    exec_methods.ReScanCustomScan = rescan_batched;
    exec_methods.ExplainCustomScan = explain_batched;
    RegisterCustomScanMethods(&batched_join_scan_methods);
}

}  // namespace picoroute::pg::batch_join
