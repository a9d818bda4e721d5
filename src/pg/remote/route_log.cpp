// Routes in the server log (see route_log.h).
extern "C" {
#include "postgres.h"

#include "utils/elog.h"
}

#include "pg/remote/route_log.h"

#include "pg/guard.h"
#include "pg/settings.h"

#include <cstdio>
#include <string>

namespace picoroute::pg::remote {

namespace {

const char *kind_name(routing::Sent sent) {
    switch (sent) {
        case routing::Sent::RoutedByKey:
            return "routed by key";
        case routing::Sent::Coordinator:
            return "coordinator";
        case routing::Sent::MastersScatter:
            return "masters scatter";
        case routing::Sent::KeyBatch:
            return "key batch";
        case routing::Sent::Chunk:
            return "chunk";
    }
    return "unknown";
}

std::string buckets_of(const routing::Target &target) {
    if (target.buckets.size() == 1)
        return "bucket " + std::to_string(target.buckets[0]);
    if (!target.buckets.empty())
        return std::to_string(target.buckets.size()) + " buckets";
    if (!target.ranges.empty()) {
        uint64_t n = 0;
        for (const auto &r : target.ranges)
            n += r.second - r.first + 1;
        return std::to_string(n) + " buckets";
    }
    return "no bucket filter";
}

}  // namespace

bool route_log_on() noexcept {
    return setting_log_routes != LOG_ROUTES_OFF;
}

void log_route(const routing::Target &target, const std::string &sql, uint64_t rows,
               uint64_t micros, bool failed) {
    if (setting_log_routes_min_duration > 0 &&
        micros < static_cast<uint64_t>(setting_log_routes_min_duration) * 1000)
        return;
    char ms[32];
    snprintf(ms, sizeof ms, "%.3f", static_cast<double>(micros) / 1000.0);
    std::string line = std::string("picoroute route: ") + kind_name(target.sent) + " to " +
                       routing::describe(target) + ", " + buckets_of(target) + ", " +
                       std::to_string(rows) + (rows == 1 ? " row" : " rows") + ", " + ms + " ms" +
                       (failed ? ", error" : "") + "; remote SQL: " + sql;
    int level = setting_log_routes;
    pg_call([&] { ereport(level, (errmsg_internal("%s", line.c_str()))); });
}

}  // namespace picoroute::pg::remote
