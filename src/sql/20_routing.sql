-- picoroute: routing statements to Picodata instances (appended to the extension script).
--
-- Picodata runs every statement in autocommit. A remote write made through picoroute_exec or
-- through a foreign table is committed on the instance when it returns, independently of the
-- local transaction: a local ROLLBACK does not undo it.

-- ---------------------------------------------------------------------------------------------
-- The foreign data wrapper

CREATE FUNCTION picoroute_fdw_handler()
RETURNS fdw_handler
AS 'MODULE_PATHNAME', 'picoroute_fdw_handler'
LANGUAGE C STRICT;

CREATE FUNCTION picoroute_fdw_validator(text[], oid)
RETURNS void
AS 'MODULE_PATHNAME', 'picoroute_fdw_validator'
LANGUAGE C STRICT;

COMMENT ON FUNCTION picoroute_fdw_handler() IS
'Handler of the picoroute foreign data wrapper.';
COMMENT ON FUNCTION picoroute_fdw_validator(text[], oid) IS
'Validates the options of picoroute servers, user mappings and foreign tables.';

CREATE FOREIGN DATA WRAPPER picoroute
  HANDLER picoroute_fdw_handler
  VALIDATOR picoroute_fdw_validator;

COMMENT ON FOREIGN DATA WRAPPER picoroute IS
'Picodata tables as foreign tables: statements go to the instance that owns the bucket of their '
'sharding key. Server options: tier, scatter (coordinator|masters), read_preference '
'(leader|replica|any), picodata_version (a Picodata release as its instances report it, 25.5.1 '
'to 26.2.1-rc2: overrides the version detected from the cluster), execution_options (on|off), '
'sql_motion_row_max, sql_vdbe_opcode_max, dbname, sslmode, batch_size. User mapping: user, '
'password. Table options: table_name, sharding_key, distribution (sharded|global), batch_size, '
'sql_motion_row_max, sql_vdbe_opcode_max. Remote writes commit immediately, whatever the local '
'transaction does.';

-- ---------------------------------------------------------------------------------------------
-- Running SQL on the owner of a bucket, or on every master of a tier

CREATE FUNCTION picoroute_exec(tier text, bucket_id integer, query text,
                               read_only boolean DEFAULT false)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_exec'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION picoroute_exec(text, integer, text, boolean) IS
'Runs a query on the master of the replicaset that owns the bucket (an online replica when '
'read_only and one exists; a coordinator when the map does not know the bucket). Give the result '
'columns as with dblink: SELECT * FROM picoroute_exec(...) AS t(a bigint, b text). Connects with '
'the credentials of picoroute.conninfo. Writes commit immediately on the instance.';

CREATE FUNCTION picoroute_exec_all(tier text, query text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_exec_all'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION picoroute_exec_all(text, text) IS
'Runs a query on every master of the tier in parallel and returns all rows; if any master fails '
'the call fails (naming the replicaset and instance) and returns nothing. Connects with the '
'credentials of picoroute.conninfo.';

REVOKE ALL ON FUNCTION picoroute_exec(text, integer, text, boolean) FROM PUBLIC;
REVOKE ALL ON FUNCTION picoroute_exec_all(text, text) FROM PUBLIC;

-- ---------------------------------------------------------------------------------------------
-- The session's connection cache

CREATE FUNCTION picoroute_connections(
    OUT address text, OUT user_name text, OUT server_name text, OUT age interval,
    OUT statements bigint, OUT state text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_connections'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION picoroute_connections() IS
'Connections of this session to Picodata instances: address, remote user, foreign server (NULL '
'for picoroute_exec), time since opened, statements run, and state (idle, busy or bad).';

CREATE FUNCTION picoroute_disconnect(address text)
RETURNS integer
AS 'MODULE_PATHNAME', 'picoroute_disconnect'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION picoroute_disconnect(text) IS
'Closes this session''s idle connections to the instance at address (host:port); returns how many.';

CREATE FUNCTION picoroute_disconnect_all()
RETURNS integer
AS 'MODULE_PATHNAME', 'picoroute_disconnect_all'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION picoroute_disconnect_all() IS
'Closes all idle connections of this session to Picodata instances; returns how many.';
