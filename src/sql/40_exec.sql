-- picoroute: running SQL with parameters, and on every master restricted to its own buckets
-- (appended to the extension script).

-- ---------------------------------------------------------------------------------------------
-- Parameters: the values of a text array are bound as $1, $2, ... in text format, never written
-- into the statement. Picodata infers each parameter's type from its context; a NULL element is
-- sent as NULL. The highest $n of the query must equal the number of values.

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
