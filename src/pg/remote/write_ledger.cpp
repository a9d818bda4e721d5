// The live write logs of this backend and the hooks that tell them in errors (write_ledger.h).
extern "C" {
#include "postgres.h"

#include "executor/executor.h"
#include "tcop/utility.h"
#include "utils/memutils.h"
}

#include "pg/remote/write_ledger.h"

#include "pg/guard.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace picoroute::pg::remote {

namespace {

// One live log, in a list ordered by creation; unlinked and freed when its memory context goes.
struct LedgerEntry {
    WriteLog *log;
    LedgerEntry *prev;
    LedgerEntry *next;
    MemoryContextCallback forget;
};

LedgerEntry *ledger_head = nullptr;
LedgerEntry *ledger_tail = nullptr;

void forget_entry(void *arg) {
    LedgerEntry *e = static_cast<LedgerEntry *>(arg);
    (e->prev != nullptr ? e->prev->next : ledger_head) = e->next;
    (e->next != nullptr ? e->next->prev : ledger_tail) = e->prev;
    delete e->log;
    e->log = nullptr;
}

// What the live logs hold that no error said yet, in malloc'd memory (no PostgreSQL call, no C++
// object outlives it); nullptr when there is nothing to say or no memory to say it.
char *untold_account() noexcept {
    try {
        std::string text;
        for (LedgerEntry *e = ledger_head; e != nullptr; e = e->next) {
            std::string account = e->log->account();
            if (!account.empty())
                text += (text.empty() ? "" : " ") + account;
        }
        return text.empty() ? nullptr : strdup(text.c_str());
    } catch (...) {
        return nullptr;
    }
}

// In a PG_CATCH block: when the live logs have something untold, the caught error is raised again
// with it appended to its DETAIL; otherwise returns (the caller re-throws the error as it is).
// `cxt` is the memory context of the frame that caught it.
void tell_writes(MemoryContext cxt) {
    if (ledger_head == nullptr)
        return;
    char *account = untold_account();
    if (account == nullptr)
        return;
    MemoryContextSwitchTo(cxt);
    ErrorData *edata = CopyErrorData();
    FlushErrorState();
    char *text = pstrdup(account);
    free(account);
    edata->detail = edata->detail != nullptr ? psprintf("%s\n%s", edata->detail, text) : text;
    ReThrowError(edata);
}

ExecutorRun_hook_type prev_executor_run = nullptr;
ExecutorFinish_hook_type prev_executor_finish = nullptr;
ProcessUtility_hook_type prev_process_utility = nullptr;

void ledger_executor_run(QueryDesc *query, ScanDirection direction, uint64 count,
                         bool execute_once) {
    MemoryContext cxt = CurrentMemoryContext;
    PG_TRY();
    {
        if (prev_executor_run != nullptr)
            prev_executor_run(query, direction, count, execute_once);
        else
            standard_ExecutorRun(query, direction, count, execute_once);
    }
    PG_CATCH();
    {
        tell_writes(cxt);
        PG_RE_THROW();
    }
    PG_END_TRY();
}

// AFTER triggers run here, after the rows were sent.
void ledger_executor_finish(QueryDesc *query) {
    MemoryContext cxt = CurrentMemoryContext;
    PG_TRY();
    {
        if (prev_executor_finish != nullptr)
            prev_executor_finish(query);
        else
            standard_ExecutorFinish(query);
    }
    PG_CATCH();
    {
        tell_writes(cxt);
        PG_RE_THROW();
    }
    PG_END_TRY();
}

// COPY FROM (its input is read between two batches) and TRUNCATE run here.
void ledger_process_utility(PlannedStmt *pstmt, const char *query_string, bool read_only_tree,
                            ProcessUtilityContext context, ParamListInfo params,
                            QueryEnvironment *query_env, DestReceiver *dest, QueryCompletion *qc) {
    MemoryContext cxt = CurrentMemoryContext;
    PG_TRY();
    {
        if (prev_process_utility != nullptr)
            prev_process_utility(pstmt, query_string, read_only_tree, context, params, query_env,
                                 dest, qc);
        else
            standard_ProcessUtility(pstmt, query_string, read_only_tree, context, params, query_env,
                                    dest, qc);
    }
    PG_CATCH();
    {
        tell_writes(cxt);
        PG_RE_THROW();
    }
    PG_END_TRY();
}

}  // namespace

WriteLog *statement_write_log(MemoryContext cxt) {
    auto log = std::make_unique<WriteLog>();
    LedgerEntry *e = nullptr;
    pg_call([&] {
        e = static_cast<LedgerEntry *>(MemoryContextAllocZero(cxt, sizeof(LedgerEntry)));
        e->forget.func = forget_entry;
        e->forget.arg = e;
        MemoryContextRegisterResetCallback(cxt, &e->forget);
    });
    e->log = log.release();
    e->prev = ledger_tail;
    (ledger_tail != nullptr ? ledger_tail->next : ledger_head) = e;
    ledger_tail = e;
    return e->log;
}

void install_write_ledger_hooks() {
    prev_executor_run = ExecutorRun_hook;
    ExecutorRun_hook = ledger_executor_run;
    prev_executor_finish = ExecutorFinish_hook;
    ExecutorFinish_hook = ledger_executor_finish;
    prev_process_utility = ProcessUtility_hook;
    ProcessUtility_hook = ledger_process_utility;
}

}  // namespace picoroute::pg::remote
