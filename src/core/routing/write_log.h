// What a write statement has done on Picodata so far, instance by instance, and what an error that
// ends it must say about that.
//
// Picodata commits every statement on its own: a write that picoroute sends in several remote
// statements (one per owner and batch, several tables of a TRUNCATE) is not undone when a later one
// fails, when the local statement is cancelled or times out, or when anything else ends it. So
// every error of a statement that may have written somewhere says where: the rows each instance
// reported committed, the statements applied without a row count (TRUNCATE TABLE), and the
// instances whose outcome is unknown (the statement was sent and no answer told: a lost
// connection, an interrupted wait, a statement Picodata cannot stop, a remote error raised after
// it was sent).
//
// The place that raises an error usually knows best what to say and appends summary() to its
// DETAIL itself; whatever else ends the statement (an interrupt between two batches, a local error,
// a wait that is cut short) gets account() appended by the statement's error hook
// (pg/remote/write_ledger.h). A log remembers whether its present content was told, so an error
// says it once.
#pragma once
#include "core/firewall.h"
#include "core/routing/answer.h"

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace picoroute::routing {

// What became of a statement whose answer was not collected (the wait was interrupted). Running:
// the server gave no cancel key (Picodata never does), so nothing could stop the statement: it runs
// to its end there. Unknown: a cancel request was sent, no answer came in time. Applied and
// NotApplied: the whole answer had arrived (`rows`: what it reported applied).
struct Abandoned {
    std::string address;
    enum Outcome { Unknown, Running, Applied, NotApplied } outcome = Unknown;
    uint64_t rows = 0;
};

class WriteLog {
  public:
    // An answer of a write statement on `address`: its row count (`counted`), or applied without
    // one (TRUNCATE TABLE answers its command tag only).
    void record_answer(const std::string &address, bool counted, uint64_t rows);
    // A statement sent to `address` whose outcome is not known.
    void record_unknown(const std::string &address);
    // The answer of a write statement on `address`: recorded when it is a command status (its
    // rows, or applied without a count); any other answer says nothing of what was applied.
    void record(const std::string &address, const Answer &answer);
    // What became of the statements a write abandoned (an interrupted wait).
    void record_abandoned(const std::vector<Abandoned> &abandoned);
    // A write failed with `answer` (an error) on `address`: the sentence its DETAIL carries about
    // that instance: "not applied there" only for an error Picodata raises before running the
    // statement, "may have been applied" when it may have run (`spans`: on some of the replicasets
    // it spans, which Picodata does not write atomically). An outcome the answer does not prove is
    // recorded as unknown.
    std::string record_failure(const std::string &address, bool spans, const Answer &answer);

    // Rows each instance reported committed.
    const std::map<std::string, uint64_t> &committed() const { return committed_; }
    const std::set<std::string> &unknown() const { return unknown_; }
    // Something was, or may have been, written.
    bool wrote() const;

    // The sentence an error's DETAIL carries about the rows: "N rows of this statement were
    // already committed on Picodata (address: n, ...); they are not undone.", the statements
    // applied without a row count, or, when nothing was committed and every outcome is known, "No
    // row of this statement was committed on Picodata."; "" when nothing was committed and some
    // outcome is unknown (the caller says which). Marks the log as told.
    std::string summary() const;
    // For an error that has not said it yet (told() false) and a log that wrote(): summary() and
    // the instances whose outcome is unknown; else "". Marks the log as told.
    std::string account() const;
    // Whether an error already said what the log holds now.
    bool told() const { return told_ == changes_; }

  private:
    std::map<std::string, uint64_t> committed_;
    std::map<std::string, uint64_t> uncounted_;  // statements applied without a row count
    std::set<std::string> unknown_;
    uint64_t changes_ = 0;
    mutable uint64_t told_ = 0;
};

}  // namespace picoroute::routing
