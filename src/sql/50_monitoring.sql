-- picoroute: monitoring (appended to the extension script): the topology event log and the
-- statistics of the statements sent to Picodata, per instance and per foreign table.

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
