// INSERT, UPDATE and DELETE on picoroute foreign tables (the remote UPDATE or DELETE statement of
// a direct modification is direct_modify.cpp).
//
// INSERT: each row's bucket is computed from its sharding-key values; rows are grouped by the
// instance that owns their bucket and sent as one multi-row INSERT per instance and batch
// (batch_size), all instances in parallel. UPDATE and DELETE run remotely as one statement
// (direct modification), routed like a scan when the sharding key is fixed, or else row by row,
// by primary key (row_modify.cpp). An UPDATE that would change a sharding-key column is refused:
// the row would belong to another bucket.
//
// Picodata commits every statement on its own: remote writes are not undone by a local ROLLBACK,
// and a batch sent to several instances may be applied on some of them when another one fails.
extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "access/sysattr.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/fdwapi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

#include "core/routing/grouping.h"
#include "pg/fdw/declcheck.h"
#include "pg/fdw/deparse.h"
#include "pg/fdw/dialect.h"
#include "pg/fdw/modify.h"
#include "pg/fdw/options.h"
#include "pg/fdw/plan_private.h"
#include "pg/fdw/route_check.h"
#include "pg/fdw/row_modify.h"
#include "pg/fdw/table_cache.h"
#include "pg/guard.h"
#include "pg/key_datum.h"
#include "pg/map_store.h"
#include "pg/remote/connection.h"
#include "pg/remote/leader_reads.h"
#include "pg/remote/rounds.h"
#include "pg/lookup.h"
#include "pg/remote/write_ledger.h"
#include "pg/sql_common.h"
#include "pg/stats/stats.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;
using namespace picoroute::pg::fdw;

namespace {

// Executor state of an INSERT (also of COPY FROM and of tuple routing into a foreign partition).
struct InsertState {
    ModifyKind kind;  // first (row_modify.h): row_by_row false
    Relation rel;
    TableInfo *table;
    List *target_attrs;
    int nattrs;
    FmgrInfo *out;
    int *key_positions;  // index in target_attrs of each sharding-key column, -1 if absent
    Oid *key_types;
    bool *key_byval;
    int16 *key_len;
    int batch_size;
    Oid userid;  // whose user mapping: the view owner's through a view (checkAsUser)
    // COPY FROM hands rows over one at a time: they are buffered up to batch_size rows and sent
    // together, the rest at EndForeignInsert.
    bool buffer_rows;
    MemoryContext row_cxt;  // the rows of the batch being built
    int nrows, capacity;
    const char **values;  // nattrs per row
    Datum *keys;          // nkeys per row, copied into row_cxt
    bool *key_nulls;
    WriteLog *log;  // what the statement wrote so far, by instance (write_ledger.h)
};

List *insert_target_attrs(Relation rel) {
    TupleDesc desc = RelationGetDescr(rel);
    List *attrs = NIL;
    for (int i = 1; i <= desc->natts; i++) {
        Form_pg_attribute attr = TupleDescAttr(desc, i - 1);
        // bucket_id is computed by Picodata and cannot be inserted.
        if (attr->attisdropped || attr->attgenerated ||
            strcmp(NameStr(attr->attname), "bucket_id") == 0)
            continue;
        attrs = lappend_int(attrs, i);
    }
    return attrs;
}

// RETURNING of an INSERT is answered from the row as sent (the values given and the columns'
// local defaults, which Picodata stores unchanged): only bucket_id, which Picodata computes itself,
// is not known here.
void refuse_unknown_returning(Oid relid, List *returning) {
    AttrNumber bucket = get_attnum(relid, "bucket_id");
    if (bucket == InvalidAttrNumber || returning == NIL)
        return;
    List *vars = pull_var_clause(reinterpret_cast<Node *>(returning), PVC_RECURSE_AGGREGATES |
                                                                          PVC_RECURSE_WINDOWFUNCS |
                                                                          PVC_RECURSE_PLACEHOLDERS);
    ListCell *lc;
    foreach (lc, vars) {
        Var *var = lfirst_node(Var, lc);
        if (var->varattno == bucket || var->varattno == 0)
            ereport(ERROR,
                    (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                     errmsg("picoroute: INSERT ... RETURNING cannot return column \"bucket_id\" of "
                            "foreign table \"%s\"",
                            get_rel_name(relid)),
                     errdetail("picoroute answers RETURNING from the values it sends; Picodata "
                               "computes bucket_id itself when it stores the row."),
                     errhint("List the other columns in RETURNING (RETURNING * includes "
                             "bucket_id); picoroute_bucket_id() computes a key's bucket.")));
    }
}

List *plan_foreign_modify(PlannerInfo *root, ModifyTable *plan, Index resultRelation,
                          int subplan_index) {
    RangeTblEntry *rte = planner_rt_fetch(resultRelation, root);
    TableInfo *table = get_table_info(rte->relid);
    CmdType op = plan->operation;
    List *set_attrs = NIL;
    if (op == CMD_UPDATE) {
        List *tlist = NIL;
        get_translated_update_targetlist(root, resultRelation, &tlist, &set_attrs);
        refuse_key_update(table, set_attrs);
    }
    // Not one remote statement (direct_modify.cpp did not take it): written row by row
    // (row_modify.cpp), the columns set and the command.
    ModifyPlan modify;
    modify.operation = op;
    if (op == CMD_UPDATE || op == CMD_DELETE) {
        modify.row_by_row = true;
        modify.target_attrs = set_attrs;
        return encode(modify);
    }
    if (plan->returningLists != NIL)
        refuse_unknown_returning(
            rte->relid, static_cast<List *>(list_nth(plan->returningLists, subplan_index)));
    if (plan->onConflictAction != ONCONFLICT_NONE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("picoroute: INSERT ... ON CONFLICT is not supported on foreign "
                               "table \"%s\"",
                               get_rel_name(rte->relid))));
    Relation rel = table_open(rte->relid, NoLock);
    modify.target_attrs = insert_target_attrs(rel);
    table_close(rel, NoLock);
    return encode(modify);
}

InsertState *create_insert_state(EState *estate, Relation rel, List *target_attrs, Oid userid) {
    InsertState *s = static_cast<InsertState *>(palloc0(sizeof(InsertState)));
    s->rel = rel;
    s->table = get_table_info(RelationGetRelid(rel));
    check_declaration_at_first_use(s->table, userid);
    s->target_attrs = target_attrs;
    s->nattrs = list_length(s->target_attrs);
    s->userid = userid;
    s->out = static_cast<FmgrInfo *>(palloc0(sizeof(FmgrInfo) * (s->nattrs + 1)));
    int i = 0;
    ListCell *lc;
    foreach (lc, s->target_attrs) {
        Form_pg_attribute attr = TupleDescAttr(RelationGetDescr(rel), lfirst_int(lc) - 1);
        Oid out;
        bool varlena;
        getTypeOutputInfo(attr->atttypid, &out, &varlena);
        fmgr_info(out, &s->out[i++]);
    }
    int nkeys = s->table->nkeys;
    s->key_positions = static_cast<int *>(palloc0(sizeof(int) * (nkeys + 1)));
    s->key_types = static_cast<Oid *>(palloc0(sizeof(Oid) * (nkeys + 1)));
    s->key_byval = static_cast<bool *>(palloc0(sizeof(bool) * (nkeys + 1)));
    s->key_len = static_cast<int16 *>(palloc0(sizeof(int16) * (nkeys + 1)));
    for (int k = 0; k < nkeys; k++) {
        s->key_positions[k] = -1;
        int pos = 0;
        foreach (lc, s->target_attrs) {
            if (lfirst_int(lc) == s->table->key_attnums[k])
                s->key_positions[k] = pos;
            pos++;
        }
        s->key_types[k] = get_atttype(s->table->relid, s->table->key_attnums[k]);
        get_typlenbyval(s->key_types[k], &s->key_len[k], &s->key_byval[k]);
    }
    s->batch_size = s->table->batch_size;
    s->row_cxt =
        AllocSetContextCreate(estate->es_query_cxt, "picoroute insert", ALLOCSET_DEFAULT_SIZES);
    // Lives with the statement: COPY reads its next rows, an INSERT ... SELECT its next batch,
    // between two sends, and whatever error ends it then still says what was committed.
    s->log = guarded([&] { return statement_write_log(estate->es_query_cxt); });
    return s;
}

int rows_per_insert(ResultRelInfo *rinfo);

void begin_foreign_modify(ModifyTableState *mtstate, ResultRelInfo *rinfo, List *fdw_private, int,
                          int eflags) {
    if (eflags & EXEC_FLAG_EXPLAIN_ONLY)
        return;
    ModifyPlan modify = decode_modify(fdw_private);
    if (modify.row_by_row) {
        row_modify_begin(mtstate, rinfo, modify.operation, modify.target_attrs);
        stats::table_started(RelationGetRelid(rinfo->ri_RelationDesc),
                             stats::TableStart::RowModify);
        return;
    }
    EState *estate = mtstate->ps.state;
    RangeTblEntry *rte =
        rinfo->ri_RangeTableIndex > 0 ? exec_rt_fetch(rinfo->ri_RangeTableIndex, estate) : nullptr;
    InsertState *s =
        create_insert_state(estate, rinfo->ri_RelationDesc, modify.target_attrs, user_for_rte(rte));
    stats::table_started(RelationGetRelid(rinfo->ri_RelationDesc), stats::TableStart::Insert);
    // With RETURNING, PostgreSQL hands the rows over one by one (no batch insert): they are
    // buffered up to batch_size and sent together, the rest at EndForeignModify, which runs
    // before any RETURNING row reaches the client (the portal holds them until the statement
    // ends). Row triggers see each row as it is inserted.
    TriggerDesc *trig = rinfo->ri_TrigDesc;
    s->buffer_rows = rinfo->ri_projectReturning != nullptr &&
                     !(trig && (trig->trig_insert_before_row || trig->trig_insert_after_row));
    rinfo->ri_FdwState = s;
    if (s->buffer_rows)
        s->batch_size = rows_per_insert(rinfo);
}

// COPY FROM (a ModifyTableState without a plan) and tuple routing of an INSERT or a COPY into a
// foreign partition.
void begin_foreign_insert(ModifyTableState *mtstate, ResultRelInfo *rinfo) {
    Relation rel = rinfo->ri_RelationDesc;
    EState *estate = mtstate->ps.state;
    ModifyTable *plan = reinterpret_cast<ModifyTable *>(mtstate->ps.plan);
    if (plan != nullptr && plan->operation != CMD_INSERT)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("picoroute: cannot move a row into foreign partition \"%s\" with an "
                               "UPDATE",
                               RelationGetRelationName(rel)),
                        errhint("DELETE the row and INSERT it into the partitioned table.")));
    if (plan != nullptr && plan->onConflictAction != ONCONFLICT_NONE)
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("picoroute: INSERT ... ON CONFLICT is not supported on foreign "
                               "table \"%s\"",
                               RelationGetRelationName(rel))));
    refuse_unknown_returning(RelationGetRelid(rel), rinfo->ri_returningList);
    // A partition reached by routing has no range table entry of its own: the root's decides
    // whose user mapping is used.
    ResultRelInfo *root = rinfo->ri_RootResultRelInfo;
    Index rti = rinfo->ri_RangeTableIndex > 0 ? rinfo->ri_RangeTableIndex
                : root != nullptr             ? root->ri_RangeTableIndex
                                              : 0;
    RangeTblEntry *rte = rti > 0 ? exec_rt_fetch(rti, estate) : nullptr;
    InsertState *s = create_insert_state(estate, rel, insert_target_attrs(rel), user_for_rte(rte));
    stats::table_started(RelationGetRelid(rel), stats::TableStart::Insert);
    // COPY hands rows over one by one: buffer them, unless row triggers of the foreign table must
    // see each row as it is inserted.
    TriggerDesc *trig = rinfo->ri_TrigDesc;
    s->buffer_rows =
        plan == nullptr && !(trig && (trig->trig_insert_before_row || trig->trig_insert_after_row));
    rinfo->ri_FdwState = s;
}

// Sends the rows (text values, nattrs per row) to the owners of their buckets.
void send_rows(InsertState *s, int nrows, const char **values, Datum *keys, bool *key_nulls) {
    TableInfo *t = s->table;
    guarded([&] {
        bool routed = !t->global && t->nkeys > 0;
        for (int k = 0; routed && k < t->nkeys; k++)
            if (s->key_positions[k] < 0)
                routed = false;
        // Rows whose key Picodata hashes differently go to a coordinator (the route check, run
        // before the map is read: a check may read a newer map, which replaces this backend's).
        if (routed && key_route(t, s->key_types, t->nkeys, s->userid) == KeyRoute::Coordinator)
            routed = false;
        MapRef map = current_map();
        const SnapshotView &view = *map.view;
        int32_t tier = require_tier(view, map.generation, t->tier);
        uint32_t count = view.tier(tier).bucket_count;
        routed = routed && count > 0;
        // Unknown buckets and unrouted rows go to one coordinator (core/routing/grouping.h).
        std::vector<routing::Group> groups = routing::group_by_owner(
            nrows,
            [&](int r) -> std::optional<uint32_t> {
                if (!routed)
                    return std::nullopt;
                return key_bucket(t->nkeys, s->key_types, &keys[r * t->nkeys],
                                  &key_nulls[r * t->nkeys], count, t->hash_rule);
            },
            owner_lookups(view, tier, ReadPref::Leader, false));
        std::vector<Job> jobs;
        jobs.reserve(groups.size());
        for (routing::Group &group : groups) {
            Job job;
            job.target = std::move(group.target);
            char *sql = nullptr;
            int n = static_cast<int>(group.members.size());
            pg_call([&] {
                StringInfoData buf;
                initStringInfo(&buf);
                deparse_insert(&buf, s->rel, t, s->target_attrs, n);
                sql = buf.data;
            });
            job.sql = std::string(sql) + option_clause(t, false);
            for (int r : group.members)
                for (int c = 0; c < s->nattrs; c++)
                    job.values.push_back(values[r * s->nattrs + c]);
            job.may_span = !t->global && !one_replicaset(job.target, t->tier);
            job.sharded = !t->global;
            job.table = t->relid;
            jobs.push_back(std::move(job));
        }
        note_server_write(t->server_name);  // later reads go to the leaders
        run_jobs(jobs, conn_params_for(t->serverid, s->userid), t->tier, ReadPref::Leader,
                 Retry::Write, s->log);
    });
}

// Adds one row to the batch being built: its text values and its sharding-key values, copied.
void buffer_row(InsertState *s, TupleTableSlot *slot) {
    int nkeys = s->table->nkeys;
    MemoryContext old = MemoryContextSwitchTo(s->row_cxt);
    if (s->nrows >= s->capacity) {
        int capacity = Max(Max(s->capacity * 2, s->batch_size), 1);
        s->values =
            static_cast<const char **>(palloc0(sizeof(char *) * (capacity * s->nattrs + 1)));
        s->keys = static_cast<Datum *>(palloc0(sizeof(Datum) * (capacity * nkeys + 1)));
        s->key_nulls = static_cast<bool *>(palloc0(sizeof(bool) * (capacity * nkeys + 1)));
        if (s->nrows > 0)  // callers flush a full batch first
            elog(ERROR, "picoroute: insert batch overflow");
        s->capacity = capacity;
    }
    int r = s->nrows;
    int c = 0;
    ListCell *lc;
    TupleDesc desc = RelationGetDescr(s->rel);
    // Values in Picodata's format, whatever the session's DateStyle or extra_float_digits.
    int nestlevel = set_transmission_modes();
    foreach (lc, s->target_attrs) {
        bool isnull = false;
        AttrNumber attnum = lfirst_int(lc);
        Datum value = slot_getattr(slot, attnum, &isnull);
        Oid type = TupleDescAttr(desc, attnum - 1)->atttypid;
        if (!isnull && (type == JSONOID || type == JSONBOID))
            refuse_json_value(s->rel, attnum);
        char *text = isnull ? nullptr : OutputFunctionCall(&s->out[c], value);
        if (text != nullptr && type == BPCHAROID)  // as PostgreSQL compares it (shippable.cpp)
            trim_trailing_blanks(text);
        s->values[r * s->nattrs + c] = text;
        c++;
    }
    reset_transmission_modes(nestlevel);
    for (int k = 0; k < nkeys; k++) {
        if (s->key_positions[k] < 0)
            continue;
        bool isnull = false;
        Datum value = slot_getattr(slot, s->table->key_attnums[k], &isnull);
        s->key_nulls[r * nkeys + k] = isnull;
        s->keys[r * nkeys + k] =
            isnull ? (Datum)0 : datumCopy(value, s->key_byval[k], s->key_len[k]);
    }
    s->nrows++;
    MemoryContextSwitchTo(old);
}

// Sends the buffered rows and empties the buffer.
void flush_rows(InsertState *s) {
    if (s->nrows == 0)
        return;
    before_remote_write(RelationGetRelationName(s->rel));
    int nrows = s->nrows;
    s->nrows = 0;
    send_rows(s, nrows, s->values, s->keys, s->key_nulls);
    // The arrays and the values they point to go together; the next row allocates new ones.
    MemoryContextReset(s->row_cxt);
    s->values = nullptr;
    s->keys = nullptr;
    s->key_nulls = nullptr;
    s->capacity = 0;
}

TupleTableSlot **insert_slots(ResultRelInfo *rinfo, TupleTableSlot **slots, int nslots) {
    InsertState *s = static_cast<InsertState *>(rinfo->ri_FdwState);
    for (int r = 0; r < nslots; r++) {
        if (s->nrows >= s->capacity && s->nrows > 0)
            flush_rows(s);
        buffer_row(s, slots[r]);
    }
    flush_rows(s);
    return slots;
}

TupleTableSlot *exec_foreign_insert(EState *, ResultRelInfo *rinfo, TupleTableSlot *slot,
                                    TupleTableSlot *) {
    InsertState *s = static_cast<InsertState *>(rinfo->ri_FdwState);
    if (!s->buffer_rows) {
        TupleTableSlot *slots[1] = {slot};
        insert_slots(rinfo, slots, 1);
        return slot;
    }
    if (s->nrows >= s->capacity && s->nrows > 0)
        flush_rows(s);
    buffer_row(s, slot);
    if (s->nrows >= Max(s->batch_size, 1) || s->nrows * s->nattrs >= 65535 - s->nattrs)
        flush_rows(s);
    return slot;
}

TupleTableSlot **exec_foreign_batch_insert(EState *, ResultRelInfo *rinfo, TupleTableSlot **slots,
                                           TupleTableSlot **, int *numSlots) {
    return insert_slots(rinfo, slots, *numSlots);
}

void end_foreign_insert(EState *, ResultRelInfo *rinfo) {
    InsertState *s = static_cast<InsertState *>(rinfo->ri_FdwState);
    if (s != nullptr)
        flush_rows(s);
}

// The rows of one remote INSERT (batch_size, capped by Picodata's row limit and by 65535
// parameters).
int rows_per_insert(ResultRelInfo *rinfo) {
    InsertState *s = static_cast<InsertState *>(rinfo->ri_FdwState);
    TableInfo *table = s ? s->table : get_table_info(RelationGetRelid(rinfo->ri_RelationDesc));
    int batch = table->batch_size;
    int nattrs = s ? s->nattrs : RelationGetDescr(rinfo->ri_RelationDesc)->natts;
    if (nattrs > 0)
        batch = Min(batch, 65535 / nattrs);
    // One INSERT ... VALUES may not carry more rows than Picodata's sql_motion_row_max.
    int limit = insert_row_limit(table);
    if (limit > 0)
        batch = Min(batch, limit);
    return Max(batch, 1);
}

int get_foreign_modify_batch_size(ResultRelInfo *rinfo) {
    // With RETURNING the rows come one by one and are buffered (begin_foreign_modify).
    if (rinfo->ri_projectReturning != nullptr ||
        (rinfo->ri_TrigDesc &&
         (rinfo->ri_TrigDesc->trig_insert_before_row || rinfo->ri_TrigDesc->trig_insert_after_row)))
        return 1;
    return rows_per_insert(rinfo);
}

void end_foreign_modify(EState *, ResultRelInfo *rinfo) {
    ModifyKind *kind = static_cast<ModifyKind *>(rinfo->ri_FdwState);
    if (kind == nullptr)
        return;
    if (kind->row_by_row)
        row_modify_end(rinfo);
    else
        flush_rows(reinterpret_cast<InsertState *>(kind));
}

// How send_rows routes the rows of an INSERT into `table` with columns `attrs` (EXPLAIN's
// "Routing"; "Batch Size" says how many rows one remote INSERT carries at most).
const char *insert_routing(TableInfo *table, List *attrs) {
    if (table->global)
        return "global table: every row to one coordinator (an online instance, masters first), "
               "which applies it on every instance";
    bool routed = table->nkeys > 0;
    for (int k = 0; k < table->nkeys; k++)
        routed = routed && list_member_int(attrs, table->key_attnums[k]);
    if (!routed)
        return "the sharding key is not among the inserted columns: every row to one coordinator "
               "(an online instance, masters first)";
    // The verdict of the route check, as recorded (EXPLAIN asks the cluster nothing).
    Oid *types = static_cast<Oid *>(palloc0(sizeof(Oid) * (table->nkeys + 1)));
    for (int k = 0; k < table->nkeys; k++)
        types[k] = get_atttype(table->relid, table->key_attnums[k]);
    bool disagrees = guarded([&] {
        return key_route(table, types, table->nkeys, GetUserId(), false) == KeyRoute::Coordinator;
    });
    if (disagrees)
        return "Picodata hashes this sharding key differently (picoroute_route_checks): every row "
               "to one coordinator (an online instance, masters first), which routes it by its own "
               "hashing";
    return "rows grouped by the owner of their bucket (from the sharding key), each group to the "
           "master of its replicaset, in parallel; rows of a bucket the map does not know to one "
           "coordinator";
}

// EXPLAIN VERBOSE of an INSERT: the remote statement (for one row: a batch repeats its VALUES
// list), how the rows are routed, and the rows per remote INSERT (batch_size, capped by
// Picodata's row limit and by 65535 parameters).
void explain_foreign_modify(ModifyTableState *, ResultRelInfo *rinfo, List *fdw_private, int,
                            ExplainState *es) {
    ModifyPlan modify = decode_modify(fdw_private);
    if (modify.row_by_row) {
        row_modify_explain(rinfo, modify.operation, modify.target_attrs, es);
        return;
    }
    if (!es->verbose)
        return;
    Relation rel = rinfo->ri_RelationDesc;
    TableInfo *table = get_table_info(RelationGetRelid(rel));
    List *attrs = fdw_private != NIL ? modify.target_attrs : insert_target_attrs(rel);
    StringInfoData sql;
    initStringInfo(&sql);
    deparse_insert(&sql, rel, table, attrs, 1);
    char *option = nullptr;
    guarded([&] {
        std::string clause = option_clause(table, false);
        pg_call([&] { option = pstrdup(clause.c_str()); });
    });
    appendStringInfoString(&sql, option);
    ExplainPropertyText("Remote SQL", sql.data, es);
    ExplainPropertyText("Routing", insert_routing(table, attrs), es);
    ExplainPropertyInteger(
        "Batch Size", nullptr,
        rinfo->ri_BatchSize == 1 && rinfo->ri_projectReturning != nullptr &&
                !(rinfo->ri_TrigDesc && (rinfo->ri_TrigDesc->trig_insert_before_row ||
                                         rinfo->ri_TrigDesc->trig_insert_after_row))
            ? rows_per_insert(rinfo)
            : rinfo->ri_BatchSize,
        es);
}

// An UPDATE or DELETE that is not one remote statement, row by row (row_modify.cpp).
TupleTableSlot *exec_foreign_update_delete(EState *, ResultRelInfo *rinfo, TupleTableSlot *slot,
                                           TupleTableSlot *plan_slot) {
    return row_modify_exec(rinfo, slot, plan_slot);
}

}  // namespace

namespace picoroute::pg::fdw {

void refuse_key_update(TableInfo *table, List *target_attrs) {
    ListCell *lc;
    foreach (lc, target_attrs) {
        AttrNumber attnum = lfirst_int(lc);
        for (int k = 0; k < table->nkeys; k++) {
            if (table->key_attnums[k] == attnum)
                ereport(
                    ERROR,
                    (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                     errmsg("picoroute: cannot update sharding key column \"%s\" of foreign "
                            "table \"%s\"",
                            get_attname(table->relid, attnum, false), get_rel_name(table->relid)),
                     errdetail("A new sharding key value moves the row to another bucket, "
                               "which Picodata does not do in an UPDATE."),
                     errhint("DELETE the row and INSERT it with the new key.")));
        }
    }
}

void install_modify_callbacks(FdwRoutine *routine) {
    routine->PlanForeignModify = plan_foreign_modify;
    routine->BeginForeignModify = begin_foreign_modify;
    routine->ExecForeignInsert = exec_foreign_insert;
    routine->ExecForeignBatchInsert = exec_foreign_batch_insert;
    routine->GetForeignModifyBatchSize = get_foreign_modify_batch_size;
    routine->EndForeignModify = end_foreign_modify;
    routine->ExplainForeignModify = explain_foreign_modify;
    routine->BeginForeignInsert = begin_foreign_insert;
    routine->EndForeignInsert = end_foreign_insert;
    routine->ExecForeignUpdate = exec_foreign_update_delete;
    routine->ExecForeignDelete = exec_foreign_update_delete;
    routine->AddForeignUpdateTargets = add_foreign_update_targets;
}

}  // namespace picoroute::pg::fdw
