// The text of a routed statement (see text.h).
#include "core/routing/text.h"

#include <algorithm>

namespace picoroute::routing {

std::string with_bucket_filter(const std::string &sql, bool has_where, const Target &target,
                               const std::string &column) {
    if (target.buckets.empty() && target.ranges.empty())
        return sql;
    std::string out = sql + (has_where ? " AND " : " WHERE ");
    std::vector<uint32_t> listed = target.buckets;
    if (listed.empty()) {
        for (const auto &[start, end] : target.ranges) {
            for (uint32_t b = start; b >= start && b <= end; b++) {
                listed.push_back(b);
                if (b == end)
                    break;
            }
        }
    }
    if (listed.size() == 1)
        return out + column + " = " + std::to_string(listed[0]);
    out += column + " IN (";
    for (size_t i = 0; i < listed.size(); i++) {
        if (i > 0)
            out += ", ";
        out += std::to_string(listed[i]);
    }
    return out + ")";
}

std::string text_for(const StatementText &text, const Target &target) {
    std::string sql = target.ranges.empty()
                          ? text.sql
                          : with_bucket_filter(text.sql, text.has_where, target, text.column);
    sql += text.tail;
    if (text.row_limit > 0)
        sql += " LIMIT " + std::to_string(text.row_limit);
    return sql + text.option;
}

std::vector<KeySlice> key_slices(size_t members, size_t max_keys) {
    size_t limit = std::max<size_t>(1, max_keys);
    std::vector<KeySlice> out;
    for (size_t from = 0; from < members; from += limit) {
        KeySlice slice;
        slice.from = from;
        slice.n = std::min(limit, members - from);
        slice.padded = 1;
        while (slice.padded < slice.n)
            slice.padded *= 2;
        slice.padded = std::min(slice.padded, limit);
        out.push_back(slice);
    }
    return out;
}

std::string key_list_text(const std::string &base, bool has_where, const std::string &column,
                          int first_param, size_t nkeys) {
    std::string sql = base;
    sql += has_where ? " AND " : " WHERE ";
    sql += column;
    sql += " IN (";
    for (size_t i = 0; i < nkeys; i++) {
        if (i > 0)
            sql += ", ";
        sql += "$" + std::to_string(first_param + static_cast<int>(i));
    }
    return sql + ")";
}

std::string bucket_condition(std::vector<std::pair<uint32_t, uint32_t>> ranges,
                             const std::string &qualifier) {
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (const auto &r : ranges) {
        if (!merged.empty() && merged.back().second + 1 >= r.first)
            merged.back().second = std::max(merged.back().second, r.second);
        else
            merged.push_back(r);
    }
    std::string column = (qualifier.empty() ? "" : qualifier + ".") + "\"bucket_id\"";
    std::string out = "(";
    for (size_t i = 0; i < merged.size(); i++) {
        if (i > 0)
            out += " OR ";
        if (merged[i].first == merged[i].second)
            out += column + " = " + std::to_string(merged[i].first);
        else
            out += column + " BETWEEN " + std::to_string(merged[i].first) + " AND " +
                   std::to_string(merged[i].second);
    }
    return out + ")";
}

std::string fill_placeholders(const std::string &q, const std::vector<Placeholder> &placeholders,
                              const std::vector<std::pair<uint32_t, uint32_t>> &ranges) {
    std::string out;
    size_t pos = 0;
    for (const Placeholder &p : placeholders) {
        out.append(q, pos, p.begin - pos);
        out += bucket_condition(ranges, p.qualifier);
        pos = p.end;
    }
    out.append(q, pos, std::string::npos);
    return out;
}

}  // namespace picoroute::routing
