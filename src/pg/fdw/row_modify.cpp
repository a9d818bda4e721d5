// UPDATE and DELETE that cannot run as one remote statement (a SET expression or a condition
// Picodata cannot evaluate, a join with a local relation such as UPDATE ... FROM (VALUES ...)),
// run as postgres_fdw runs a modification it cannot push: the rows are read by the scan below
// (with the whole old row, "wholerow"), the new values are computed here, and each row is written
// by its identity, one statement per row:
//
//     UPDATE "t" SET "d" = $1, ... WHERE "id" = $2 [AND "k" = $3]
//     DELETE FROM "t" WHERE "id" = $1 [AND "k" = $2]
//
// The identity is the table's primary key (the table option primary_key, else index 0 of
// `_pico_index`, read once per statement) and its sharding key: Picodata keeps a primary key
// unique per storage, and the sharding key both routes the statement to the owner of the row's
// bucket and makes the pair unique. Rows are buffered up to batch_size and sent grouped by owner
// (core/routing/statement.h): the owners in parallel, each owner's statements one after the other.
// Each statement commits on its own; any error that ends the UPDATE or DELETE reports what was
// committed where (the statement's WriteLog, pg/remote/write_ledger.h). A
// row changed between the read and the write is overwritten with values computed from the read
// (no lock is taken); one deleted meanwhile is not written, and a WARNING counts such rows.
extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "foreign/foreign.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/appendinfo.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/varlena.h"
}

#include "core/routing/grouping.h"
#include "pg/fdw/declcheck.h"
#include "pg/fdw/deparse.h"
#include "pg/fdw/dialect.h"
#include "pg/fdw/options.h"
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

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

using namespace picoroute;
using namespace picoroute::pg;

namespace picoroute::pg::fdw {

namespace {

// One buffered row: its statement and parameter values, and its sharding-key values.
struct PendingRow {
    const char *sql;
    const char **values;
    int nvalues;
    Datum *keys;
    bool *key_nulls;
};

struct RowModifyState {
    ModifyKind kind;  // first: tells EndForeignModify which state this is
    Relation rel;
    TableInfo *table;
    CmdType op;
    List *target_attrs;  // UPDATE: the columns set
    int nident;          // identity columns: the primary key, then the rest of the sharding key
    AttrNumber *ident;
    AttrNumber wholerow;  // the old row, a junk column of the plan below
    TupleTableSlot *old_slot;
    FmgrInfo *out;  // per attribute of rel
    Oid *key_types;
    int batch_size;
    Oid userid;
    MemoryContext row_cxt;
    PendingRow *rows;
    int nrows;
    uint64 sent;     // rows written by this statement
    uint64 applied;  // rows the remote statements changed
    WriteLog *log;   // what the statement wrote so far, by instance (write_ledger.h)
};

// The primary key's column names: the option primary_key, else index 0 of `_pico_index` (parts
// [["id","integer",null,false,null], ...], test/int/test_basics.py:451@25.5.10). C++: guarded().
std::vector<std::string> remote_primary_key(TableInfo *t, Oid userid) {
    ConnParams params = conn_params_for(t->serverid, userid);
    std::vector<Job> jobs(1);
    {
        MapRef map = current_map();
        jobs[0].target = coordinator_target(*map.view);
    }
    std::string name = t->remote_table;
    jobs[0].sql = "SELECT \"id\" FROM \"_pico_table\" WHERE \"name\" = $1";
    jobs[0].values.push_back(name.c_str());
    run_jobs(jobs, params, "", ReadPref::Leader, Retry::Read);
    if (PQntuples(jobs[0].result.get()) == 0)
        throw SqlError(ERRCODE_UNDEFINED_TABLE,
                       "picoroute: table \"" + name + "\" is not in Picodata's _pico_table");
    std::string id = PQgetvalue(jobs[0].result.get(), 0, 0);
    jobs[0].result.reset();
    jobs[0].sql = "SELECT \"parts\" FROM \"_pico_index\" WHERE \"table_id\" = $1 AND \"id\" = 0";
    jobs[0].values = {id.c_str()};
    run_jobs(jobs, params, "", ReadPref::Leader, Retry::Read);
    std::vector<std::string> names;
    if (PQntuples(jobs[0].result.get()) == 0)
        return names;
    try {
        for (const auto &part : nlohmann::json::parse(PQgetvalue(jobs[0].result.get(), 0, 0))) {
            const nlohmann::json &field = part.is_array() ? part.at(0) : part.at("field");
            if (field.get<std::string>() != "bucket_id")
                names.push_back(field.get<std::string>());
        }
    } catch (const nlohmann::json::exception &e) {
        throw SqlError(ERRCODE_FDW_INVALID_DATA_TYPE,
                       "picoroute: cannot read the primary key of table \"" + name +
                           "\" in _pico_index: " + e.what());
    }
    return names;
}

// The table option primary_key, split; NIL when not given.
List *option_primary_key(Oid relid) {
    ListCell *lc;
    foreach (lc, GetForeignTable(relid)->options) {
        DefElem *def = lfirst_node(DefElem, lc);
        if (strcmp(def->defname, "primary_key") == 0) {
            List *names = NIL;
            SplitIdentifierString(pstrdup(defGetString(def)), ',', &names);
            return names;
        }
    }
    return NIL;
}

// The primary key's names: the table option primary_key, else the catalog (plain: may ereport).
List *primary_key_names(TableInfo *t, Oid userid) {
    List *names = option_primary_key(t->relid);
    if (names != NIL)
        return names;
    guarded([&] {
        std::vector<std::string> remote;
        std::string hint = "Or give the foreign table its primary key: ALTER FOREIGN TABLE " +
                           std::string(get_rel_name(t->relid)) +
                           " OPTIONS (ADD primary_key 'a, b').";
        try {
            remote = remote_primary_key(t, userid);
        } catch (const PgError &e) {
            // A remote error (no privilege on _pico_table or _pico_index): say what else works.
            if (!is_local_interrupt(e) && e.data()->hint == nullptr)
                pg_call([&] { e.data()->hint = pstrdup(hint.c_str()); });
            throw;
        } catch (const SqlError &e) {
            throw SqlError(e.sqlstate(), e.what(), e.detail(), hint);
        }
        pg_call([&] {
            for (const std::string &n : remote)
                names = lappend(names, pstrdup(n.c_str()));
        });
    });
    return names;
}

// The identity columns: the primary key, then the sharding-key columns not in it.
void resolve_identity(RowModifyState *s) {
    TableInfo *t = s->table;
    List *names = primary_key_names(t, s->userid);
    if (names == NIL)
        ereport(ERROR, (errcode(ERRCODE_FDW_ERROR),
                        errmsg("picoroute: the primary key of foreign table \"%s\" is not known",
                               get_rel_name(t->relid)),
                        errhint("Set the table option primary_key.")));
    s->ident =
        static_cast<AttrNumber *>(palloc(sizeof(AttrNumber) * (list_length(names) + t->nkeys)));
    ListCell *lc;
    foreach (lc, names) {
        const char *name = static_cast<const char *>(lfirst(lc));
        AttrNumber attnum = get_attnum(t->relid, name);
        if (attnum == InvalidAttrNumber)
            ereport(ERROR,
                    (errcode(ERRCODE_UNDEFINED_COLUMN),
                     errmsg("picoroute: cannot %s foreign table \"%s\" row by row: its primary key "
                            "column \"%s\" is not declared",
                            s->op == CMD_UPDATE ? "UPDATE" : "DELETE FROM", get_rel_name(t->relid),
                            name),
                     errdetail("Each row is written by its primary key."),
                     errhint("Add the column to the foreign table.")));
        s->ident[s->nident++] = attnum;
    }
    for (int k = 0; k < t->nkeys; k++) {
        bool listed = false;
        for (int i = 0; i < s->nident; i++)
            listed = listed || s->ident[i] == t->key_attnums[k];
        if (!listed)
            s->ident[s->nident++] = t->key_attnums[k];
    }
}

// The statement of one row; identity columns whose value is NULL are written IS NULL.
char *row_sql(RowModifyState *s, const bool *ident_nulls) {
    StringInfoData sql;
    initStringInfo(&sql);
    int n = 0;
    ListCell *lc;
    if (s->op == CMD_UPDATE) {
        appendStringInfo(&sql, "UPDATE %s SET ", quote_remote_identifier(s->table->remote_table));
        foreach (lc, s->target_attrs) {
            appendStringInfo(&sql, "%s%s = $%d", lc == list_head(s->target_attrs) ? "" : ", ",
                             quote_remote_identifier(get_attname(
                                 s->table->relid, static_cast<AttrNumber>(lfirst_int(lc)), false)),
                             ++n);
        }
    } else {
        appendStringInfo(&sql, "DELETE FROM %s", quote_remote_identifier(s->table->remote_table));
    }
    for (int i = 0; i < s->nident; i++) {
        const char *col = quote_remote_identifier(get_attname(s->table->relid, s->ident[i], false));
        appendStringInfoString(&sql, i == 0 ? " WHERE " : " AND ");
        if (ident_nulls != nullptr && ident_nulls[i])
            appendStringInfo(&sql, "%s IS NULL", col);
        else
            appendStringInfo(&sql, "%s = $%d", col, ++n);
    }
    return sql.data;
}

// The old row (the "wholerow" junk column of the plan below) into s->old_slot.
void load_old_row(RowModifyState *s, TupleTableSlot *plan_slot) {
    bool isnull = false;
    Datum datum = ExecGetJunkAttribute(plan_slot, s->wholerow, &isnull);
    if (isnull)
        elog(ERROR, "picoroute: the old row of an UPDATE or DELETE is NULL");
    HeapTupleData tuple;
    tuple.t_data = DatumGetHeapTupleHeader(datum);
    tuple.t_len = HeapTupleHeaderGetDatumLength(tuple.t_data);
    ItemPointerSetInvalid(&tuple.t_self);
    tuple.t_tableOid = RelationGetRelid(s->rel);
    ExecForceStoreHeapTuple(&tuple, s->old_slot, false);
}

// The text of one value in Picodata's format (between set_transmission_modes and reset).
const char *value_text(RowModifyState *s, TupleTableSlot *slot, AttrNumber attnum, bool *isnull) {
    Datum value = slot_getattr(slot, attnum, isnull);
    if (*isnull)
        return nullptr;
    Oid type = TupleDescAttr(RelationGetDescr(s->rel), attnum - 1)->atttypid;
    if (type == JSONOID || type == JSONBOID)
        refuse_json_value(s->rel, attnum);
    return OutputFunctionCall(&s->out[attnum - 1], value);
}

// Buffers the statement of one row: the new values from `slot` (UPDATE), the identity and the
// sharding key from the old row.
void buffer_row(RowModifyState *s, TupleTableSlot *slot) {
    TableInfo *t = s->table;
    MemoryContext old = MemoryContextSwitchTo(s->row_cxt);
    PendingRow *row = &s->rows[s->nrows];
    int nset = list_length(s->target_attrs);
    row->values = static_cast<const char **>(palloc0(sizeof(char *) * (nset + s->nident + 1)));
    bool *ident_nulls = static_cast<bool *>(palloc0(sizeof(bool) * (s->nident + 1)));
    int nestlevel = set_transmission_modes();
    int n = 0;
    bool isnull = false;
    ListCell *lc;
    foreach (lc, s->target_attrs)
        row->values[n++] = value_text(s, slot, static_cast<AttrNumber>(lfirst_int(lc)), &isnull);
    for (int i = 0; i < s->nident; i++) {
        const char *text = value_text(s, s->old_slot, s->ident[i], &ident_nulls[i]);
        if (!ident_nulls[i])
            row->values[n++] = text;
    }
    reset_transmission_modes(nestlevel);
    row->nvalues = n;
    row->sql = row_sql(s, ident_nulls);
    row->keys = static_cast<Datum *>(palloc0(sizeof(Datum) * (t->nkeys + 1)));
    row->key_nulls = static_cast<bool *>(palloc0(sizeof(bool) * (t->nkeys + 1)));
    for (int k = 0; k < t->nkeys; k++) {
        Form_pg_attribute attr = TupleDescAttr(RelationGetDescr(s->rel), t->key_attnums[k] - 1);
        Datum value = slot_getattr(s->old_slot, t->key_attnums[k], &row->key_nulls[k]);
        row->keys[k] =
            row->key_nulls[k] ? (Datum)0 : datumCopy(value, attr->attbyval, attr->attlen);
    }
    s->nrows++;
    MemoryContextSwitchTo(old);
}

// Sends the buffered rows, each to the owner of its bucket; counts what they changed.
void send_rows(RowModifyState *s) {
    TableInfo *t = s->table;
    guarded([&] {
        MapRef map = current_map();
        const SnapshotView &view = *map.view;
        int32_t tier = require_tier(view, map.generation, t->tier);
        uint32_t count = view.tier(tier).bucket_count;
        bool routed = !t->global && t->nkeys > 0 && count > 0;
        std::vector<routing::Group> groups = routing::group_by_owner(
            s->nrows,
            [&](int r) -> std::optional<uint32_t> {
                if (!routed)
                    return std::nullopt;
                return key_bucket(t->nkeys, s->key_types, s->rows[r].keys, s->rows[r].key_nulls,
                                  count, t->hash_rule);
            },
            owner_lookups(view, tier, ReadPref::Leader, false));
        std::string option = option_clause(t, false);
        std::vector<Job> jobs;
        for (routing::Group &group : groups) {
            for (int r : group.members) {
                Job job;
                job.target = routing::member_target(group);  // one statement per row
                job.sql = std::string(s->rows[r].sql) + option;
                job.values.assign(s->rows[r].values, s->rows[r].values + s->rows[r].nvalues);
                job.may_span = !t->global && !one_replicaset(job.target, t->tier);
                job.table = t->relid;
                jobs.push_back(std::move(job));
            }
        }
        run_jobs(jobs, conn_params_for(t->serverid, s->userid), t->tier, ReadPref::Leader,
                 Retry::Write, s->log);
        for (const Job &job : jobs) {
            const char *n = PQcmdTuples(job.result.get());
            if (n != nullptr && n[0] != '\0')
                s->applied += strtoull(n, nullptr, 10);
        }
    });
}

void flush_rows(RowModifyState *s) {
    if (s->nrows == 0)
        return;
    before_remote_write(RelationGetRelationName(s->rel));
    s->sent += s->nrows;
    send_rows(s);
    s->nrows = 0;
    MemoryContextReset(s->row_cxt);
}

}  // namespace

void row_modify_begin(ModifyTableState *mtstate, ResultRelInfo *rinfo, CmdType op,
                      List *target_attrs) {
    EState *estate = mtstate->ps.state;
    Relation rel = rinfo->ri_RelationDesc;
    RowModifyState *s = static_cast<RowModifyState *>(palloc0(sizeof(RowModifyState)));
    s->kind.row_by_row = true;
    s->rel = rel;
    s->table = get_table_info(RelationGetRelid(rel));
    s->op = op;
    s->target_attrs = target_attrs;
    RangeTblEntry *rte =
        rinfo->ri_RangeTableIndex > 0 ? exec_rt_fetch(rinfo->ri_RangeTableIndex, estate) : nullptr;
    s->userid = user_for_rte(rte);
    check_declaration_at_first_use(s->table, s->userid);
    resolve_identity(s);
    s->wholerow =
        ExecFindJunkAttributeInTlist(outerPlanState(mtstate)->plan->targetlist, "wholerow");
    if (!AttributeNumberIsValid(s->wholerow))
        elog(ERROR, "picoroute: the old row of an UPDATE or DELETE is not read");
    TupleDesc desc = RelationGetDescr(rel);
    // Virtual: the old row is deformed at once (its values point into the row of the plan below).
    s->old_slot = ExecInitExtraTupleSlot(estate, desc, &TTSOpsVirtual);
    s->out = static_cast<FmgrInfo *>(palloc0(sizeof(FmgrInfo) * (desc->natts + 1)));
    for (int i = 0; i < desc->natts; i++) {
        Form_pg_attribute attr = TupleDescAttr(desc, i);
        if (attr->attisdropped)
            continue;
        Oid out;
        bool varlena;
        getTypeOutputInfo(attr->atttypid, &out, &varlena);
        fmgr_info(out, &s->out[i]);
    }
    s->key_types = static_cast<Oid *>(palloc0(sizeof(Oid) * (s->table->nkeys + 1)));
    for (int k = 0; k < s->table->nkeys; k++)
        s->key_types[k] = TupleDescAttr(desc, s->table->key_attnums[k] - 1)->atttypid;
    s->batch_size = Max(s->table->batch_size, 1);
    s->rows = static_cast<PendingRow *>(palloc0(sizeof(PendingRow) * s->batch_size));
    s->row_cxt =
        AllocSetContextCreate(estate->es_query_cxt, "picoroute row by row", ALLOCSET_DEFAULT_SIZES);
    s->log = guarded([&] { return statement_write_log(estate->es_query_cxt); });
    rinfo->ri_FdwState = s;
}

TupleTableSlot *row_modify_exec(ResultRelInfo *rinfo, TupleTableSlot *slot,
                                TupleTableSlot *plan_slot) {
    RowModifyState *s = static_cast<RowModifyState *>(rinfo->ri_FdwState);
    load_old_row(s, plan_slot);
    buffer_row(s, slot);
    if (s->nrows >= s->batch_size)
        flush_rows(s);
    // RETURNING: the row as written (UPDATE: the new row computed here; DELETE: the old row).
    if (s->op == CMD_DELETE)
        ExecCopySlot(slot, s->old_slot);
    return slot;
}

void row_modify_end(ResultRelInfo *rinfo) {
    RowModifyState *s = static_cast<RowModifyState *>(rinfo->ri_FdwState);
    if (s == nullptr)
        return;
    flush_rows(s);
    if (s->applied < s->sent)
        ereport(WARNING,
                (errmsg("picoroute: %llu of the %llu rows this %s read from \"%s\" were not "
                        "there any more when written",
                        static_cast<unsigned long long>(s->sent - s->applied),
                        static_cast<unsigned long long>(s->sent),
                        s->op == CMD_UPDATE ? "UPDATE" : "DELETE", RelationGetRelationName(s->rel)),
                 errdetail("Another statement deleted them, or changed their primary key, between "
                           "the read and the write; the row count of this statement includes "
                           "them.")));
}

// EXPLAIN: the statement of one row (the identity as known at planning: the option primary_key,
// else "<primary key>") and how the rows are sent.
void row_modify_explain(ResultRelInfo *rinfo, CmdType op, List *target_attrs, ExplainState *es) {
    RowModifyState *s = static_cast<RowModifyState *>(rinfo->ri_FdwState);
    if (es->verbose && s != nullptr)
        ExplainPropertyText("Remote SQL", row_sql(s, nullptr), es);
    else if (es->verbose) {
        RowModifyState plan = {};
        plan.table = get_table_info(RelationGetRelid(rinfo->ri_RelationDesc));
        plan.op = op;
        plan.target_attrs = target_attrs;
        // The identity is known now when the option gives the primary key (else it is read
        // from the cluster when the statement starts).
        bool known = option_primary_key(plan.table->relid) != NIL;
        if (known)
            resolve_identity(&plan);
        StringInfoData sql;
        initStringInfo(&sql);
        appendStringInfoString(&sql, row_sql(&plan, nullptr));
        if (!known)
            appendStringInfoString(&sql, " WHERE <primary key and sharding key> = $n, ...");
        ExplainPropertyText("Remote SQL", sql.data, es);
    }
    ExplainPropertyText("Row by Row",
                        "each row read below is written by its primary key, one statement per "
                        "row, grouped by the owner of its bucket",
                        es);
    // EXPLAIN ANALYZE prints before EndForeignModify: what is buffered is sent now.
    if (es->analyze && s != nullptr)
        flush_rows(s);
    if (es->analyze && s != nullptr)
        ExplainPropertyInteger("Remote Rows Changed", nullptr, static_cast<int64>(s->applied), es);
}

void add_foreign_update_targets(PlannerInfo *root, Index rtindex, RangeTblEntry *, Relation) {
    // UPDATE: PostgreSQL adds the whole old row itself (the unchanged columns come from it).
    if (root->parse->commandType != CMD_DELETE)
        return;
    Var *var = makeVar(rtindex, InvalidAttrNumber, RECORDOID, -1, InvalidOid, 0);
    add_row_identity_var(root, var, rtindex, "wholerow");
}

}  // namespace picoroute::pg::fdw
