// picoroute.* settings (GUCs). Documented in README.md, section "Settings".
#pragma once

namespace picoroute::pg {

enum SourceMode { SOURCE_POLL = 0, SOURCE_PUSH = 1 };
enum RemoteWriteMode {
    REMOTE_WRITE_WARN = 0,
    REMOTE_WRITE_ERROR = 1,
    REMOTE_WRITE_OFF = 2,
    REMOTE_WRITE_ONCE = 3,  // warn at the first transaction block of the session only
};

extern char *setting_conninfo;                   // picoroute.conninfo (superuser only)
extern int setting_source;                       // picoroute.source
extern int setting_refresh_interval;             // picoroute.refresh_interval, milliseconds
extern int setting_connect_timeout;              // picoroute.connect_timeout, seconds
extern int setting_failover_wait;                // picoroute.failover_wait, milliseconds
extern int setting_max_instances;                // picoroute.max_instances (postmaster)
extern int setting_max_replicasets;              // picoroute.max_replicasets (postmaster)
extern int setting_max_bucket_ranges;            // picoroute.max_bucket_ranges (postmaster)
extern char *setting_allowed_hosts;              // picoroute.allowed_hosts (sighup)
extern int setting_max_map_memory;               // picoroute.max_map_memory, kilobytes (suset)
extern int setting_remote_write_in_transaction;  // picoroute.remote_write_in_transaction
extern char *setting_analyze_option;             // picoroute.analyze_option (superuser)
extern int setting_remote_statement_cache_size;  // picoroute.remote_statement_cache_size
extern int setting_join_batch_size;              // picoroute.join_batch_size (0: off)
extern int setting_keyless_row_max;              // picoroute.keyless_row_max (0: no bound)
extern bool setting_check_plans;                 // picoroute.check_plans (the test suites)
extern bool setting_track_statistics;            // picoroute.track_statistics (superuser)
extern int setting_max_topology_events;          // picoroute.max_topology_events (postmaster)
extern int setting_max_stat_instances;           // picoroute.max_stat_instances (postmaster)
extern int setting_max_stat_tables;              // picoroute.max_stat_tables (postmaster)
extern int setting_max_stat_connections;         // picoroute.max_stat_connections (postmaster)
// picoroute.log_routes (suset): an elog level, or LOG_ROUTES_OFF
constexpr int LOG_ROUTES_OFF = 0;
extern int setting_log_routes;
extern int setting_log_routes_min_duration;  // picoroute.log_routes_min_duration, ms (suset)
// picoroute.max_connections_per_instance (sighup; 0: no limit)
extern int setting_max_connections_per_instance;

void define_settings();

const char *source_mode_name(int mode);

}  // namespace picoroute::pg
