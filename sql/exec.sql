-- picoroute_exec / picoroute_exec_all with parameters and picoroute_exec_masters on one server:
-- argument checks that fail before anything is sent. The map is pushed; the only instance
-- address, 127.0.0.1:1, refuses connections, so a statement that passes every check ends in an
-- error naming the instance it was sent to.

-- Start from a map without instances, replicasets or ranges (earlier suites leave theirs).
SELECT pr_clear_map();
-- The only instance refuses connections: a statement is not sent again while waiting for a new
-- master (picoroute.failover_wait), which would only delay each error.
SET picoroute.failover_wait = 0;

-- Tiers cannot be removed and their number is bounded (test/regress.conf): reuse those of earlier
-- suites. Tier "t3" (100 buckets): rs_x owns 1-40 and 61-100, rs_y owns 41-60, rs_z (a new
-- replicaset) owns none. Tier "down" (10 buckets): only 1-5 have a known owner.
SELECT pr_push_tier('t3', 100, '[
  {"uuid": "rs-x", "name": "rs_x", "instances": [["ix", "x1", "127.0.0.1:1"]], "buckets": [[1, 40], [61, 100]]},
  {"uuid": "rs-y", "name": "rs_y", "instances": [["iy", "y1", "127.0.0.1:1"]], "buckets": [[41, 60]]},
  {"uuid": "rs-z", "name": "rs_z", "instances": [["iz", "z1", "127.0.0.1:1"]]}
]') > 0 AS applied;
SELECT pr_push_tier('down', 10, '[
  {"uuid": "rs-g", "name": "rs_g", "instances": [["ig", "g1", "127.0.0.1:1"]], "buckets": [[1, 5]]}
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
-- The same without parameters.
SELECT * FROM picoroute_exec(NULL, 1, 'SELECT 1') AS t(x int);
SELECT * FROM picoroute_exec('t3', NULL, 'SELECT 1') AS t(x int);
SELECT * FROM picoroute_exec('t3', 1, NULL) AS t(x int);
SELECT * FROM picoroute_exec('t3', 1, 'SELECT 1', NULL::boolean) AS t(x int);
SELECT * FROM picoroute_exec_all(NULL, 'SELECT 1') AS t(x int);
SELECT * FROM picoroute_exec_all('t3', NULL) AS t(x int);
SELECT * FROM picoroute_exec('t3', 1, 'SELECT $1', ARRAY[['a'], ['b']]) AS t(x text);
-- Out of range bucket and unknown tier, as without parameters.
SELECT * FROM picoroute_exec('t3', 101, 'SELECT $1', ARRAY['a']) AS t(x text);
-- (terse: the hint of an unknown tier lists every tier known, which depends on the suites run before)
\set VERBOSITY terse
SELECT * FROM picoroute_exec('nope', 1, 'SELECT $1', ARRAY['a']) AS t(x text);
SELECT * FROM picoroute_exec_all('nope', 'SELECT $1', ARRAY['a']) AS t(x text);
\set VERBOSITY default

-- picoroute_exec_masters needs a {buckets} placeholder, outside literals and comments.
SELECT * FROM picoroute_exec_masters('t3', 'SELECT count(*) FROM "users"') AS t(n bigint);
SELECT * FROM picoroute_exec_masters('t3', 'SELECT ''{buckets}'' FROM "users" -- {buckets}') AS t(n text);
SELECT * FROM picoroute_exec_masters('t3', 'SELECT count(*) FROM "users" WHERE {bucket}') AS t(n bigint);
SELECT * FROM picoroute_exec_masters('t3', 'SELECT count(*) FROM "users" WHERE {buckets:u x}') AS t(n bigint);
SELECT * FROM picoroute_exec_masters('t3', 'SELECT count(*) FROM "users" WHERE {buckets') AS t(n bigint);
\set VERBOSITY terse
SELECT * FROM picoroute_exec_masters('nope', 'SELECT count(*) FROM "users" WHERE {buckets}') AS t(n bigint);
\set VERBOSITY default
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
