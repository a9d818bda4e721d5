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
'(leader|replica|any), picodata_version (25.5|26.1|26.2|26.2.1), execution_options (on|off), '
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
