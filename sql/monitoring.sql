-- Monitoring: the columns of picoroute_topology_events, picoroute_stat_instances,
-- picoroute_stat_tables and picoroute_stat_connections (README, section Monitoring, documents
-- each), their settings and privileges, and the table statistics counted when a foreign table's
-- executor node begins.
-- (The rows of the event log are checked in sql/topology_push.sql, the instance statistics and
-- the drop of old events across servers in test/t/074_monitoring.pl, the connections of several
-- backends and their budget in test/t/080_connections.pl.)

SELECT c.relname AS view, a.attnum, a.attname, format_type(a.atttypid, a.atttypmod) AS type
FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
WHERE c.relname IN ('picoroute_topology_events', 'picoroute_stat_instances',
                    'picoroute_stat_tables', 'picoroute_stat_connections')
  AND a.attnum > 0
ORDER BY c.relname, a.attnum;

SELECT current_setting('picoroute.track_statistics') AS track_statistics,
       current_setting('picoroute.max_topology_events') AS max_topology_events,
       current_setting('picoroute.max_stat_instances') AS max_stat_instances,
       current_setting('picoroute.max_stat_tables') AS max_stat_tables,
       current_setting('picoroute.max_stat_connections') AS max_stat_connections,
       current_setting('picoroute.max_connections_per_instance') AS max_connections_per_instance;
SELECT name, context, vartype, min_val, max_val FROM pg_settings
WHERE name IN ('picoroute.track_statistics', 'picoroute.max_topology_events',
               'picoroute.max_stat_instances', 'picoroute.max_stat_tables',
               'picoroute.max_stat_connections', 'picoroute.max_connections_per_instance')
ORDER BY name;

-- Any role reads the views; only those granted it may reset the statistics (as pg_stat_reset).
SELECT p.oid::regprocedure AS function, provolatile, proisstrict, proparallel
FROM pg_proc p
WHERE p.proname IN ('picoroute_topology_event_rows', 'picoroute_stat_instance_rows',
                    'picoroute_stat_table_rows', 'picoroute_stat_connection_rows',
                    'picoroute_stat_reset')
ORDER BY 1::text;
CREATE ROLE regress_picoroute_monitor;
SELECT has_function_privilege('regress_picoroute_monitor', 'picoroute_stat_reset()', 'EXECUTE')
           AS may_reset,
       has_table_privilege('regress_picoroute_monitor', 'picoroute_stat_instances', 'SELECT')
           AS reads_instances,
       has_table_privilege('regress_picoroute_monitor', 'picoroute_stat_tables', 'SELECT')
           AS reads_tables,
       has_table_privilege('regress_picoroute_monitor', 'picoroute_topology_events', 'SELECT')
           AS reads_events,
       has_table_privilege('regress_picoroute_monitor', 'picoroute_stat_connections', 'SELECT')
           AS reads_connections;
SET ROLE regress_picoroute_monitor;
SELECT count(*) >= 0 AS readable FROM picoroute_stat_instances;
SELECT count(*) >= 0 AS readable FROM picoroute_stat_tables;
SELECT count(*) >= 0 AS readable FROM picoroute_topology_events;
SELECT count(*) >= 0 AS readable FROM picoroute_stat_connections;
SELECT picoroute_stat_reset();
RESET ROLE;
DROP ROLE regress_picoroute_monitor;

------------------------------------------------------------------------------------------------
-- Table statistics: counted when the executor node of a foreign table begins (after the table's
-- declaration was checked), never for EXPLAIN without ANALYZE. The instance refuses connections,
-- so every statement fails after its node began.
------------------------------------------------------------------------------------------------
SELECT pr_clear_map();
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "tier", "name": "down", "bucket_count": 10},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "mon-r", "name": "mon_r", "tier": "down", "current_master_uuid": "mon-i"},
  {"op": "replace", "map": "instance", "instance_uuid": "mon-i", "name": "mon_i", "replicaset_uuid": "mon-r", "current_state": "Online", "address": "127.0.0.1:1"},
  {"op": "replace", "map": "bucket", "tier": "down", "state": "active", "bucket_id": {"start": 1, "end": 10}, "current_replicaset_uuid": "mon-r"}
]') > 0 AS applied;
CREATE SERVER mon_down FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'down',
    picodata_version '26.2.1-rc2');
CREATE USER MAPPING FOR CURRENT_USER SERVER mon_down OPTIONS (user 'u', password 'p');
CREATE FOREIGN TABLE mon_t (id bigint, v text) SERVER mon_down OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE mon_u (id bigint, w text) SERVER mon_down OPTIONS (sharding_key 'id');
SELECT picoroute_stat_reset();
CREATE VIEW mon_tables AS
    SELECT relname, scans, pushed_scans, direct_modifies, row_modifies, inserts, statements,
           stats_reset IS NOT NULL AS was_reset
    FROM picoroute_stat_tables WHERE relid IN ('mon_t'::regclass, 'mon_u'::regclass)
    ORDER BY relname;
SELECT * FROM mon_tables;
EXPLAIN (COSTS OFF) SELECT * FROM mon_t WHERE id = 1;
SELECT * FROM mon_tables;
-- (each fails: its SQLSTATE is shown)
SET picoroute.remote_write_in_transaction = off;
SET picoroute.failover_wait = 0;
SELECT statement, left(pr_try(statement), 5) AS sqlstate
FROM (VALUES ('SELECT * FROM mon_t WHERE id = 1'), ('SELECT * FROM mon_t WHERE id = 2'),
             ('SELECT count(*) FROM mon_t'), ('SELECT * FROM mon_t JOIN mon_u USING (id) WHERE id = 3'),
             ('UPDATE mon_t SET v = ''x'' WHERE id = 1'), ('INSERT INTO mon_t VALUES (1, ''a'')'))
     AS t(statement);
SELECT * FROM mon_tables;
-- Off: nothing is counted; what was counted stays.
SET picoroute.track_statistics = off;
SELECT left(pr_try('SELECT * FROM mon_t WHERE id = 1'), 5) AS sqlstate;
RESET picoroute.track_statistics;
RESET picoroute.remote_write_in_transaction;
RESET picoroute.failover_wait;
SELECT * FROM mon_tables;
-- A reset zeroes the counters and keeps the rows.
SELECT picoroute_stat_reset();
SELECT * FROM mon_tables;
-- The instance was never reached: no connection is open or was opened to it, none is listed
-- (every failed attempt gave its place back), nobody waited for a place (no budget is set).
SELECT coalesce(sum(connections_open), 0) AS open, coalesce(sum(connections_opened), 0) AS opened,
       coalesce(sum(connections_unlisted), 0) AS unlisted,
       coalesce(sum(connection_budget_waits), 0) AS budget_waits
FROM picoroute_stat_instances WHERE address = '127.0.0.1:1';
SELECT count(*) AS listed FROM picoroute_stat_connections WHERE address = '127.0.0.1:1';

DROP VIEW mon_tables;
DROP FOREIGN TABLE mon_t, mon_u;
DROP USER MAPPING FOR CURRENT_USER SERVER mon_down;
DROP SERVER mon_down;
SELECT pr_clear_map();
