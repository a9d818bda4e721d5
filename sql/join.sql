-- Joins of local tables with picoroute foreign tables on the sharding key: a parameterized path
-- makes the foreign scan a routed lookup per outer row (nested loop), when the outer side is
-- small; pinned by EXPLAIN VERBOSE (Remote SQL with the key as a parameter). No statement below
-- reaches an instance.
-- The map of tier "dt" and explain_v come from the setup suite.
SELECT pr_clear_map();
SELECT pr_push_tier_dt() > 0 AS applied;
CREATE SERVER j FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'dt');
CREATE USER MAPPING FOR CURRENT_USER SERVER j OPTIONS (user 'u', password 'p');
CREATE FOREIGN TABLE users (id bigint, name text, v bigint) SERVER j OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE pairs (a text, b bigint, note text) SERVER j
    OPTIONS (table_name 'pairs', sharding_key 'a, b');
CREATE FOREIGN TABLE prices (k numeric(10,2), label text) SERVER j OPTIONS (sharding_key 'k');
CREATE FOREIGN TABLE countries (code text, name text) SERVER j OPTIONS (distribution 'global');
-- The row counts ANALYZE would have found (it needs the cluster).
UPDATE pg_class SET reltuples = 100000 WHERE oid IN ('users'::regclass, 'pairs'::regclass,
                                                     'prices'::regclass, 'countries'::regclass);

-- The batched join (pinned at the end) is off until then: the plans above it are the lookup per
-- outer row and the scans the planner weighs it against.
SET picoroute.join_batch_size = 0;

CREATE TABLE local_ids (id bigint, i integer, t text, n numeric, a text);
INSERT INTO local_ids SELECT g, g, g::text, g + 0.5, 'k' || g FROM generate_series(1, 100) g;
CREATE TABLE local_big (id bigint);
INSERT INTO local_big SELECT generate_series(1, 100000);
ANALYZE local_ids, local_big;

-- 100 local keys: a nested loop, the foreign scan a lookup per outer row with the key as $1
-- (typed by the column it is compared with), routed when each row arrives.
SELECT * FROM explain_v($$SELECT u.id, u.name FROM local_ids l JOIN users u ON u.id = l.id$$);
-- The key from an integer column, from a cast of a text column (computed here, sent as $1).
SELECT * FROM explain_v($$SELECT u.name FROM local_ids l JOIN users u ON u.id = l.i$$);
SELECT * FROM explain_v($$SELECT u.name FROM local_ids l JOIN users u ON u.id = l.t::bigint$$);
-- Other conditions on the foreign table go with the lookup.
SELECT * FROM explain_v($$SELECT u.name FROM local_ids l JOIN users u ON u.id = l.id AND u.v <> 10 WHERE u.name <> 'x'$$);
-- A semi-join and a left join.
SELECT * FROM explain_v($$SELECT l.id FROM local_ids l WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = l.id)$$);
SELECT * FROM explain_v($$SELECT l.id, u.name FROM local_ids l LEFT JOIN users u ON u.id = l.id$$);
-- A composite key fixed by two join clauses; a decimal key (the value gets the column's scale).
SELECT * FROM explain_v($$SELECT p.note FROM local_ids l JOIN pairs p ON p.a = l.a AND p.b = l.id$$);
SELECT * FROM explain_v($$SELECT p.label FROM local_ids l JOIN prices p ON p.k = l.n$$);

-- Not a lookup per row:
-- 100,000 local keys (one scan of the table is cheaper);
SELECT * FROM explain_v($$SELECT u.name FROM local_big l JOIN users u ON u.id = l.id$$);
-- conditions that leave few rows of the table (one scan of those is cheaper);
SELECT * FROM explain_v($$SELECT u.name FROM local_ids l JOIN users u ON u.id = l.id AND u.v > 10 WHERE u.name LIKE 'a%'$$);
-- nested loops turned off;
SET enable_nestloop = off;
SELECT * FROM explain_v($$SELECT u.name FROM local_ids l JOIN users u ON u.id = l.id$$);
RESET enable_nestloop;
-- a join on another column, on half a composite key, with a global table.
SELECT * FROM explain_v($$SELECT u.name FROM local_ids l JOIN users u ON u.v = l.id$$);
SELECT * FROM explain_v($$SELECT p.note FROM local_ids l JOIN pairs p ON p.b = l.id$$);
SELECT * FROM explain_v($$SELECT c.name FROM local_ids l JOIN countries c ON c.code = l.t$$) e
  WHERE e NOT LIKE '%Routing: global table%';

-- A test of a parameter alone ($1 IS NULL) is decided here: nothing on the remote side would fix
-- the parameter's type.
SET plan_cache_mode = force_generic_plan;
PREPARE nt(bigint) AS SELECT name FROM users WHERE v = 1 AND (id = 5 OR $1 IS NULL);
SELECT * FROM explain_v($$EXECUTE nt(3)$$);
DEALLOCATE nt;
PREPARE pp(bigint, bigint) AS SELECT name FROM users WHERE v = 1 AND (v = 2 OR $1 = $2);
SELECT * FROM explain_v($$EXECUTE pp(3, 4)$$);
DEALLOCATE pp;
RESET plan_cache_mode;

-- The batched join (picoroute.join_batch_size, 256 by default): for 100 local keys, a Custom Scan
-- that reads the outer rows in batches and sends each batch's distinct keys as one IN list per
-- owning instance; the conditions on the foreign table go with it, their parameters first; the
-- join's clauses are evaluated again here (Join Filter).
RESET picoroute.join_batch_size;
SELECT * FROM explain_v($$SELECT u.id, u.name FROM local_ids l JOIN users u ON u.id = l.id$$);
SELECT * FROM explain_v($$SELECT u.name, l.t FROM local_ids l JOIN users u ON u.id = l.id AND u.v <> l.i WHERE u.name <> 'x'$$);
-- Left, semi and anti joins: an outer row without a match keeps NULL inner columns (left), is
-- emitted once (semi) or only without a match (anti); a filter above a left join stays above it.
SELECT * FROM explain_v($$SELECT l.id, u.name FROM local_ids l LEFT JOIN users u ON u.id = l.id AND u.v <> l.i WHERE coalesce(u.v, 0) <> l.i$$);
SELECT * FROM explain_v($$SELECT l.id FROM local_ids l WHERE EXISTS (SELECT 1 FROM users u WHERE u.id = l.id AND u.name ~ 'x')$$);
SELECT * FROM explain_v($$SELECT l.id FROM local_ids l WHERE NOT EXISTS (SELECT 1 FROM users u WHERE u.id = l.id)$$);
SET plan_cache_mode = force_generic_plan;
PREPARE bj(bigint) AS SELECT u.name FROM local_ids l JOIN users u ON u.id = l.id WHERE u.v > $1;
SELECT * FROM explain_v($$EXECUTE bj(3)$$);
DEALLOCATE bj;
RESET plan_cache_mode;
-- Not batched: a key of another type (int4 against bigint: a lookup per row), a composite key, a
-- decimal key, a global table, 100,000 local keys (a hash join over one scan).
SELECT * FROM explain_v($$SELECT u.name FROM local_ids l JOIN users u ON u.id = l.i$$);
SELECT * FROM explain_v($$SELECT p.note FROM local_ids l JOIN pairs p ON p.a = l.a AND p.b = l.id$$);
SELECT * FROM explain_v($$SELECT p.label FROM local_ids l JOIN prices p ON p.k = l.n$$);
SELECT * FROM explain_v($$SELECT u.name FROM local_big l JOIN users u ON u.id = l.id$$);
-- A batch of 1000 keys: at most 513 per statement (the OR-of-AND chains Picodata expands), fewer when the
-- conditions sent with them already expand into several chains.
SET picoroute.join_batch_size = 1000;
SELECT * FROM explain_v($$SELECT u.name FROM local_ids l JOIN users u ON u.id = l.id$$) e
  WHERE e LIKE '%Batch Size%' OR e LIKE '%Keys per Statement%';
-- (The filter makes one scan of users the cheaper plan: the other joins are turned off to show the
-- batched join's statements.)
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SELECT * FROM explain_v($$SELECT u.name FROM local_ids l JOIN users u ON u.id = l.id AND (u.v = 1 OR u.v = 2 OR u.v = 3)$$) e
  WHERE e LIKE '%Keys per Statement%' OR e LIKE '%Remote SQL%';
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET picoroute.join_batch_size;

-- The key compared with an array known only at execution (sent as IN lists: Picodata reads no
-- arrays before 26.2.1-rc1): the array is evaluated once, its distinct values go to their owners as
-- IN lists, and the clause is not evaluated here. An array of a subquery, an int4 array against the bigint key, a bound array in a
-- generic plan, with a condition sent along (fewer keys per statement) and one evaluated here.
SELECT * FROM explain_v($$SELECT name FROM users WHERE id = ANY(ARRAY(SELECT id FROM local_ids))$$);
SELECT * FROM explain_v($$SELECT name FROM users WHERE id = ANY(ARRAY(SELECT i FROM local_ids))$$);
SET plan_cache_mode = force_generic_plan;
PREPARE ak(bigint[]) AS SELECT name FROM users WHERE id = ANY($1) AND (v = 1 OR v = 2) AND name ~ 'x';
SELECT * FROM explain_v($$EXECUTE ak('{1,2}')$$);
DEALLOCATE ak;
RESET plan_cache_mode;
-- Evaluated here: an array of another type, a decimal key, a composite key, a volatile array, a
-- key the statement already fixes; a constant array is a key list of its own.
SELECT * FROM explain_v($$SELECT name FROM users WHERE id = ANY(ARRAY(SELECT n FROM local_ids))$$);
SELECT * FROM explain_v($$SELECT label FROM prices WHERE k = ANY(ARRAY(SELECT n FROM local_ids))$$);
SELECT * FROM explain_v($$SELECT note FROM pairs WHERE a = ANY(ARRAY(SELECT a FROM local_ids))$$);
SELECT * FROM explain_v($$SELECT name FROM users WHERE id = ANY(ARRAY[1, (random() * 10)::bigint])$$);
SELECT * FROM explain_v($$SELECT name FROM users WHERE id = 5 AND id = ANY(ARRAY(SELECT id FROM local_ids))$$);
SELECT * FROM explain_v($$SELECT name FROM users WHERE id = ANY(ARRAY[1, 2, 3])$$);
-- Never for the target of an UPDATE or DELETE: one remote statement carries only the clauses
-- Picodata evaluates, so these are written row by row as any with a clause evaluated here; nor
-- under a row lock.
SELECT * FROM explain_v($$DELETE FROM users WHERE id = ANY(ARRAY(SELECT id FROM local_ids))$$);
SELECT * FROM explain_v($$UPDATE users SET v = 1 WHERE id = ANY(ARRAY(SELECT id FROM local_ids))$$);
SELECT * FROM explain_v($$SELECT name FROM users WHERE id = ANY(ARRAY(SELECT id FROM local_ids)) FOR UPDATE$$);

DROP TABLE local_ids, local_big;
DROP SERVER j CASCADE;
