-- ANALYZE of picoroute foreign tables on one server: what fails before anything is sent, the
-- setting of the OPTION clause, and the planner's estimate before and after (reltuples). The
-- statements themselves are tested against an emulated cluster (test/t).

-- Tier "t3" with one replicaset, its instance unreachable (127.0.0.1:1), as in the exec suite.
SELECT pr_clear_map();
SELECT pr_push_tier('t3', 100, '[
  {"uuid": "rs-x", "name": "rs_x", "instances": [["ix", "x1", "127.0.0.1:1"]], "buckets": [[1, 100]]}
]') > 0 AS applied;
SELECT name, bucket_count FROM picoroute_tiers WHERE name = 't3';
CREATE SERVER an_srv FOREIGN DATA WRAPPER picoroute OPTIONS (tier 't3');
CREATE USER MAPPING FOR CURRENT_USER SERVER an_srv OPTIONS (user 'u', password 'p');
CREATE FOREIGN TABLE an_t (id bigint, name text) SERVER an_srv OPTIONS (sharding_key 'id');
CREATE SERVER an_nope FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'nope');
CREATE USER MAPPING FOR CURRENT_USER SERVER an_nope OPTIONS (user 'u', password 'p');
CREATE FOREIGN TABLE an_nope_t (id bigint) SERVER an_nope OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE an_quote (id bigint, "a""b" text) SERVER an_srv OPTIONS (sharding_key 'id');

-- The planner's row estimate of a query.
CREATE FUNCTION plan_rows(query text) RETURNS float8 LANGUAGE plpgsql AS $$
DECLARE plan json;
BEGIN
  EXECUTE 'EXPLAIN (FORMAT JSON) ' || query INTO plan;
  RETURN (plan->0->'Plan'->>'Plan Rows')::float8;
END $$;

-- Never analyzed: reltuples -1, the planner assumes 1000 rows.
SELECT reltuples FROM pg_class WHERE oid = 'an_t'::regclass;
SELECT plan_rows('SELECT * FROM an_t');

-- Errors name what failed; nothing is stored.
ANALYZE an_t;
-- (terse: the hint of an unknown tier lists every tier known, which depends on the suites run before)
\set VERBOSITY terse
ANALYZE an_nope_t;
\set VERBOSITY default
ANALYZE an_quote;
SELECT reltuples FROM pg_class WHERE oid = 'an_t'::regclass;

-- The OPTION clause: name = integer pairs only (it goes into the remote statement).
SHOW picoroute.analyze_option;
SET picoroute.analyze_option = 'sql_motion_row_max = 100000';
SET picoroute.analyze_option = '';
SET picoroute.analyze_option = 'sql_motion_row_max = 0) ; DELETE FROM "t" --';
SET picoroute.analyze_option = 'read_preference = replica';
SET picoroute.analyze_option = 'sql_motion_row_max = 0,';
RESET picoroute.analyze_option;
CREATE ROLE regress_picoroute_analyze;
SET ROLE regress_picoroute_analyze;
SET picoroute.analyze_option = '';
RESET ROLE;
DROP ROLE regress_picoroute_analyze;

-- Once analyzed, the planner uses reltuples (set here by hand: the count ANALYZE would store)
-- and the selectivity of every clause, pushed down or not.
UPDATE pg_class SET reltuples = 20000 WHERE oid = 'an_t'::regclass;
SELECT plan_rows('SELECT * FROM an_t') AS all_rows,
       plan_rows('SELECT * FROM an_t WHERE id = 5') AS by_key,
       plan_rows('SELECT * FROM an_t WHERE id = 5 AND length(name) = 3') AS with_local_filter;

DROP FOREIGN TABLE an_t, an_nope_t, an_quote;
DROP SERVER an_srv, an_nope CASCADE;
DROP FUNCTION plan_rows(text);
