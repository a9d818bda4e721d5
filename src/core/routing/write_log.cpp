#include "core/routing/write_log.h"

namespace picoroute::routing {

void WriteLog::record_answer(const std::string &address, bool counted, uint64_t rows) {
    if (counted)
        committed_[address] += rows;
    else
        uncounted_[address] += 1;
    changes_++;
}

void WriteLog::record_unknown(const std::string &address) {
    unknown_.insert(address);
    changes_++;
}

bool WriteLog::wrote() const {
    if (!unknown_.empty() || !uncounted_.empty())
        return true;
    for (const auto &entry : committed_)
        if (entry.second > 0)
            return true;
    return false;
}

namespace {

std::string join(const std::set<std::string> &names) {
    std::string out;
    for (const std::string &name : names)
        out += (out.empty() ? "" : ", ") + name;
    return out;
}

}  // namespace

std::string WriteLog::summary() const {
    told_ = changes_;
    uint64_t total = 0;
    std::string where;
    for (const auto &[address, rows] : committed_) {
        if (rows == 0)
            continue;
        total += rows;
        where += (where.empty() ? "" : ", ") + address + ": " + std::to_string(rows);
    }
    std::string out;
    if (total > 0)
        out = std::to_string(total) +
              " rows of this statement were already committed on Picodata (" + where +
              "); they are not undone.";
    if (!uncounted_.empty()) {
        std::set<std::string> applied;
        for (const auto &entry : uncounted_)
            applied.insert(entry.first);
        out += std::string(out.empty() ? "" : " ") +
               "A statement of it that reports no row count (TRUNCATE TABLE) was already applied "
               "on instance " +
               join(applied) + "; that is not undone.";
    }
    if (out.empty() && unknown_.empty())
        return "No row of this statement was committed on Picodata.";
    return out;
}

std::string WriteLog::account() const {
    if (told() || !wrote())
        return "";
    std::string out = summary();
    if (!unknown_.empty())
        out += std::string(out.empty() ? "" : " ") + "Its outcome is unknown on instance " +
               join(unknown_) + ": it was sent there and may have been applied.";
    return out;
}

void WriteLog::record(const std::string &address, const Answer &answer) {
    if (answer.status == Answer::Status::Command)
        record_answer(address, answer.counted, answer.counted ? answer.rows : 0);
}

void WriteLog::record_abandoned(const std::vector<Abandoned> &abandoned) {
    for (const Abandoned &a : abandoned) {
        if (a.outcome == Abandoned::Applied)
            record_answer(a.address, true, a.rows);
        else if (a.outcome == Abandoned::Unknown || a.outcome == Abandoned::Running)
            record_unknown(a.address);
    }
}

std::string WriteLog::record_failure(const std::string &address, bool spans, const Answer &answer) {
    if (!proven_not_run(answer, spans))
        record_unknown(address);
    const std::string where = "The statement failed on instance " + address;
    if (spans)
        return where +
               ". It spans several replicasets, and Picodata does not apply such a statement "
               "atomically: it may have been applied on some of them. ";
    switch (outcome(answer)) {
        case Outcome::NotRun:
            return where + " before running and was not applied there. ";
        case Outcome::Unknown:
            return where + " after it was sent on to a storage: it may have been applied there. ";
        case Outcome::Failed:
            break;
    }
    return where + ". ";
}

}  // namespace picoroute::routing
