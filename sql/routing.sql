-- The routing surface on one server: FDW options, planning, EXPLAIN with the routing decision, and
-- errors. The map is pushed (picoroute.source = 'push'); no statement below reaches an instance
-- except the one that shows an unreachable address.

-- Start from a map without instances, replicasets or ranges (pr_clear_map, from the setup suite).
SELECT pr_clear_map();
SELECT (SELECT count(*) FROM picoroute_instances) AS instances,
       (SELECT count(*) FROM picoroute_replicasets) AS replicasets,
       (SELECT count(*) FROM picoroute_buckets) AS ranges;

-- The map of tier "rt" (from the setup suite): rs_a owns 1-1500 (master ia1, replica ia2), rs_b
-- owns 1501-2900 (master ib1), buckets 2901-3000 are unknown. Addresses are never contacted.
SELECT pr_push_tier_rt() > 0 AS applied;

-- A statement without a sharding key goes to one coordinator chosen per session among the online
-- masters of the tier (read_preference leader): its address depends on the session, so EXPLAIN
-- shows which masters it may be.
CREATE FUNCTION explain_masked(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || query LOOP
    RETURN NEXT regexp_replace(line, '(coordinator |global table: )192\.0\.2\.[13]:4327',
                               '\1<master a1 or b1>');
  END LOOP;
END $$;

-- Option validation.
CREATE SERVER rt_bad FOREIGN DATA WRAPPER picoroute OPTIONS (host 'x');
CREATE SERVER rt_bad FOREIGN DATA WRAPPER picoroute OPTIONS (scatter 'everywhere');
CREATE SERVER rt_bad FOREIGN DATA WRAPPER picoroute OPTIONS (read_preference 'nearest');
CREATE SERVER rt_bad FOREIGN DATA WRAPPER picoroute OPTIONS (batch_size '0');
CREATE SERVER rt_bad FOREIGN DATA WRAPPER picoroute OPTIONS (tier '');
CREATE SERVER rt FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'rt', dbname 'picodata');
CREATE SERVER rt_m FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'rt', scatter 'masters',
    picodata_version '26.2.1-rc2');
CREATE SERVER rt_r FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'rt', read_preference 'replica');
CREATE USER MAPPING FOR CURRENT_USER SERVER rt OPTIONS (user 'u', password 'p', dbname 'x');
CREATE USER MAPPING FOR CURRENT_USER SERVER rt OPTIONS (user 'u', password 'p');
CREATE FOREIGN TABLE rt_bad (id bigint) SERVER rt OPTIONS (distribution 'replicated');
CREATE FOREIGN TABLE rt_bad (id bigint) SERVER rt OPTIONS (distribution 'global', sharding_key 'id');
CREATE FOREIGN TABLE rt_bad (id bigint) SERVER rt OPTIONS (sharding_key '');
CREATE FOREIGN TABLE rt_bad (id bigint) SERVER rt OPTIONS (tier 'rt');

CREATE FOREIGN TABLE users (id bigint, name text, v bigint) SERVER rt OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE users_m (id bigint, name text, v bigint) SERVER rt_m
    OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE users_r (id bigint, name text, v bigint) SERVER rt_r
    OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE pairs (a text, b bigint, note text) SERVER rt
    OPTIONS (table_name 'Pairs', sharding_key 'a, b', batch_size '2');
CREATE FOREIGN TABLE settings (name text, value text) SERVER rt OPTIONS (distribution 'global');
CREATE FOREIGN TABLE badkey (id bigint) SERVER rt OPTIONS (sharding_key 'nope');

-- Routing by key: one bucket (picoroute_bucket_id agrees), IN lists grouped per owner, NULL and
-- two-column keys, an unknown bucket sent to a coordinator.
SELECT picoroute_bucket_id('rt', 1::bigint) AS b1, picoroute_bucket_id('rt', 'lol'::text, 5::bigint) AS b442;
EXPLAIN (COSTS OFF) SELECT * FROM users WHERE id = 1;
EXPLAIN (COSTS OFF) SELECT name FROM users WHERE id IN (1, 2, 3, 4) AND v > 10;
EXPLAIN (COSTS OFF) SELECT * FROM pairs WHERE a = 'lol' AND b = 5;
EXPLAIN (COSTS OFF) SELECT * FROM pairs WHERE b = 5 AND a IS NULL;
EXPLAIN (COSTS OFF) SELECT * FROM users WHERE id = ANY ('{}'::bigint[]);
SELECT picoroute_bucket_id('rt', 122::bigint) AS unknown_bucket;
EXPLAIN (COSTS OFF) SELECT * FROM users WHERE id = 122;
EXPLAIN (COSTS OFF) SELECT * FROM users WHERE id IN (13, 122, 1);
-- read_preference replica: a replica when the owner has an online one, else its master.
EXPLAIN (COSTS OFF) SELECT * FROM users_r WHERE id = 13;
EXPLAIN (COSTS OFF) SELECT * FROM users_r WHERE id = 1;
-- Key conditions that do not fix the key: scatter.
SELECT explain_masked($q$SELECT * FROM users WHERE id > 1$q$);
-- An OR of key equalities is the key list it means (as id IN (1, 2)).
SELECT explain_masked($q$SELECT * FROM users WHERE id = 1 OR id = 2$q$);
-- A scatter over masters refuses to run while the map misses buckets (it would miss rows)...
EXPLAIN (COSTS OFF) SELECT count(*) FROM users_m WHERE name LIKE 'a%' AND NOT (v IS NULL);
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "bucket", "tier": "rt", "state": "active", "bucket_id": {"start": 2901, "end": 3000}, "current_replicaset_uuid": "rs-b"}
]') > 0 AS applied;
-- ... and once the map covers the tier, sends each master its own bucket list: 1500 buckets are
-- more OR-of-AND chains than Picodata expands (513), so each master gets 3 statements within.
SELECT explain_masked($q$SELECT count(*) FROM users_m WHERE name LIKE 'a%' AND NOT (v IS NULL)$q$);
SELECT explain_masked($q$SELECT * FROM settings$q$);
-- Pushdown: only needed columns; unsupported expressions stay local.
EXPLAIN (VERBOSE, COSTS OFF) SELECT name FROM users WHERE id = 1 AND lower(name) = 'x';
SELECT explain_masked($q$SELECT * FROM users WHERE v <> -5 AND name NOT LIKE '%''%' AND id NOT IN (7, 8)$q$);
SELECT explain_masked($q$SELECT * FROM users u WHERE u.v = (SELECT max(id) FROM users WHERE id = 2)$q$);
-- Parameters: routed at execution; EXPLAIN EXECUTE sees the values.
SET plan_cache_mode = force_generic_plan;
PREPARE q(bigint) AS SELECT * FROM users WHERE id = $1;
EXPLAIN (COSTS OFF) EXECUTE q(1);
EXPLAIN (COSTS OFF) EXECUTE q(13);
PREPARE q2(text, bigint) AS SELECT * FROM pairs WHERE a = $1 AND b = $2;
EXPLAIN (COSTS OFF) EXECUTE q2('lol', 5);
RESET plan_cache_mode;

-- Modifications.
EXPLAIN (COSTS OFF) UPDATE users SET v = v + 1, name = 'x' WHERE id = 1;
EXPLAIN (COSTS OFF) DELETE FROM users WHERE id IN (1, 2);
SELECT explain_masked($q$DELETE FROM users_m WHERE v > 3$q$);
EXPLAIN (COSTS OFF) INSERT INTO users VALUES (1, 'a', 2);
UPDATE users SET id = 2 WHERE id = 1;
UPDATE pairs SET b = 2 WHERE a = 'x';
-- Not one remote statement (a function evaluated here, a join with a local relation, RETURNING):
-- the old rows are read by the scan below and written row by row, by primary key.
EXPLAIN (VERBOSE, COSTS OFF) UPDATE users SET v = length(name) WHERE id = 1;
EXPLAIN (VERBOSE, COSTS OFF) DELETE FROM users WHERE id = 2 AND lower(name) = 'x';
EXPLAIN (VERBOSE, COSTS OFF) UPDATE users SET v = u.n FROM (VALUES (1, 10), (2, 20)) u(id, n) WHERE users.id = u.id;
EXPLAIN (VERBOSE, COSTS OFF) UPDATE users SET v = v + 1 WHERE id = 1 RETURNING id, v;
EXPLAIN (VERBOSE, COSTS OFF) DELETE FROM users WHERE id = 1 RETURNING name;
-- With the table option primary_key, EXPLAIN shows the statement of a row in full (the identity:
-- the primary key, then the sharding-key columns not in it).
CREATE FOREIGN TABLE users_pk (id bigint, name text, v bigint) SERVER rt
    OPTIONS (table_name 'users', sharding_key 'v', primary_key 'id');
EXPLAIN (VERBOSE, COSTS OFF) UPDATE users_pk SET name = upper(name) WHERE v = 3;
ALTER FOREIGN TABLE users_pk OPTIONS (SET primary_key 'id, "x""y"');
ALTER FOREIGN TABLE users_pk OPTIONS (SET primary_key 'nope');
EXPLAIN (VERBOSE, COSTS OFF) DELETE FROM users_pk WHERE lower(name) = 'x' AND v = 3;
DROP FOREIGN TABLE users_pk;
-- RETURNING is answered from the values sent; bucket_id, which Picodata computes, cannot be.
EXPLAIN (COSTS OFF, VERBOSE) INSERT INTO users VALUES (1, 'a', 2) RETURNING id, v;
CREATE FOREIGN TABLE users_b (id bigint, name text, bucket_id integer) SERVER rt
  OPTIONS (table_name 'users', sharding_key 'id');
INSERT INTO users_b (id, name) VALUES (1, 'a') RETURNING *;
INSERT INTO users_b (id, name) VALUES (1, 'a') RETURNING bucket_id;
DROP FOREIGN TABLE users_b;
INSERT INTO users VALUES (1, 'a', 2) ON CONFLICT DO NOTHING;

-- Errors.
SELECT * FROM badkey WHERE id = 1;
SELECT * FROM picoroute_exec('rt', 0, 'SELECT 1') AS t(x int);
SELECT * FROM picoroute_exec('rt', 3001, 'SELECT 1') AS t(x int);
-- (terse: the hint of an unknown tier lists every tier known, which depends on the suites run before)
\set VERBOSITY terse
SELECT * FROM picoroute_exec('nope', 1, 'SELECT 1') AS t(x int);
\set VERBOSITY default
SELECT * FROM picoroute_exec('rt', 1, 'SELECT 1');
\set VERBOSITY terse
SELECT * FROM picoroute_exec_all('nope', 'SELECT 1') AS t(x int);
\set VERBOSITY default
CREATE SERVER rt_nokey FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'nope');
CREATE USER MAPPING FOR CURRENT_USER SERVER rt_nokey;
CREATE FOREIGN TABLE nokey (id bigint) SERVER rt_nokey OPTIONS (sharding_key 'id');
\set VERBOSITY terse
SELECT * FROM nokey WHERE id = 1;
\set VERBOSITY default
-- An instance that refuses connections: the error names it; nothing is cached.
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "tier", "name": "down", "bucket_count": 10},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "rs-d", "name": "rs_d", "tier": "down", "current_master_uuid": "id1"},
  {"op": "replace", "map": "instance", "instance_uuid": "id1", "name": "d1", "replicaset_uuid": "rs-d", "current_state": "Online", "address": "127.0.0.1:1"},
  {"op": "replace", "map": "bucket", "tier": "down", "state": "active", "bucket_id": {"start": 1, "end": 10}, "current_replicaset_uuid": "rs-d"}
]') > 0 AS applied;
CREATE SERVER rt_down FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'down', scatter 'masters',
    picodata_version '26.2.1-rc2');
CREATE USER MAPPING FOR CURRENT_USER SERVER rt_down OPTIONS (user 'u', password 'p');
CREATE FOREIGN TABLE down_t (id bigint) SERVER rt_down OPTIONS (sharding_key 'id');
\set VERBOSITY terse
SELECT * FROM down_t;
\set VERBOSITY default
SELECT count(*) FROM picoroute_connections();
SELECT picoroute_disconnect('127.0.0.1:1'), picoroute_disconnect_all();

-- Options changed in this session are seen by the next statement: a backend keeps a table's
-- options between statements and reads them again after any change of the table, its columns or
-- its server.
ALTER FOREIGN TABLE users OPTIONS (SET sharding_key 'v', ADD table_name 'people');
SELECT explain_masked($q$SELECT * FROM users WHERE id = 1$q$);
EXPLAIN (COSTS OFF) SELECT * FROM users WHERE v = 1;
ALTER FOREIGN TABLE users OPTIONS (SET sharding_key 'id', DROP table_name);
ALTER FOREIGN TABLE users RENAME COLUMN id TO ident;
EXPLAIN (COSTS OFF) SELECT * FROM users WHERE ident = 1;
ALTER FOREIGN TABLE users RENAME COLUMN ident TO id;
EXPLAIN (COSTS OFF) SELECT * FROM users WHERE id = 1;
ALTER SERVER rt_m OPTIONS (SET picodata_version '26.2.1-rc1');
SELECT explain_masked($q$SELECT count(*) FROM users_m$q$);
ALTER SERVER rt_m OPTIONS (SET picodata_version '26.2.1-rc2');
SELECT explain_masked($q$SELECT count(*) FROM users_m$q$);

-- Privileges: exec functions are not granted to PUBLIC; the cache functions are.
SELECT p.oid::regprocedure AS function, has_function_privilege('public', p.oid, 'EXECUTE') AS public_may_execute
FROM pg_proc p WHERE proname IN ('picoroute_exec', 'picoroute_exec_all', 'picoroute_connections',
                                 'picoroute_disconnect', 'picoroute_disconnect_all')
ORDER BY p.oid::regprocedure::text;
-- A non-superuser needs a password in its user mapping.
CREATE ROLE regress_picoroute_user;
GRANT USAGE ON FOREIGN SERVER rt TO regress_picoroute_user;
GRANT SELECT ON users TO regress_picoroute_user;
CREATE USER MAPPING FOR regress_picoroute_user SERVER rt OPTIONS (user 'u');
SET ROLE regress_picoroute_user;
SELECT * FROM users WHERE id = 1;
RESET ROLE;

DROP FOREIGN TABLE users, users_m, users_r, pairs, settings, badkey, nokey, down_t;
DROP USER MAPPING FOR regress_picoroute_user SERVER rt;
REVOKE ALL ON FOREIGN SERVER rt FROM regress_picoroute_user;
DROP ROLE regress_picoroute_user;
DROP SERVER rt, rt_m, rt_r, rt_nokey, rt_down CASCADE;
DROP FUNCTION explain_masked(text);
