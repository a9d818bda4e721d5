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

}  // namespace picoroute::routing
