-- EXPLAIN of a routed scan whose sharding key is a value computed while the statement runs (a
-- correlated subquery's parameter): without ANALYZE, or for a plan part that never ran, that value
-- does not exist. EXPLAIN must say the route depends on run-time values, never evaluate it (a
-- text key used to crash the backend, a bigint key printed the bucket of key 0). No statement
-- below reaches an instance.
SELECT pr_clear_map();
SELECT pr_push_tier('rt', 3000, '[
  {"uuid": "rs-a", "name": "rs_a", "instances": [["ia1", "a1", "192.0.2.1:4327"]], "buckets": [[1, 1500]]},
  {"uuid": "rs-b", "name": "rs_b", "instances": [["ib1", "b1", "192.0.2.3:4327"]], "buckets": [[1501, 3000]]}
]') > 0 AS applied;
CREATE SERVER rp FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'rt');
CREATE USER MAPPING FOR CURRENT_USER SERVER rp OPTIONS (user 'u', password 'p');
CREATE FOREIGN TABLE rp_int (id bigint, v text) SERVER rp OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE rp_text (k text, v text) SERVER rp OPTIONS (sharding_key 'k');
CREATE TABLE rp_local (id bigint, k text);

-- bigint key from a correlated subquery: no invented bucket.
PREPARE p_int(bigint) AS
  SELECT (SELECT v FROM rp_int f WHERE f.id = l.id) FROM rp_local l WHERE l.id = $1;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE p_int(1);
-- text key: no evaluation of a Datum that was never computed.
PREPARE p_text(text) AS
  SELECT (SELECT v FROM rp_text f WHERE f.k = l.k) FROM rp_local l WHERE l.k = $1;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE p_text('x');
-- An external parameter elsewhere in the subquery does not make the run-time key known.
PREPARE p_mixed(text) AS
  SELECT (SELECT v FROM rp_text f WHERE f.k = l.k AND f.v = $1) FROM rp_local l;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE p_mixed('x');
-- An external parameter alone is known to EXPLAIN EXECUTE: the route is shown.
PREPARE p_direct(bigint) AS SELECT v FROM rp_int WHERE id = $1;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE p_direct(1);
PREPARE p_direct_text(text) AS SELECT v FROM rp_text WHERE k = $1;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE p_direct_text('lol');
-- A generic plan: the parameter has a value at EXECUTE.
SET plan_cache_mode = force_generic_plan;
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE p_int(1);
EXPLAIN (VERBOSE, COSTS OFF) EXECUTE p_direct(1);
RESET plan_cache_mode;

-- auto_explain logs the plan after the statement ran; the subqueries never ran (rp_local is
-- empty), so their keys were never computed.
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_analyze = off;
SET auto_explain.log_verbose = on;
SELECT (SELECT v FROM rp_text f WHERE f.k = l.k) FROM rp_local l;
SELECT (SELECT v FROM rp_int f WHERE f.id = l.id) FROM rp_local l;
EXECUTE p_text('x');
EXECUTE p_int(1);
RESET auto_explain.log_min_duration;
SELECT 'still connected' AS backend;

DEALLOCATE ALL;
DROP TABLE rp_local;
DROP SERVER rp CASCADE;
