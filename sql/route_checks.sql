-- Routing that verifies itself, on one server: its settings, the view picoroute_route_checks, a
-- check that cannot run (recorded as unknown, tried again later; the statement goes on), EXPLAIN
-- that asks the cluster nothing, and the setting that turns checking off. The checks that reach a
-- cluster are TAP test 076_route_check.pl. Nothing listens at the instance's address below
-- (127.0.0.1:9): every connection is refused at once.
SELECT pr_clear_map();
SELECT pr_push_tier('rt', 3000, '[
  {"uuid": "rc-a", "name": "rc_a", "instances": [["rc1", "rc1", "127.0.0.1:9"]], "buckets": [[1, 3000]]}
]') > 0 AS applied;

SELECT name, setting, context, vartype, min_val, max_val
FROM pg_settings WHERE name IN ('picoroute.route_check', 'picoroute.max_route_checks')
ORDER BY name;

-- The view's columns, in order.
SELECT attnum, attname, format_type(atttypid, atttypmod) AS type
FROM pg_attribute WHERE attrelid = 'picoroute_route_checks'::regclass AND attnum > 0
ORDER BY attnum;

CREATE SERVER rc FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'rt', dbname 'picodata');
CREATE USER MAPPING FOR CURRENT_USER SERVER rc OPTIONS (user 'u', password 'p');
CREATE FOREIGN TABLE rc_int (id bigint, v text) SERVER rc OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE rc_pair (a text, b integer) SERVER rc OPTIONS (sharding_key 'a, b');
CREATE FOREIGN TABLE rc_off (id bigint) SERVER rc OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE rc_global (id bigint) SERVER rc OPTIONS (distribution 'global');
SET picoroute.failover_wait = 0;
SET picoroute.remote_write_in_transaction = off;

-- EXPLAIN shows the verdict recorded and asks the cluster nothing: nothing is recorded.
EXPLAIN (COSTS OFF) SELECT * FROM rc_int WHERE id = 1;
SELECT count(*) FROM picoroute_route_checks WHERE foreign_table LIKE 'public.rc%';

-- The first keyed statement checks first; a check that cannot run is "unknown" and the statement
-- goes on (here it fails on its own: nothing listens there). A key of two columns is one signature.
-- A statement without a key, or on a global table, is not checked.
SELECT split_part(pr_try('SELECT * FROM rc_int WHERE id = 1'), ':', 1) AS sqlstate;
SELECT split_part(pr_try('INSERT INTO rc_pair VALUES (''x'', 1)'), ':', 1) AS sqlstate;
SELECT split_part(pr_try('SELECT * FROM rc_int'), ':', 1) AS sqlstate;
SELECT split_part(pr_try('SELECT * FROM rc_global WHERE id = 1'), ':', 1) AS sqlstate;
SELECT database = current_database() AS this_database, foreign_table, key_types, picodata_version,
       hash_rule, state, sample, picoroute_bucket, picodata_bucket,
       detail LIKE '%127.0.0.1:9%' AS detail_names_the_instance, checked_at IS NOT NULL AS checked,
       next_check >= checked_at + interval '9 s' AS retried_later, attempts
FROM picoroute_route_checks WHERE foreign_table LIKE 'public.rc%' ORDER BY foreign_table;

-- Until next_check the verdict stands: no new attempt.
SELECT split_part(pr_try('DELETE FROM rc_int WHERE id = 2'), ':', 1) AS sqlstate;
SELECT attempts FROM picoroute_route_checks WHERE foreign_table = 'public.rc_int';

-- picoroute.route_check = off: keyed statements are routed by picoroute's bucket unchecked.
SET picoroute.route_check = off;
SELECT split_part(pr_try('SELECT * FROM rc_off WHERE id = 1'), ':', 1) AS sqlstate;
SELECT count(*) FROM picoroute_route_checks WHERE foreign_table = 'public.rc_off';
RESET picoroute.route_check;

-- Only a superuser may turn it off; every role reads the view.
CREATE ROLE regress_route_check_reader;
SET ROLE regress_route_check_reader;
SET picoroute.route_check = off;
SELECT count(*) > 0 AS readable FROM picoroute_route_checks WHERE foreign_table LIKE 'public.rc%';
RESET ROLE;
DROP ROLE regress_route_check_reader;
