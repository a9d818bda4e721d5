// TRUNCATE of picoroute foreign tables (ExecForeignTruncate): PostgreSQL calls it once per foreign
// server with that server's relations, after its own checks and locks.
//
// Picodata's TRUNCATE TABLE is DDL: the instance that receives it hands it to the governor, which
// empties a sharded table on every master of its tier and a global table on every instance, then
// answers the command tag TRUNCATE TABLE. Its grammar takes one table per statement and nothing
// else of PostgreSQL's (TruncateTable in query.pest, the same from 25.5.1 to 26.3.0). So each
// relation gets one `TRUNCATE TABLE "<remote name>"`, sent once, without a sharding key, to one
// master of the server's tier, the coordinator the keyless writes of the table use (routed.cpp),
// never as a scatter over masters. A remote table named by several of the relations is sent once.
//
// CASCADE and RESTART IDENTITY are accepted and mean nothing remotely: Picodata has no foreign keys
// (nothing references a table to cascade to) and no sequences or identity columns to restart.
// PostgreSQL itself applies both to what is local: the tables that reference a truncated one, and
// the sequences owned by the foreign tables' columns.
//
// Like every remote write, a TRUNCATE is committed by Picodata at once and stays when the local
// transaction rolls back: it goes through the same policy (picoroute.remote_write_in_transaction:
// refused, or a warning once per transaction block and a count for the warning at ROLLBACK). The
// declarations of all the relations are checked first; then they are sent one after another, and
// when one fails, the ones before it stay truncated: one write log for all of them says so in the
// error (remote/write_ledger.h).
extern "C" {
#include "postgres.h"

#include "foreign/fdwapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "nodes/pg_list.h"
#include "utils/memutils.h"
#include "utils/rel.h"
}

#include "pg/fdw/declcheck.h"
#include "pg/fdw/deparse.h"
#include "pg/fdw/options.h"
#include "pg/fdw/routed.h"
#include "pg/fdw/table_cache.h"
#include "pg/fdw/truncate.h"
#include "pg/guard.h"

#include <cstring>

namespace picoroute::pg::fdw {

namespace {

// The table as the statement routes it: never a scatter over masters (a bucket filter has no place
// in TRUNCATE) and no OPTION clause (TruncateTable takes OPTION (TIMEOUT = n) only).
TableInfo *truncate_routing(const TableInfo *table) {
    TableInfo *copy = static_cast<TableInfo *>(palloc(sizeof(TableInfo)));
    *copy = *table;
    copy->scatter = static_cast<int>(Scatter::Coordinator);
    copy->exec_options = false;
    return copy;
}

// Sends `TRUNCATE TABLE "<remote>"` for one relation (plain: may ereport).
void truncate_one(Relation rel, TableInfo *table, Oid userid, WriteLog *log) {
    StringInfoData sql;
    initStringInfo(&sql);
    appendStringInfo(&sql, "TRUNCATE TABLE %s", quote_remote_identifier(table->remote_table));
    RoutedSetup setup;
    setup.table = truncate_routing(table);
    setup.rel = rel;
    setup.userid = userid;
    RemoteStatement statement;
    statement.plan.sql = sql.data;
    statement.is_write = true;
    RoutedStatement *st = new_routed_statement(CurrentMemoryContext, setup, statement);
    st->log = log;
    execute_routed(st, nullptr);  // no parameter and no key: nothing is evaluated
    MemoryContextDelete(GetMemoryChunkContext(st));
}

}  // namespace

void exec_foreign_truncate(List *rels, DropBehavior, bool) {
    Oid userid = GetUserId();
    // Every declaration is checked before anything is sent: a mismatch on the last table must not
    // leave the first ones truncated.
    List *tables = NIL;
    ListCell *lc;
    foreach (lc, rels) {
        TableInfo *table = get_table_info(RelationGetRelid(static_cast<Relation>(lfirst(lc))));
        check_declaration_at_first_use(table, userid);
        tables = lappend(tables, table);
    }
    // The statement's memory: the log outlives each table's statement, and the error of a later one
    // says which instances already truncated the first ones.
    MemoryContext cxt = CurrentMemoryContext;
    WriteLog *log = guarded([&] { return statement_write_log(cxt); });
    List *sent = NIL;  // remote table names already truncated (one server per call)
    ListCell *tc;
    forboth(lc, rels, tc, tables) {
        TableInfo *table = static_cast<TableInfo *>(lfirst(tc));
        bool again = false;
        ListCell *sc;
        foreach (sc, sent)
            again =
                again || strcmp(static_cast<const char *>(lfirst(sc)), table->remote_table) == 0;
        if (again)
            continue;
        truncate_one(static_cast<Relation>(lfirst(lc)), table, userid, log);
        sent = lappend(sent, table->remote_table);
    }
}

}  // namespace picoroute::pg::fdw
