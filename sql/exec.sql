-- picoroute_exec / picoroute_exec_all with parameters and picoroute_exec_masters on one server:
-- argument checks that fail before anything is sent. The map is pushed; the only instance
-- address, 127.0.0.1:1, refuses connections, so a statement that passes every check ends in an
-- error naming the instance it was sent to.

-- Start from a map without instances, replicasets or ranges (earlier suites leave theirs).
DO $$
DECLARE events jsonb;
BEGIN
  SELECT jsonb_agg(e) INTO events FROM (
    SELECT jsonb_build_object('op', 'delete', 'map', 'bucket', 'tier', tier, 'bucket_id',
                              jsonb_build_object('start', bucket_id_start, 'end', bucket_id_end)) AS e
      FROM picoroute_buckets
    UNION ALL
    SELECT jsonb_build_object('op', 'delete', 'map', 'instance', 'instance_uuid', uuid)
      FROM picoroute_instances
    UNION ALL
    SELECT jsonb_build_object('op', 'delete', 'map', 'replicaset', 'replicaset_uuid', uuid)
      FROM picoroute_replicasets) s;
  IF events IS NOT NULL THEN
    PERFORM picoroute_apply_events(events);
  END IF;
END $$;

-- Tiers cannot be removed and their number is bounded (test/regress.conf): reuse those of earlier
-- suites. Tier "t3" (100 buckets): rs_x owns 1-40 and 61-100, rs_y owns 41-60, rs_z (a new
-- replicaset) owns none. Tier "down" (10 buckets): only 1-5 have a known owner.
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "tier", "name": "t3", "bucket_count": 100},
  {"op": "replace", "map": "tier", "name": "down", "bucket_count": 10},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "rs-x", "name": "rs_x", "tier": "t3", "current_master_uuid": "ix"},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "rs-y", "name": "rs_y", "tier": "t3", "current_master_uuid": "iy"},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "rs-z", "name": "rs_z", "tier": "t3", "current_master_uuid": "iz"},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "rs-g", "name": "rs_g", "tier": "down", "current_master_uuid": "ig"},
  {"op": "replace", "map": "instance", "instance_uuid": "ix", "name": "x1", "replicaset_uuid": "rs-x", "current_state": "Online", "address": "127.0.0.1:1"},
  {"op": "replace", "map": "instance", "instance_uuid": "iy", "name": "y1", "replicaset_uuid": "rs-y", "current_state": "Online", "address": "127.0.0.1:1"},
  {"op": "replace", "map": "instance", "instance_uuid": "iz", "name": "z1", "replicaset_uuid": "rs-z", "current_state": "Online", "address": "127.0.0.1:1"},
  {"op": "replace", "map": "instance", "instance_uuid": "ig", "name": "g1", "replicaset_uuid": "rs-g", "current_state": "Online", "address": "127.0.0.1:1"},
  {"op": "replace", "map": "bucket", "tier": "t3", "state": "active", "bucket_id": {"start": 1, "end": 40}, "current_replicaset_uuid": "rs-x"},
  {"op": "replace", "map": "bucket", "tier": "t3", "state": "active", "bucket_id": {"start": 41, "end": 60}, "current_replicaset_uuid": "rs-y"},
  {"op": "replace", "map": "bucket", "tier": "t3", "state": "active", "bucket_id": {"start": 61, "end": 100}, "current_replicaset_uuid": "rs-x"},
  {"op": "replace", "map": "bucket", "tier": "down", "state": "active", "bucket_id": {"start": 1, "end": 5}, "current_replicaset_uuid": "rs-g"}
]') > 0 AS applied;

-- The signatures, and who may call them.
SELECT p.oid::regprocedure AS function, proisstrict, provolatile,
       has_function_privilege('public', p.oid, 'EXECUTE') AS public_may_execute
FROM pg_proc p WHERE proname IN ('picoroute_exec', 'picoroute_exec_all', 'picoroute_exec_masters')
ORDER BY p.oid::regprocedure::text;

\set VERBOSITY default
-- $n without values: the error says how to pass them (before, the server answered "bind message
-- supplies 0 parameters").
SELECT * FROM picoroute_exec('t3', 1, 'SELECT "name" FROM "users" WHERE "id" = $1') AS t(x text);
SELECT * FROM picoroute_exec_all('t3', 'SELECT $1') AS t(x text);
-- Wrong counts, either way.
SELECT * FROM picoroute_exec('t3', 1, 'SELECT $1, $2', ARRAY['a']) AS t(x text, y text);
SELECT * FROM picoroute_exec('t3', 1, 'SELECT $1', ARRAY['a', 'b']) AS t(x text);
SELECT * FROM picoroute_exec('t3', 1, 'SELECT 1', ARRAY['a']) AS t(x int);
SELECT * FROM picoroute_exec_all('t3', 'SELECT $2', ARRAY['a', 'b', 'c']) AS t(x text);
SELECT * FROM picoroute_exec_masters('t3', 'SELECT $1 FROM "t" WHERE {buckets}') AS t(x text);
SELECT * FROM picoroute_exec('t3', 1, 'SELECT $65536', ARRAY['a']) AS t(x text);
-- NULL arguments are errors, not an empty result; NULL elements are values. An untyped array
-- literal is ambiguous with the read_only overload: write ARRAY[...] or '{...}'::text[].
SELECT * FROM picoroute_exec('t3', 1, 'SELECT $1', '{a}') AS t(x text);
SELECT * FROM picoroute_exec(NULL, 1, 'SELECT 1', '{}'::text[]) AS t(x int);
SELECT * FROM picoroute_exec('t3', NULL, 'SELECT 1', '{}'::text[]) AS t(x int);
SELECT * FROM picoroute_exec('t3', 1, NULL, '{}'::text[]) AS t(x int);
SELECT * FROM picoroute_exec('t3', 1, 'SELECT 1', NULL::text[]) AS t(x int);
SELECT * FROM picoroute_exec('t3', 1, 'SELECT 1', '{}', NULL) AS t(x int);
SELECT * FROM picoroute_exec_all('t3', 'SELECT 1', NULL) AS t(x int);
SELECT * FROM picoroute_exec_masters('t3', NULL) AS t(x int);
SELECT * FROM picoroute_exec('t3', 1, 'SELECT $1', ARRAY[['a'], ['b']]) AS t(x text);
-- Out of range bucket and unknown tier, as without parameters.
SELECT * FROM picoroute_exec('t3', 101, 'SELECT $1', ARRAY['a']) AS t(x text);
SELECT * FROM picoroute_exec('nope', 1, 'SELECT $1', ARRAY['a']) AS t(x text);
SELECT * FROM picoroute_exec_all('nope', 'SELECT $1', ARRAY['a']) AS t(x text);

-- picoroute_exec_masters needs a {buckets} placeholder, outside literals and comments.
SELECT * FROM picoroute_exec_masters('t3', 'SELECT count(*) FROM "users"') AS t(n bigint);
SELECT * FROM picoroute_exec_masters('t3', 'SELECT ''{buckets}'' FROM "users" -- {buckets}') AS t(n text);
SELECT * FROM picoroute_exec_masters('t3', 'SELECT count(*) FROM "users" WHERE {bucket}') AS t(n bigint);
SELECT * FROM picoroute_exec_masters('t3', 'SELECT count(*) FROM "users" WHERE {buckets:u x}') AS t(n bigint);
SELECT * FROM picoroute_exec_masters('t3', 'SELECT count(*) FROM "users" WHERE {buckets') AS t(n bigint);
SELECT * FROM picoroute_exec_masters('nope', 'SELECT count(*) FROM "users" WHERE {buckets}') AS t(n bigint);
-- A map that does not know the owner of every bucket would miss rows: refused.
SELECT * FROM picoroute_exec_masters('down', 'SELECT count(*) FROM "users" WHERE {buckets}') AS t(n bigint);

-- Statements that pass every check go out: $n and braces inside literals, quoted identifiers and
-- comments are not counted; the masters of rs_x and rs_y are contacted (rs_z owns nothing).
\set VERBOSITY terse
SELECT * FROM picoroute_exec('t3', 1, 'SELECT ''$2'', "$3" /* $4 */ FROM "t" WHERE "a" = $1 -- $5', ARRAY['a']) AS t(x text);
SELECT * FROM picoroute_exec('t3', 1, 'SELECT $1', ARRAY[NULL]) AS t(x text);
SELECT * FROM picoroute_exec_masters('t3', 'SELECT count(*) FROM "users" "u" WHERE {buckets:"u"} AND "v" = $1', ARRAY['1']) AS t(n bigint);
SELECT * FROM picoroute_exec_masters('t3', 'SELECT count(*) FROM "users" WHERE {buckets}') AS t(n bigint);
\set VERBOSITY default
SELECT count(*) FROM picoroute_connections();
