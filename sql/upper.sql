-- Upper-relation pushdown (aggregates, GROUP BY, HAVING, ORDER BY, LIMIT), pinned by EXPLAIN
-- VERBOSE (Remote SQL is the statement as sent). The map is pushed; no statement below reaches an
-- instance.
-- The map of tier "dt" and explain_v come from the setup suite.
SELECT pr_clear_map();
SELECT pr_push_tier_dt() > 0 AS applied;

-- Upper-relation pushdown: aggregates, GROUP BY, HAVING, ORDER BY and LIMIT go to Picodata.
CREATE SERVER u FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'dt');
CREATE SERVER u_m FOREIGN DATA WRAPPER picoroute
    OPTIONS (tier 'dt', scatter 'masters', picodata_version '26.2.1-rc2');
CREATE SERVER u_off FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'dt', pushdown_aggregates 'off');
CREATE SERVER u_bad FOREIGN DATA WRAPPER picoroute OPTIONS (pushdown_aggregates 'maybe');
CREATE USER MAPPING FOR CURRENT_USER SERVER u OPTIONS (user 'u', password 'p');
CREATE USER MAPPING FOR CURRENT_USER SERVER u_m OPTIONS (user 'u', password 'p');
CREATE USER MAPPING FOR CURRENT_USER SERVER u_off OPTIONS (user 'u', password 'p');
CREATE FOREIGN TABLE up (id bigint, name text COLLATE "C", v bigint, i integer, f float8,
                            n numeric, ts timestamptz, note text COLLATE "und-x-icu", j json)
    SERVER u OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE up_m (id bigint, v bigint) SERVER u_m OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE up_off (id bigint, v bigint) SERVER u_off OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE up_toff (id bigint, v bigint) SERVER u
    OPTIONS (table_name 'users', sharding_key 'id', pushdown_aggregates 'off');

-- count(*): to a coordinator, with the limits lifted (keyless).
SELECT * FROM explain_v($$SELECT count(*) FROM up$$);
-- count(x), count(DISTINCT x), sum, avg, min, max with GROUP BY; expressions over aggregates are
-- computed here.
SELECT * FROM explain_v($$SELECT v, count(name), count(DISTINCT i), sum(i), avg(v), min(name), max(f), sum(n) * 2 FROM up GROUP BY v$$);
SELECT * FROM explain_v($$SELECT i + 1, sum(f), avg(f) FROM up WHERE v > 10 GROUP BY i + 1$$);
-- HAVING goes with it.
SELECT * FROM explain_v($$SELECT v, count(*) FROM up GROUP BY v HAVING count(*) > 5 AND sum(i) < 100$$);
-- The key fixed by the WHERE clause: to the owner, the bucket filter before GROUP BY.
SELECT * FROM explain_v($$SELECT count(*), sum(v) FROM up WHERE id = 7$$);
SELECT * FROM explain_v($$SELECT name, count(*) FROM up WHERE id = 7 GROUP BY name ORDER BY name LIMIT 3$$);
-- ORDER BY ... LIMIT over groups, and over the rows of the table.
SELECT * FROM explain_v($$SELECT v, sum(i) FROM up GROUP BY v ORDER BY sum(i) DESC, v LIMIT 10$$);
SELECT * FROM explain_v($$SELECT id, v FROM up ORDER BY v DESC, id LIMIT 5$$);
SELECT * FROM explain_v($$SELECT id, name FROM up ORDER BY name NULLS FIRST$$);
-- LIMIT with OFFSET: LIMIT n + m is sent, the first m rows are skipped here.
SELECT * FROM explain_v($$SELECT id, v FROM up ORDER BY v, id LIMIT 5 OFFSET 20$$);
SELECT * FROM explain_v($$SELECT id FROM up LIMIT 3$$);
-- Keyless, under the row bound (picoroute.keyless_row_max, 4000): each pushed ORDER BY or LIMIT
-- carries a local plan for the same rows ("Over the Row Bound"), which runs when Picodata answers
-- that the statement exceeds the bound. LIMIT n + m over the bound is not sent at all: the rows
-- are sorted here over the scan (which reads in chunks).
SELECT * FROM explain_v($$SELECT id FROM up ORDER BY id LIMIT 100 OFFSET 3901$$);
SELECT * FROM explain_v($$SELECT id FROM up ORDER BY id LIMIT 100 OFFSET 3900$$);
-- With more rows than the bound known (as ANALYZE would set them): ORDER BY alone is sorted
-- here, ORDER BY ... LIMIT is still sent.
CREATE FOREIGN TABLE up_big (id bigint, v bigint) SERVER u OPTIONS (table_name 'users', sharding_key 'id');
UPDATE pg_class SET reltuples = 100000 WHERE oid = 'up_big'::regclass;
SELECT * FROM explain_v($$SELECT id FROM up_big ORDER BY id$$);
SELECT * FROM explain_v($$SELECT id FROM up_big ORDER BY v DESC NULLS FIRST, id LIMIT 10$$);
-- No bound, no local plan: a key fixed (one bucket), the bound lifted by the table's option.
SELECT * FROM explain_v($$SELECT v FROM up_big WHERE id = 5 ORDER BY v$$);
ALTER FOREIGN TABLE up_big OPTIONS (ADD sql_motion_row_max '0');
SELECT * FROM explain_v($$SELECT id FROM up_big ORDER BY id$$);
DROP FOREIGN TABLE up_big;

-- Stays local:
-- a WHERE clause evaluated here (the aggregate needs it first);
SELECT * FROM explain_v($$SELECT count(*) FROM up WHERE abs(v) = 1$$);
-- FILTER, ORDER BY inside an aggregate, DISTINCT other than count's, other aggregates;
SELECT * FROM explain_v($$SELECT count(*) FILTER (WHERE v > 1) FROM up$$);
SELECT * FROM explain_v($$SELECT sum(DISTINCT v) FROM up$$);
SELECT * FROM explain_v($$SELECT string_agg(name, ',' ORDER BY name) FROM up$$);
SELECT * FROM explain_v($$SELECT stddev(v) FROM up$$);
-- min/max of text and ORDER BY text under a collation that does not compare bytes;
SELECT * FROM explain_v($$SELECT max(note) FROM up$$);
SELECT * FROM explain_v($$SELECT id FROM up ORDER BY note LIMIT 2$$);
-- a HAVING clause Picodata cannot evaluate (then nothing of the grouping is pushed);
SELECT * FROM explain_v($$SELECT v, count(*) FROM up GROUP BY v HAVING abs(sum(i)) > 5$$);
-- grouping sets, an unshippable grouping expression, a column of another type;
SELECT * FROM explain_v($$SELECT v, count(*) FROM up GROUP BY ROLLUP (v)$$);
SELECT * FROM explain_v($$SELECT abs(v), count(*) FROM up GROUP BY abs(v)$$);
SELECT * FROM explain_v($$SELECT id FROM up ORDER BY j::text LIMIT 1$$);
-- LIMIT given by a parameter, LIMIT WITH TIES;
PREPARE lp(bigint) AS SELECT id FROM up ORDER BY id LIMIT $1;
SELECT * FROM explain_v($$EXECUTE lp(3)$$);
DEALLOCATE lp;
SELECT * FROM explain_v($$SELECT id FROM up ORDER BY v FETCH FIRST 3 ROWS WITH TIES$$);
-- a list of keys (the scan routes the few rows from each owner);
SELECT * FROM explain_v($$SELECT count(*) FROM up WHERE id IN (1, 2, 3, 4000)$$);
-- a table scattered to the masters (each master sends its rows);
SELECT * FROM explain_v($$SELECT count(*) FROM up_m$$);
-- a LIMIT over that table alone goes with each of its statements (LIMIT n + m), and the Limit
-- here keeps the first rows; not when a filter, a sort or a join is done here, nor under a
-- parameter;
SELECT * FROM explain_v($$SELECT id FROM up_m LIMIT 3 OFFSET 2$$);
SELECT * FROM explain_v($$SELECT id FROM up_m WHERE v > 7 LIMIT 3$$);
SELECT * FROM explain_v($$SELECT id FROM up_m WHERE random() > v LIMIT 3$$);
SELECT * FROM explain_v($$SELECT id FROM up_m ORDER BY id LIMIT 3$$);
SELECT * FROM explain_v($$SELECT a.id FROM up_m a, up_m b WHERE a.v = b.id LIMIT 3$$);
SET plan_cache_mode = force_generic_plan;
PREPARE lm(bigint) AS SELECT id FROM up_m LIMIT $1;
SELECT * FROM explain_v($$EXECUTE lm(3)$$);
DEALLOCATE lm;
RESET plan_cache_mode;
-- the routed reads of a list of keys carry it too.
SELECT * FROM explain_v($$SELECT id FROM up WHERE id IN (1, 2, 3, 4000) LIMIT 2$$);
-- option pushdown_aggregates 'off' on the server or the table.
SELECT * FROM explain_v($$SELECT count(*) FROM up_off$$);
SELECT * FROM explain_v($$SELECT id FROM up_off LIMIT 1$$);
SELECT * FROM explain_v($$SELECT id FROM up_toff ORDER BY id LIMIT 1$$);
