\echo Use "ALTER EXTENSION picoroute UPDATE" to load this file. \quit

-- picoroute 0.1 -> 0.2 (run by ALTER EXTENSION picoroute UPDATE TO '0.2').
--
-- Every change to the SQL surface made in 0.2 goes BOTH into its part under src/sql/ (what a fresh
-- CREATE EXTENSION runs) AND into this file (what an installation of 0.1 runs to reach 0.2):
--   a new function or view:        the same CREATE statement, its COMMENT and its GRANT/REVOKE;
--   a changed function:             CREATE OR REPLACE (or DROP and CREATE when its result type
--                                   changes), and the new COMMENT;
--   a removed object:               DROP ...;
--   changed privileges or comment:  the GRANT/REVOKE or COMMENT.
-- The pg_regress suite `upgrade` compares an installation updated through this file with a fresh
-- one (objects, signatures, attributes, definitions, privileges, comments) and fails with the
-- difference when one is forgotten.
--
-- 0.2 changed the packaging only (install-script layout, versioned scripts, Debian package, PGXN
-- metadata); its SQL objects are those of 0.1. Changes to the SQL surface made in 0.2 follow here.

-- Declarations of foreign tables checked against the cluster (part src/sql/30_check.sql).
CREATE FUNCTION picoroute_check_foreign_table(foreign_table regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'picoroute_check_foreign_table'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION picoroute_check_foreign_table(regclass) IS
'Compares a picoroute foreign table with its row of Picodata''s _pico_table: distribution, tier '
'(the server''s tier option), sharding key (names and order) and key column types. Returns true '
'when they agree; raises an error naming the column, what the cluster has and what to change '
'otherwise (a warning for a key type that hashes the same but is narrower). The same check runs '
'at the first use of a table in a session.';

-- The FDW's options for Picodata's dialect, limits and versions (part src/sql/20_routing.sql).
COMMENT ON FOREIGN DATA WRAPPER picoroute IS
'Picodata tables as foreign tables: statements go to the instance that owns the bucket of their '
'sharding key. Server options: tier, scatter (coordinator|masters), read_preference '
'(leader|replica|any), picodata_version (a Picodata release as its instances report it, 25.5.1 '
'to 26.2.1-rc2: overrides the version detected from the cluster), execution_options (on|off), '
'sql_motion_row_max, sql_vdbe_opcode_max, dbname, sslmode, batch_size. User mapping: user, '
'password. Table options: table_name, sharding_key, distribution (sharded|global), batch_size, '
'sql_motion_row_max, sql_vdbe_opcode_max. Remote writes commit immediately, whatever the local '
'transaction does.';

-- Control of the background worker (src/sql/40_worker_control.sql).
CREATE FUNCTION picoroute_restart_worker()
RETURNS integer
AS 'MODULE_PATHNAME', 'picoroute_restart_worker'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION picoroute_restart_worker() IS
'Stops the topology worker (SIGTERM); the postmaster starts it again within 5 seconds and it '
'continues from the map in shared memory. Returns the pid that was signalled. Superusers may also '
'use pg_terminate_backend(worker_pid).';

REVOKE ALL ON FUNCTION picoroute_restart_worker() FROM PUBLIC;

-- ---------------------------------------------------------------------------------------------
-- picoroute_exec / picoroute_exec_all with parameters, picoroute_exec_masters (src/sql/40_exec.sql)
CREATE FUNCTION picoroute_exec(tier text, bucket_id integer, query text, params text[],
                               read_only boolean DEFAULT false)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_exec_params'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION picoroute_exec(text, integer, text, text[], boolean) IS
'Runs a query on the master of the replicaset that owns the bucket (an online replica when '
'read_only), binding the elements of params as $1, $2, ... in text format (NULL elements as '
'NULL). Give the result columns: SELECT * FROM picoroute_exec(''default'', 1, '
'''SELECT "name" FROM "users" WHERE "id" = $1'', ARRAY[''5'']) AS t(name text).';

CREATE FUNCTION picoroute_exec_all(tier text, query text, params text[])
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_exec_all_params'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION picoroute_exec_all(text, text, text[]) IS
'Runs a query on every master of the tier in parallel, binding the elements of params as $1, '
'$2, ...; returns all rows. Every Picodata instance answers for the whole cluster, so a query on '
'a sharded table returns its rows once per master: use picoroute_exec_masters to read each row '
'once.';

-- ---------------------------------------------------------------------------------------------
-- Each master restricted to its own buckets

CREATE FUNCTION picoroute_exec_masters(tier text, query text, params text[] DEFAULT '{}')
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_exec_masters'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION picoroute_exec_masters(text, text, text[]) IS
'Runs a query on every master whose replicaset owns buckets of the tier, replacing each '
'{buckets} placeholder (or {buckets:alias}) by a condition on the bucket_id ranges that '
'replicaset owns: SELECT count(*) FROM "users" WHERE {buckets}. The conditions of the masters '
'partition the buckets, so each row is read once; a master that owns no buckets gets nothing. '
'Binds params as $1, $2, .... Each master still runs a cluster-wide query: Picodata does not '
'prune by bucket_id ranges, so N masters cost N x N storage queries.';

REVOKE ALL ON FUNCTION picoroute_exec(text, integer, text, text[], boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION picoroute_exec_all(text, text, text[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION picoroute_exec_masters(text, text, text[]) FROM PUBLIC;

-- A NULL argument of picoroute_exec(tier, bucket_id, query, read_only) or picoroute_exec_all(tier,
-- query) is an error (22004) as for the other forms, not an empty result (part src/sql/20_routing.sql).
ALTER FUNCTION picoroute_exec(text, integer, text, boolean) CALLED ON NULL INPUT;
ALTER FUNCTION picoroute_exec_all(text, text) CALLED ON NULL INPUT;

-- The detected Picodata version (part src/sql/00_topology.sql): picoroute_status and
-- picoroute_instances gain a column picodata_version; their functions' result types change.
DROP VIEW picoroute_instances;
DROP FUNCTION picoroute_instance_rows();
CREATE FUNCTION picoroute_instance_rows(OUT uuid text, OUT name text, OUT replicaset_uuid text,
                                        OUT replicaset_name text, OUT tier text, OUT state text,
                                        OUT address text, OUT is_master boolean,
                                        OUT is_online boolean, OUT picodata_version text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_instance_rows'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_instance_rows() IS
'The instances of the topology map (behind the view picoroute_instances).';

CREATE VIEW picoroute_instances AS
    SELECT * FROM picoroute_instance_rows();

COMMENT ON VIEW picoroute_instances IS
'Instances of the Picodata cluster as the topology map knows them: replicaset, tier, state, '
'PostgreSQL-protocol address, whether it is its replicaset''s master, whether it is Online, and '
'the Picodata version it reports (_pico_instance.picodata_version).';

DROP VIEW picoroute_status;
DROP FUNCTION picoroute_status_row();
CREATE FUNCTION picoroute_status_row(OUT source text, OUT conninfo text,
                                     OUT source_instance text, OUT worker_pid integer,
                                     OUT worker_state text,
                                     OUT last_refresh_start timestamptz,
                                     OUT last_refresh_end timestamptz,
                                     OUT last_success timestamptz, OUT last_error text,
                                     OUT last_warning text, OUT generation bigint,
                                     OUT refreshes bigint, OUT refresh_failures bigint,
                                     OUT topology_resets bigint, OUT tiers integer, OUT replicasets integer,
                                     OUT instances integer, OUT bucket_ranges integer,
                                     OUT max_replicasets integer, OUT max_instances integer,
                                     OUT max_bucket_ranges integer,
                                     OUT capacity_exceeded boolean,
                                     OUT picodata_version text)
RETURNS record
AS 'MODULE_PATHNAME', 'picoroute_status_row'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_status_row() IS
'The state of the topology source and map (behind the view picoroute_status).';

CREATE VIEW picoroute_status AS
    SELECT * FROM picoroute_status_row();

COMMENT ON VIEW picoroute_status IS
'One row: the topology source (poll or push), its connection string with the password masked '
'(shown to superusers and members of pg_read_all_settings only), the instance read from, the '
'worker''s state, refresh times and counters (topology_resets counts the times the topology was '
'cleared and rebuilt because the worker started reading from another instance), the last error and warning, the map generation, '
'entry counts against the configured capacities, and the detected Picodata version (the lowest '
'that an online instance reports; NULL while none is known), which capability lookups follow '
'unless a server sets the option picodata_version.';

GRANT SELECT ON picoroute_instances, picoroute_status TO PUBLIC;

-- Bucket ids by the hashing rule of each Picodata release line (part src/sql/00_topology.sql).
COMMENT ON FUNCTION picoroute_bucket_id(text, "any") IS
'Picodata bucket id of a sharding key (values in sharding-key order) in the given tier, using the '
'tier''s bucket_count from the topology map and the hashing rule of the cluster''s detected '
'Picodata version (doubles hash differently from 26.1 on; the newest rule while no version is '
'detected). Key types: smallint, integer, bigint, text, varchar, character (trailing blanks '
'ignored), name, boolean, real, double precision, numeric, uuid, timestamp with time zone; NULL '
'hashes as nil.';

COMMENT ON FUNCTION picoroute_bucket_id_with_count(integer, "any") IS
'Picodata bucket id of a sharding key for an explicit bucket_count (no topology needed): '
'murmur3_x86_32 of the MessagePack-encoded key, seed 13, modulo bucket_count, plus 1, by the '
'hashing rule of Picodata 25.5 (a double as cb + IEEE 754; use picoroute_bucket_id_for_version '
'for 26.1 and later). Same key types as picoroute_bucket_id.';

CREATE FUNCTION picoroute_bucket_id_for_version(picodata_version text, bucket_count integer,
                                                VARIADIC key "any")
RETURNS integer
AS 'MODULE_PATHNAME', 'picoroute_bucket_id_for_version'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_bucket_id_for_version(text, integer, "any") IS
'Picodata bucket id of a sharding key for an explicit bucket_count, hashed as the given Picodata '
'version hashes it (as Picodata reports it, e.g. 25.5.10 or 26.1.6; doubles hash differently from '
'26.1 on). No topology needed. Same key types as picoroute_bucket_id.';

-- Routing that verifies itself: the verdicts of the route check.
CREATE FUNCTION picoroute_route_check_rows(OUT database text, OUT foreign_table text,
                                           OUT key_types text, OUT picodata_version text,
                                           OUT hash_rule text, OUT state text, OUT sample text,
                                           OUT picoroute_bucket integer,
                                           OUT picodata_bucket integer, OUT detail text,
                                           OUT checked_at timestamptz,
                                           OUT next_check timestamptz, OUT attempts integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_route_check_rows'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_route_check_rows() IS
'The verdicts of the route check (behind the view picoroute_route_checks).';

CREATE VIEW picoroute_route_checks AS
    SELECT * FROM picoroute_route_check_rows();

COMMENT ON VIEW picoroute_route_checks IS
'One row per foreign table, key types (the Picodata types of the sharding-key values routed), '
'detected Picodata version and hashing rule (25.5 or 26.1) that picoroute checked its bucket '
'for: state pending (being checked), agreed, disagreed (its keyed statements go through a '
'coordinator) or unknown '
'(the check could not conclude; retried at next_check), the sample key asked about, picoroute''s '
'and Picodata''s bucket of it, Picodata''s buckets line or why the check did not conclude, and '
'when it was checked. Shared by every database of the server.';

GRANT SELECT ON picoroute_route_checks TO PUBLIC;

-- Monitoring: the topology event log and the statistics (part src/sql/50_monitoring.sql).
CREATE FUNCTION picoroute_topology_event_rows(OUT seq bigint, OUT event_time timestamptz,
                                              OUT generation bigint, OUT kind text,
                                              OUT tier text, OUT bucket_id_start integer,
                                              OUT bucket_id_end integer,
                                              OUT from_replicaset text, OUT to_replicaset text,
                                              OUT replicaset text, OUT instance text,
                                              OUT old_value text, OUT new_value text,
                                              OUT detail text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_topology_event_rows'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_topology_event_rows() IS
'The topology event log (behind the view picoroute_topology_events).';

CREATE VIEW picoroute_topology_events AS
    SELECT * FROM picoroute_topology_event_rows();

COMMENT ON VIEW picoroute_topology_events IS
'What changed in the topology map, oldest first: buckets mapped, moved or unmapped, masters '
'switched, instances and replicasets added, removed or changed, versions changed (from comparing '
'each published map with the one it replaced, in poll and push mode), and the worker''s source '
'switches, failed refreshes and recoveries. Kept in shared memory for the server''s life '
'(picoroute.max_topology_events, the newest); a first row of kind events_dropped counts the older '
'ones dropped.';

CREATE FUNCTION picoroute_stat_instance_rows(
    OUT address text, OUT instance_name text, OUT replicaset_name text, OUT tier text,
    OUT statements bigint, OUT routed_statements bigint, OUT coordinator_statements bigint,
    OUT scatter_statements bigint, OUT batch_statements bigint, OUT chunk_statements bigint,
    OUT resent_statements bigint, OUT answers bigint, OUT rows_received bigint,
    OUT bytes_received bigint, OUT total_time double precision, OUT mean_time double precision,
    OUT p50_time double precision, OUT p95_time double precision, OUT p99_time double precision,
    OUT refused_errors bigint, OUT unknown_outcome_errors bigint, OUT connection_errors bigint,
    OUT remote_errors bigint, OUT failover_waits bigint, OUT connection_budget_waits bigint,
    OUT connections_open bigint, OUT connections_unlisted bigint, OUT connections_opened bigint,
    OUT stats_reset timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_stat_instance_rows'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_stat_instance_rows() IS
'Statistics per Picodata instance address (behind the view picoroute_stat_instances).';

CREATE VIEW picoroute_stat_instances AS
    SELECT * FROM picoroute_stat_instance_rows();

COMMENT ON VIEW picoroute_stat_instances IS
'One row per instance address picoroute sent statements to or connected to since the server '
'started (all backends): statements by routing kind, statements sent again, answers, rows and '
'bytes received, answer times (total, mean, p50, p95, p99 in milliseconds), errors by kind, '
'failover waits, waits for picoroute.max_connections_per_instance, connections open now (and of '
'them those picoroute_stat_connections does not list) and opened, the time of the last '
'picoroute_stat_reset(). '
'Name, replicaset and tier are those of the current map.';

CREATE FUNCTION picoroute_stat_table_rows(
    OUT relid oid, OUT scans bigint, OUT pushed_scans bigint, OUT direct_modifies bigint,
    OUT row_modifies bigint, OUT inserts bigint, OUT statements bigint,
    OUT routed_statements bigint, OUT coordinator_statements bigint,
    OUT scatter_statements bigint, OUT batch_statements bigint, OUT chunk_statements bigint,
    OUT rows_read bigint, OUT rows_written bigint, OUT pushed_aggregates bigint,
    OUT pushed_sorts bigint, OUT pushed_joins bigint, OUT local_aggregates bigint,
    OUT local_sorts bigint, OUT local_joins bigint, OUT chunked_reads bigint,
    OUT stats_reset timestamptz)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_stat_table_rows'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_stat_table_rows() IS
'Statistics per foreign table of the current database (behind the view picoroute_stat_tables).';

CREATE VIEW picoroute_stat_tables AS
    SELECT s.relid, n.nspname AS schemaname, c.relname, s.scans, s.pushed_scans,
           s.direct_modifies, s.row_modifies, s.inserts, s.statements, s.routed_statements,
           s.coordinator_statements, s.scatter_statements, s.batch_statements,
           s.chunk_statements, s.rows_read, s.rows_written, s.pushed_aggregates,
           s.local_aggregates, s.pushed_sorts, s.local_sorts, s.pushed_joins, s.local_joins,
           s.chunked_reads, s.stats_reset
    FROM picoroute_stat_table_rows() s
    LEFT JOIN pg_catalog.pg_class c ON c.oid = s.relid
    LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace;

COMMENT ON VIEW picoroute_stat_tables IS
'One row per picoroute foreign table of the current database used since the server started (all '
'backends): executor nodes begun by kind (scans, pushed joins and upper relations, direct and '
'row-by-row modifications, inserts), remote statements by routing kind, rows read and written, '
'aggregates, sorts and joins pushed to Picodata or computed locally, keyless reads in bucket '
'chunks, the time of the last picoroute_stat_reset().';

CREATE FUNCTION picoroute_stat_reset()
RETURNS void
AS 'MODULE_PATHNAME', 'picoroute_stat_reset'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_stat_reset() IS
'Zeroes every counter of picoroute_stat_instances and picoroute_stat_tables, for all databases '
'(connections_open and connections_unlisted, counts of what is open, stay) and sets their '
'stats_reset.';

-- Statistics and topology events are readable by every role, as pg_stat_* views are; resetting
-- them is not (as pg_stat_reset()).
GRANT SELECT ON picoroute_topology_events, picoroute_stat_instances, picoroute_stat_tables
    TO PUBLIC;
REVOKE ALL ON FUNCTION picoroute_stat_reset() FROM PUBLIC;

CREATE FUNCTION picoroute_stat_connection_rows(
    OUT pid integer, OUT address text, OUT instance_name text, OUT replicaset_name text,
    OUT tier text, OUT user_name text, OUT server_name text, OUT state text,
    OUT opened_at timestamptz, OUT statements bigint, OUT prepared_statements bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_stat_connection_rows'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_stat_connection_rows() IS
'The connections of every backend to Picodata instances (behind the view '
'picoroute_stat_connections).';

CREATE VIEW picoroute_stat_connections AS
    SELECT * FROM picoroute_stat_connection_rows();

COMMENT ON VIEW picoroute_stat_connections IS
'One row per connection to a Picodata instance held now by any backend: its pid, the instance''s '
'address (name, replicaset and tier from the current map), the remote user, the foreign server '
'(NULL for picoroute_exec), the state (idle, active, idle in transaction, idle in transaction '
'(aborted)), when it was opened, the statements run on it and the named statements prepared on '
'it. At most picoroute.max_stat_connections rows; further connections are counted in '
'picoroute_stat_instances.connections_unlisted.';

GRANT SELECT ON picoroute_stat_connections TO PUBLIC;
