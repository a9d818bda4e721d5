// The C++ / PostgreSQL boundary.
//
// guarded(fn): runs fn() and turns any C++ exception into a PostgreSQL ERROR raised after the try
// scope has ended, so no exception ever unwinds through a PostgreSQL frame. Every SQL-callable
// function, FDW callback and hook enters C++ through it (SQL-callable functions by being defined
// with PICOROUTE_SQL_FUNCTION, sql_common.h, which adds the preload check).
//
// pg_call(fn): runs PostgreSQL code that may ereport() from inside C++; the PostgreSQL error is
// caught with PG_TRY and rethrown as a C++ PgError, so the longjmp never crosses a live C++
// destructor. guarded() re-raises a PgError as the original PostgreSQL error.
#pragma once

extern "C" {
#include "postgres.h"
#include "fmgr.h"
#include "utils/elog.h"
}

#include "core/errors.h"

#include <cstdio>
#include <exception>
#include <new>
#include <utility>

namespace picoroute::pg {

// A PostgreSQL error caught by pg_call, carried through C++ frames.
class PgError : public std::exception {
  public:
    explicit PgError(ErrorData *data) : data_(data) {}
    ErrorData *data() const { return data_; }
    const char *what() const noexcept override {
        return data_ ? data_->message : "PostgreSQL error";
    }

  private:
    ErrorData *data_;
};

// True for an error raised by this backend's own interrupt handling (statement_timeout, a query
// cancel, a terminate or shutdown: SQLSTATE class 57) or any FATAL: a caller that tolerates remote
// errors must still let these end the statement. Picodata never answers with class 57 (it has no
// cancel).
inline bool is_local_interrupt(const PgError &e) {
    const ErrorData *d = e.data();
    return d != nullptr && (d->elevel >= FATAL ||
                            ERRCODE_TO_CATEGORY(d->sqlerrcode) == ERRCODE_OPERATOR_INTERVENTION);
}

// A C++-side error that already knows its SQLSTATE, message, detail and hint.
class SqlError : public std::exception {
  public:
    SqlError(int sqlstate, std::string message, std::string detail = {}, std::string hint = {})
        : sqlstate_(sqlstate),
          message_(std::move(message)),
          detail_(std::move(detail)),
          hint_(std::move(hint)) {}
    int sqlstate() const { return sqlstate_; }
    const char *what() const noexcept override { return message_.c_str(); }
    const std::string &detail() const { return detail_; }
    const std::string &hint() const { return hint_; }

  private:
    int sqlstate_;
    std::string message_, detail_, hint_;
};

int sqlstate_for(ErrorKind kind);

// Plain buffers describing an error to raise once every C++ object is gone. Deliberately left
// uninitialised: guarded() runs on every call of every function, and only the error path (which
// fills every field in capture_current_exception) may pay for the 4 kB.
struct PendingError {
    int sqlstate;
    ErrorData *pg;
    char message[2048];
    char detail[1024];
    char hint[1024];
};

void capture_current_exception(PendingError &out) noexcept;
[[noreturn]] void raise_pending(const PendingError &error);

template <typename Fn>
auto guarded(Fn &&fn) -> decltype(fn()) {
    PendingError pending;
    try {
        return fn();
    } catch (...) {
        capture_current_exception(pending);
    }
    raise_pending(pending);
}

template <typename Fn>
void pg_call(Fn &&fn) {
    MemoryContext oldcontext = CurrentMemoryContext;
    ErrorData *caught = nullptr;
    PG_TRY();
    { fn(); }
    PG_CATCH();
    {
        MemoryContextSwitchTo(oldcontext);
        caught = CopyErrorData();
        FlushErrorState();
    }
    PG_END_TRY();
    if (caught != nullptr)
        throw PgError(caught);
}

}  // namespace picoroute::pg
