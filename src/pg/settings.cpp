// Definitions of the picoroute.* settings.
extern "C" {
#include "postgres.h"
#include "miscadmin.h"
#include "utils/guc.h"
}

#include "core/address.h"
#include "core/errors.h"
#include "pg/route_checks.h"
#include "pg/settings.h"

#include <climits>
#include <string>

namespace picoroute::pg {

char *setting_conninfo = nullptr;
int setting_source = SOURCE_POLL;
int setting_refresh_interval = 1000;
int setting_connect_timeout = 5;
int setting_failover_wait = 10000;
int setting_max_instances = 256;
int setting_max_replicasets = 128;
int setting_max_bucket_ranges = 16384;
char *setting_allowed_hosts = nullptr;
int setting_max_map_memory = 64 * 1024;
char *setting_analyze_option = nullptr;
int setting_remote_write_in_transaction = REMOTE_WRITE_ONCE;
int setting_remote_statement_cache_size = 32;
int setting_join_batch_size = 256;
int setting_keyless_row_max = 4000;
bool setting_check_plans = false;
bool setting_track_statistics = true;
int setting_max_topology_events = 1000;
int setting_max_stat_instances = 1000;
int setting_max_stat_tables = 1000;
int setting_max_stat_connections = 1000;
int setting_max_connections_per_instance = 0;
int setting_log_routes = LOG_ROUTES_OFF;
int setting_log_routes_min_duration = 0;

static const struct config_enum_entry source_options[] = {
    {"poll", SOURCE_POLL, false},
    {"push", SOURCE_PUSH, false},
    {nullptr, 0, false},
};

// Refuses a picoroute.allowed_hosts value that cannot be understood. No C++ exception leaves it.
static bool check_allowed_hosts(char **newval, void **, GucSource) {
    std::string error;
    try {
        picoroute::HostAllowList::parse(*newval ? *newval : "");
        return true;
    } catch (const std::exception &e) {
        error = e.what();
    } catch (...) {
        error = "unknown error";
    }
    GUC_check_errdetail("%s", error.c_str());
    return false;
}

// picoroute.analyze_option goes into remote statements verbatim: only "name = integer" pairs,
// separated by commas, pass.
static bool check_analyze_option(char **newval, void **, GucSource) {
    const char *p = *newval;
    auto skip_spaces = [&p] {
        while (*p == ' ' || *p == '\t')
            p++;
    };
    skip_spaces();
    if (*p == '\0')
        return true;
    for (;;) {
        const char *name = p;
        while ((*p >= 'a' && *p <= 'z') || *p == '_')
            p++;
        bool named = p > name;
        skip_spaces();
        bool assigned = *p == '=';
        if (assigned)
            p++;
        skip_spaces();
        const char *digits = p;
        while (*p >= '0' && *p <= '9')
            p++;
        if (!named || !assigned || p == digits) {
            GUC_check_errdetail(
                "Expected a list of name = integer, e.g. \"sql_motion_row_max = 0\".");
            return false;
        }
        skip_spaces();
        if (*p == '\0')
            return true;
        if (*p != ',') {
            GUC_check_errdetail(
                "Expected a list of name = integer, e.g. \"sql_motion_row_max = 0\".");
            return false;
        }
        p++;
        skip_spaces();
    }
}
static const struct config_enum_entry remote_write_options[] = {
    {"once", REMOTE_WRITE_ONCE, false},
    {"warn", REMOTE_WRITE_WARN, false},
    {"error", REMOTE_WRITE_ERROR, false},
    {"off", REMOTE_WRITE_OFF, false},
    {nullptr, 0, false},
};

static const struct config_enum_entry log_routes_options[] = {
    {"off", LOG_ROUTES_OFF, false}, {"debug5", DEBUG5, false}, {"debug4", DEBUG4, false},
    {"debug3", DEBUG3, false},      {"debug2", DEBUG2, false}, {"debug1", DEBUG1, false},
    {"debug", DEBUG2, true},        {"info", INFO, false},     {"notice", NOTICE, false},
    {"warning", WARNING, false},    {"log", LOG, false},       {nullptr, 0, false},
};

const char *source_mode_name(int mode) {
    return mode == SOURCE_PUSH ? "push" : "poll";
}

namespace {

// The settings of the statements a session sends.
void define_statement_settings() {
    DefineCustomStringVariable(
        "picoroute.analyze_option",
        "Picodata OPTION clause of the statements ANALYZE sends to count and sample a table.",
        "name = integer pairs, comma-separated. The default lifts the limits on the rows one "
        "statement may gather and on the work of one storage, which a count or a sample of a "
        "large table exceeds. Empty: no OPTION clause.",
        &setting_analyze_option, "sql_motion_row_max = 0, sql_vdbe_opcode_max = 0", PGC_SUSET, 0,
        check_analyze_option, nullptr, nullptr);
    DefineCustomEnumVariable(
        "picoroute.remote_write_in_transaction",
        "What to do when picoroute writes to Picodata inside a transaction block.",
        "Picodata commits every remote write at once: a local ROLLBACK does not undo it. once: "
        "a WARNING at the first transaction block of the session that writes; warn: a WARNING "
        "once per transaction block; error: refuse the write; off: say nothing.",
        &setting_remote_write_in_transaction, REMOTE_WRITE_ONCE, remote_write_options, PGC_USERSET,
        0, nullptr, nullptr, nullptr);
    // Picodata's pg_statement_max (100000 by default, src/config/mod.rs 25.5.1 to 26.3.0; an
    // administrator may lower it) bounds the statements of every client of an instance together:
    // one connection may hold at most a small share of it, and only a superuser may raise that
    // share.
    DefineCustomIntVariable(
        "picoroute.remote_statement_cache_size",
        "Statement texts each cached connection keeps prepared on its Picodata instance.",
        "A text is prepared the second time a connection runs it, and its prepared statement is "
        "closed when it leaves this LRU. 0: every statement is sent unnamed. Each instance holds "
        "at most pg_statement_max statements (100000 by default) for all its clients together; a "
        "connection that finds that storage full closes its prepared statements and goes unnamed.",
        &setting_remote_statement_cache_size, 32, 0, 1000, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "picoroute.join_batch_size",
        "Outer rows read per batch by a batched join with a foreign table on its sharding key.",
        "The distinct keys of each batch go as IN lists, one statement per instance that owns "
        "their buckets, instead of one statement per outer row. 0: no batched join is planned.",
        &setting_join_batch_size, 256, 0, 10000, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    // Under Picodata's own default (sql_motion_row_max 5000): a coordinator gathers a read's whole
    // answer before it sends the first row, so this bounds its memory per statement.
    DefineCustomIntVariable(
        "picoroute.keyless_row_max",
        "Most rows a read without a sharding key asks a Picodata coordinator to gather at once.",
        "Sent as OPTION (sql_motion_row_max = N) unless the table or server option "
        "sql_motion_row_max is given. A scan whose answer is larger is read again in chunks of "
        "buckets, each within N rows. 0: no bound (the whole answer at once).",
        &setting_keyless_row_max, 4000, 0, INT_MAX, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    // For the test suites, which turn it on everywhere: a check of the plan structs' encodings.
    DefineCustomBoolVariable(
        "picoroute.check_plans",
        "Checks that the data of every picoroute plan node survives copying and serialization.",
        "When a plan node is created, its private data is copied, written out and read back, and "
        "decoded and encoded again; any difference is an internal error. For testing.",
        &setting_check_plans, false, PGC_USERSET, GUC_NOT_IN_SAMPLE, nullptr, nullptr, nullptr);
}

// The statistics and the topology event log (picoroute_stat_instances, picoroute_stat_tables,
// picoroute_topology_events). Their capacities size shared memory, so they exist only while
// preloading, as the map's.
void define_observability_settings() {
    DefineCustomBoolVariable(
        "picoroute.track_statistics",
        "Collects the statistics of picoroute_stat_instances and picoroute_stat_tables.",
        "Off: nothing is counted (what was counted stays until picoroute_stat_reset()).",
        &setting_track_statistics, true, PGC_SUSET, 0, nullptr, nullptr, nullptr);
    DefineCustomEnumVariable(
        "picoroute.log_routes", "Logs the route of each statement sent to Picodata, at this level.",
        "One line per statement once its answer arrived: its routing kind, instance, buckets, rows "
        "and time. off: nothing is logged.",
        &setting_log_routes, LOG_ROUTES_OFF, log_routes_options, PGC_SUSET, 0, nullptr, nullptr,
        nullptr);
    DefineCustomIntVariable("picoroute.log_routes_min_duration",
                            "Routes of statements faster than this are not logged (0: all).",
                            nullptr, &setting_log_routes_min_duration, 0, 0, INT_MAX, PGC_SUSET,
                            GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "picoroute.max_connections_per_instance",
        "Connections to one Picodata instance that all sessions together may hold (0: no limit).",
        "A session that would open one more first closes an idle one of its own to that instance, "
        "else waits for another session to close one (up to statement_timeout, or "
        "picoroute.failover_wait when it is not set), then fails with too_many_connections.",
        &setting_max_connections_per_instance, 0, 0, 100000, PGC_SIGHUP, 0, nullptr, nullptr,
        nullptr);
    if (!process_shared_preload_libraries_in_progress)
        return;
    DefineCustomIntVariable("picoroute.max_topology_events",
                            "Topology events picoroute_topology_events keeps (the newest).",
                            nullptr, &setting_max_topology_events, 1000, 1, 1000000, PGC_POSTMASTER,
                            0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "picoroute.max_stat_instances",
        "Instance addresses picoroute_stat_instances has counters for.",
        "Statements to further addresses are counted together, in a row without an address.",
        &setting_max_stat_instances, 1000, 1, 100000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "picoroute.max_stat_tables", "Foreign tables picoroute_stat_tables has counters for.",
        "Statements on further tables are counted together, in a row without a table.",
        &setting_max_stat_tables, 1000, 1, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "picoroute.max_stat_connections",
        "Connections to Picodata instances picoroute_stat_connections lists (all sessions).",
        "Further connections work and are counted in "
        "picoroute_stat_instances.connections_unlisted.",
        &setting_max_stat_connections, 1000, 1, 1000000, PGC_POSTMASTER, 0, nullptr, nullptr,
        nullptr);
}

}  // namespace

void define_settings() {
    DefineCustomStringVariable(
        "picoroute.conninfo", "libpq connection string of the Picodata cluster.",
        "Several hosts may be listed as libpq allows (host=a,b port=1,2). A password may also come "
        "from a passfile. Empty: the worker stays idle.",
        &setting_conninfo, "", PGC_SIGHUP, GUC_SUPERUSER_ONLY, nullptr, nullptr, nullptr);
    DefineCustomEnumVariable(
        "picoroute.source", "Where topology changes come from: poll or push.",
        "poll: the background worker reads the Picodata catalog every refresh_interval. push: "
        "changes arrive through picoroute_apply_events().",
        &setting_source, SOURCE_POLL, source_options, PGC_SIGHUP, 0, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("picoroute.refresh_interval",
                            "Time between two topology refreshes of the background worker.",
                            nullptr, &setting_refresh_interval, 1000, 10, 3600 * 1000, PGC_SIGHUP,
                            GUC_UNIT_MS, nullptr, nullptr, nullptr);
    DefineCustomIntVariable("picoroute.connect_timeout",
                            "Time allowed to connect to a Picodata instance or to run a catalog "
                            "query.",
                            nullptr, &setting_connect_timeout, 5, 1, 600, PGC_SIGHUP, GUC_UNIT_S,
                            nullptr, nullptr, nullptr);
    DefineCustomIntVariable(
        "picoroute.failover_wait",
        "How long a statement that could not run is sent again while the topology changes.",
        "A read, or a write that was never sent or that Picodata refused before running it "
        "(during a master switchover), is sent again to where the refreshed topology map puts "
        "its buckets until it runs or this time has passed, then once more (through a coordinator "
        "when the map still puts them on the instance that failed). A "
        "write that may have been applied is never sent again. 0: one more attempt only.",
        &setting_failover_wait, 10000, 0, 600 * 1000, PGC_USERSET, GUC_UNIT_MS, nullptr, nullptr,
        nullptr);
    DefineCustomStringVariable(
        "picoroute.allowed_hosts",
        "Hosts and networks picoroute may connect to (comma-separated hostnames, IP addresses "
        "and CIDR networks).",
        "Applies to every address taken from the topology map: the routing connections of every "
        "session and the worker's fallback to known instances. Empty: an address a catalog read "
        "by the worker reported, never one only picoroute_apply_events gave. '*': any TCP host.",
        &setting_allowed_hosts, "", PGC_SIGHUP, 0, check_allowed_hosts, nullptr, nullptr);
    DefineCustomIntVariable("picoroute.max_map_memory",
                            "Memory a session may use for its O(1) bucket lookup tables.",
                            "Tiers whose tables do not fit are looked up by binary search over "
                            "their ranges.",
                            &setting_max_map_memory, 64 * 1024, 0, INT_MAX / 1024, PGC_SUSET,
                            GUC_UNIT_KB, nullptr, nullptr, nullptr);
    define_statement_settings();
    define_route_check_settings();
    define_observability_settings();
    // Capacities size shared memory at server start; they can only be defined while preloading
    // (a later load would end the session). Without preloading every function refuses to run.
    if (process_shared_preload_libraries_in_progress) {
        DefineCustomIntVariable(
            "picoroute.max_instances", "Capacity of the shared topology map in instances.", nullptr,
            &setting_max_instances, 256, 1, 100000, PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
        DefineCustomIntVariable("picoroute.max_replicasets",
                                "Capacity of the shared topology map in replicasets (and tiers).",
                                nullptr, &setting_max_replicasets, 128, 1, 100000, PGC_POSTMASTER,
                                0, nullptr, nullptr, nullptr);
        DefineCustomIntVariable("picoroute.max_bucket_ranges",
                                "Capacity of the shared topology map in bucket ranges, all tiers "
                                "together.",
                                nullptr, &setting_max_bucket_ranges, 16384, 1, 10000000,
                                PGC_POSTMASTER, 0, nullptr, nullptr, nullptr);
    }
    MarkGUCPrefixReserved("picoroute");
}

}  // namespace picoroute::pg
