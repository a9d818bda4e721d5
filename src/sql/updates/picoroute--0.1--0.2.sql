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
