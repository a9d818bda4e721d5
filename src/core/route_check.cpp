// The pure parts of the route check (see route_check.h).
#include "core/route_check.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace picoroute::route_check {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
        s.remove_prefix(1);
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
        s.remove_suffix(1);
    return s;
}

bool starts_with(std::string_view s, std::string_view prefix) {
    return s.substr(0, prefix.size()) == prefix;
}

// A decimal number at the start of `s` (advanced past it); false when there is none or it does
// not fit 32 bits.
bool read_number(std::string_view *s, uint32_t *out) {
    size_t i = 0;
    uint64_t v = 0;
    while (i < s->size() && std::isdigit(static_cast<unsigned char>((*s)[i]))) {
        v = v * 10 + static_cast<uint64_t>((*s)[i] - '0');
        if (v > UINT32_MAX)
            return false;
        i++;
    }
    if (i == 0)
        return false;
    *out = static_cast<uint32_t>(v);
    s->remove_prefix(i);
    return true;
}

// "[1,5-7,3000]" (buckets_repr) into inclusive ranges; false when it is not of that form.
bool parse_ranges(std::string_view text, std::vector<std::pair<uint32_t, uint32_t>> *out) {
    if (text.size() < 2 || text.front() != '[' || text.back() != ']')
        return false;
    text = text.substr(1, text.size() - 2);
    while (!(text = trim(text)).empty()) {
        uint32_t first = 0, last = 0;
        if (!read_number(&text, &first))
            return false;
        last = first;
        text = trim(text);
        if (!text.empty() && text.front() == '-') {
            text.remove_prefix(1);
            text = trim(text);
            if (!read_number(&text, &last) || last < first)
                return false;
            text = trim(text);
        }
        out->emplace_back(first, last);
        if (text.empty())
            break;
        if (text.front() != ',')
            return false;
        text.remove_prefix(1);
    }
    return true;
}

// One candidate line: "buckets = <repr>" or "buckets <= <repr>"; nullopt when the line is not one.
std::optional<ExplainBuckets> parse_line(std::string_view raw) {
    std::string_view line = trim(raw);
    if (!starts_with(line, "buckets"))
        return std::nullopt;
    std::string_view rest = trim(line.substr(7));
    ExplainBuckets out;
    out.line = std::string(line);
    bool at_most = false;
    if (starts_with(rest, "<="))
        at_most = true;
    else if (!starts_with(rest, "="))
        return std::nullopt;
    std::string_view value = trim(rest.substr(at_most ? 2 : 1));
    if (value == "any") {
        out.kind = ExplainBuckets::Kind::Any;
    } else if (starts_with(value, "[") && parse_ranges(value, &out.ranges)) {
        out.kind = at_most ? ExplainBuckets::Kind::AtMost : ExplainBuckets::Kind::Exact;
    } else {
        // "unknown", "unknown(1..=2)" (26.2.1-rc1+), or a form this reader does not know.
        out.kind = ExplainBuckets::Kind::Unknown;
        out.ranges.clear();
    }
    return out;
}

}  // namespace

bool ExplainBuckets::contains(uint32_t bucket) const {
    for (const auto &[first, last] : ranges)
        if (first <= bucket && bucket <= last)
            return true;
    return false;
}

uint64_t ExplainBuckets::count() const {
    uint64_t n = 0;
    for (const auto &[first, last] : ranges)
        n += uint64_t{last} - first + 1;
    return n;
}

ExplainBuckets parse_explain_buckets(const std::vector<std::string> &lines) {
    ExplainBuckets found;
    for (const std::string &row : lines) {
        // A row may hold several lines (a client that joined them).
        size_t start = 0;
        while (start <= row.size()) {
            size_t end = row.find('\n', start);
            if (end == std::string::npos)
                end = row.size();
            if (std::optional<ExplainBuckets> b =
                    parse_line(std::string_view(row).substr(start, end - start)))
                found = std::move(*b);
            start = end + 1;
        }
    }
    return found;
}

Judgement judge(const ExplainBuckets &answer, uint32_t ours) {
    using Kind = ExplainBuckets::Kind;
    Judgement j;
    switch (answer.kind) {
        case Kind::Missing:
            j.reason = "the answer has no \"buckets\" line";
            return j;
        case Kind::Any:
        case Kind::Unknown:
            j.reason = "Picodata did not compute the statement's buckets: " + answer.line;
            return j;
        case Kind::Exact:
        case Kind::AtMost:
            break;
    }
    uint64_t n = answer.count();
    if (n == 1)
        j.picodata_bucket = answer.ranges.front().first;
    if (n == 0) {
        j.reason = "Picodata found no bucket for the key: " + answer.line;
    } else if (!answer.contains(ours)) {
        j.outcome = Outcome::Disagreed;
        j.reason = answer.line;
    } else if (n == 1) {
        j.outcome = Outcome::Agreed;
    } else {
        j.reason = "Picodata did not route the statement by its key: " + answer.line;
    }
    return j;
}

const std::vector<std::string> &sample_texts(std::string_view picodata_type) {
    // Chosen where encodings differ: -300 is a two-byte negative integer (d1), 1 the integral
    // double that hashes as an integer from 26.1.1 and 1.5 a fraction (both rules disagree on
    // the header), a decimal with a scale and an integral one, UTF-8 text beyond ASCII, a
    // datetime with and without nanoseconds.
    static const std::map<std::string, std::vector<std::string>, std::less<>> samples = {
        {"integer", {"1", "-300"}},
        {"string", {"picoroute", "ключ"}},
        {"boolean", {"true", "false"}},
        {"double", {"1", "1.5"}},
        {"decimal", {"1.5", "100"}},
        {"uuid", {"8f0c5a8e-3b1d-4c2a-9f6e-0123456789ab"}},
        {"datetime", {"2025-01-01 00:00:00+00", "2025-01-01 00:00:00.5+00"}},
    };
    static const std::vector<std::string> none;
    auto it = samples.find(picodata_type);
    return it == samples.end() ? none : it->second;
}

std::vector<std::vector<std::string>> key_samples(const std::vector<std::string> &picodata_types) {
    size_t n = 0;
    for (const std::string &type : picodata_types) {
        size_t k = sample_texts(type).size();
        if (k == 0)
            return {};
        n = std::max(n, k);
    }
    std::vector<std::vector<std::string>> keys(picodata_types.empty() ? 0 : n);
    for (size_t i = 0; i < keys.size(); i++)
        for (const std::string &type : picodata_types) {
            const std::vector<std::string> &values = sample_texts(type);
            keys[i].push_back(values[i % values.size()]);
        }
    return keys;
}

std::string format_sample(const std::vector<std::string> &picodata_types,
                          const std::vector<std::string> &values) {
    std::string out = "(";
    for (size_t i = 0; i < values.size(); i++) {
        const std::string type = i < picodata_types.size() ? picodata_types[i] : "";
        bool bare = type == "integer" || type == "double" || type == "decimal" || type == "boolean";
        out += i > 0 ? ", " : "";
        if (bare) {
            out += values[i];
            continue;
        }
        out += '\'';
        for (char c : values[i])
            out += c == '\'' ? std::string("''") : std::string(1, c);
        out += '\'';
    }
    return out + ")";
}

std::string signature_text(const std::vector<std::string> &picodata_types) {
    std::string out;
    for (const std::string &type : picodata_types)
        out += (out.empty() ? "" : ", ") + type;
    return out;
}

const char *state_name(State state) {
    switch (state) {
        case State::Pending:
            return "pending";
        case State::Agreed:
            return "agreed";
        case State::Disagreed:
            return "disagreed";
        case State::Unknown:
            return "unknown";
        case State::Empty:
            break;
    }
    return "";
}

int64_t retry_delay_ms(uint32_t attempts) {
    int64_t delay = kRetryFirstMs;
    for (uint32_t i = 1; i < attempts && delay < kRetryCapMs; i++)
        delay *= 2;
    return std::min(delay, kRetryCapMs);
}

Step next_step(State state, const Progress &progress, int64_t now_ms, bool may_check) {
    Step check = may_check ? Step::Check : Step::ByBucket;
    switch (state) {
        case State::Agreed:
            return Step::ByBucket;
        case State::Disagreed:
            return Step::ThroughCoordinator;
        case State::Pending:
            return now_ms - progress.claimed_at_ms >= kPendingStaleMs ? check : Step::ByBucket;
        case State::Unknown:
            return now_ms >= progress.retry_at_ms ? check : Step::ByBucket;
        case State::Empty:
            break;
    }
    return check;
}

void note_inconclusive(Progress *progress, int64_t now_ms) {
    progress->attempts++;
    progress->retry_at_ms = now_ms + retry_delay_ms(progress->attempts);
}

int pick_slot(const std::vector<SlotSummary> &slots, int64_t now_ms) {
    // Ranks: 0 empty, 1 another version (not being checked), 2 agreed or unknown or abandoned
    // pending of this version; never: a fresh pending, a disagreement of this version.
    int best = -1, best_rank = 3;
    int64_t best_used = 0;
    for (size_t i = 0; i < slots.size(); i++) {
        const SlotSummary &s = slots[i];
        bool fresh_pending =
            s.state == State::Pending && now_ms - s.claimed_at_ms < kPendingStaleMs;
        int rank;
        if (s.state == State::Empty)
            rank = 0;
        else if (fresh_pending || (s.current_version && s.state == State::Disagreed))
            continue;
        else if (!s.current_version)
            rank = 1;
        else
            rank = 2;
        if (rank < best_rank || (rank == best_rank && s.last_used_ms < best_used)) {
            best = static_cast<int>(i);
            best_rank = rank;
            best_used = s.last_used_ms;
        }
        if (rank == 0)
            break;
    }
    return best;
}

}  // namespace picoroute::route_check
