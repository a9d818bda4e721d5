-- Join pushdown: two foreign tables of one server joined where Picodata needs no motion (a
-- co-located join on the whole sharding keys, or a join with a global table), pinned by EXPLAIN
-- VERBOSE (Remote SQL is the statement as sent). The map is pushed; no statement below reaches an
-- instance. It uses the setup suite's map of tier "dt" (rs_x owns 1-1500, master x1; rs_y owns
-- 1501-3000, master y1; rs_z owns nothing), and its own servers and tables.
SELECT pr_clear_map();
SELECT pr_push_tier_dt() > 0 AS applied;

-- A keyless statement goes to a coordinator chosen per session (x1, y1 or z1), and so does a
-- statement on a global table alone.
CREATE FUNCTION join_explain(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || query LOOP
    line := regexp_replace(line, 'coordinator 192\.0\.2\.1[134]:4327', 'coordinator <a master>');
    RETURN NEXT regexp_replace(line, '192\.0\.2\.1[134]:4327 \(coordinator\)', '<a master> (coordinator)');
  END LOOP;
END $$;

CREATE SERVER jp FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'dt');
CREATE SERVER jp2 FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'dt');
CREATE SERVER jp_m FOREIGN DATA WRAPPER picoroute
    OPTIONS (tier 'dt', scatter 'masters', picodata_version '26.2.1-rc2');
CREATE USER MAPPING FOR CURRENT_USER SERVER jp OPTIONS (user 'u', password 'p');
CREATE USER MAPPING FOR CURRENT_USER SERVER jp2 OPTIONS (user 'u', password 'p');
CREATE USER MAPPING FOR CURRENT_USER SERVER jp_m OPTIONS (user 'u', password 'p');
-- Users sharded by id; their orders sharded by user_id (co-located with their user); countries
-- global.
CREATE FOREIGN TABLE j_users (id bigint, name text COLLATE "C", country text, score integer, doc json)
    SERVER jp OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE j_orders (id bigint, user_id bigint, amount numeric(10,2), "option" text)
    SERVER jp OPTIONS (table_name 'orders', sharding_key 'user_id');
CREATE FOREIGN TABLE j_countries (code text, name text)
    SERVER jp OPTIONS (table_name 'countries', distribution 'global');
-- The same users on another server, and scattered to the masters.
CREATE FOREIGN TABLE j_users2 (id bigint, name text) SERVER jp2
    OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE j_users_m (id bigint, name text) SERVER jp_m
    OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE j_orders_m (id bigint, user_id bigint) SERVER jp_m
    OPTIONS (table_name 'orders', sharding_key 'user_id');
-- Keys of another type, and of two columns.
CREATE FOREIGN TABLE j_events (id integer, user_id integer, kind text)
    SERVER jp OPTIONS (table_name 'events', sharding_key 'user_id');
CREATE FOREIGN TABLE j_pairs (a bigint, b bigint, v text)
    SERVER jp OPTIONS (table_name 'pairs', sharding_key 'a, b');
CREATE FOREIGN TABLE j_pairs2 (a bigint, b bigint, w text)
    SERVER jp OPTIONS (table_name 'pairs2', sharding_key 'a, b');

-- Pushed, co-located: the join equates the two sharding keys. To a coordinator, limits lifted.
SELECT * FROM join_explain($$SELECT u.id, u.name, o.amount FROM j_users u JOIN j_orders o ON o.user_id = u.id$$);
-- With WHERE clauses of both tables and a join clause that is not an equality of the keys.
SELECT * FROM join_explain($$SELECT u.name, o.id FROM j_users u JOIN j_orders o ON o.user_id = u.id AND o.id > u.id WHERE u.score < 10 AND o."option" LIKE 'x%'$$);
-- LEFT JOIN: the inner table's own conditions go into ON, a WHERE clause over the join result
-- stays a WHERE clause.
SELECT * FROM join_explain($$SELECT u.id, o.id FROM j_users u LEFT JOIN j_orders o ON o.user_id = u.id AND o.amount > 5 WHERE u.score > 1 AND o.id IS NULL$$);
-- RIGHT JOIN is the same join seen from the other side.
SELECT * FROM join_explain($$SELECT u.id, o.id FROM j_orders o RIGHT JOIN j_users u ON o.user_id = u.id$$);
-- Keys of two columns, equated column by column.
SELECT * FROM join_explain($$SELECT p.v, q.w FROM j_pairs p JOIN j_pairs2 q ON q.a = p.a AND q.b = p.b$$);
-- Nothing of the join is needed but its rows: one key column is fetched.
SELECT * FROM join_explain($$SELECT 1 FROM j_users u JOIN j_orders o ON o.user_id = u.id$$);
-- Aggregates, ORDER BY and LIMIT over a pushed join go with it (as over one table).
SELECT * FROM join_explain($$SELECT count(*) FROM j_users u JOIN j_orders o ON o.user_id = u.id$$);
SELECT * FROM join_explain($$SELECT u.country, count(*), sum(o.amount) FROM j_users u JOIN j_orders o ON o.user_id = u.id GROUP BY u.country HAVING count(*) > 1$$);
SELECT * FROM join_explain($$SELECT u.id, o.amount FROM j_users u LEFT JOIN j_orders o ON o.user_id = u.id ORDER BY o.amount DESC, u.id LIMIT 5$$);
SELECT * FROM join_explain($$SELECT max(u.name), sum(o.amount) FROM j_users u JOIN j_orders o ON o.user_id = u.id WHERE u.id = 7$$);

-- Pushed with a global table (on any shippable join clause): on either side of an INNER join,
-- as the inner side of a LEFT join.
SELECT * FROM join_explain($$SELECT u.id, c.name FROM j_users u JOIN j_countries c ON c.code = u.country$$);
SELECT * FROM join_explain($$SELECT c.name, u.id FROM j_countries c JOIN j_users u ON u.country = c.code WHERE c.name = 'Chile'$$);
SELECT * FROM join_explain($$SELECT u.id, c.name FROM j_users u LEFT JOIN j_countries c ON c.code = u.country$$);

-- The WHERE clause fixes the sharding keys to one value: to the owner, with the bucket filter of
-- the routing table.
SELECT * FROM join_explain($$SELECT u.name, o.amount FROM j_users u JOIN j_orders o ON o.user_id = u.id WHERE u.id = 7$$);
SELECT * FROM join_explain($$SELECT u.name, o.amount FROM j_users u LEFT JOIN j_orders o ON o.user_id = u.id WHERE u.id = 4000$$);
SELECT * FROM join_explain($$SELECT u.name, c.name FROM j_users u JOIN j_countries c ON c.code = u.country WHERE u.id = 7$$);
-- A parameter: routed when the statement runs.
PREPARE jq(bigint) AS SELECT u.name, o.amount FROM j_users u JOIN j_orders o ON o.user_id = u.id WHERE o.user_id = $1;
SET plan_cache_mode = force_generic_plan;
SELECT * FROM join_explain($$EXECUTE jq(7)$$);
RESET plan_cache_mode;
DEALLOCATE jq;
-- A list of keys: one coordinator joins them all.
SELECT * FROM join_explain($$SELECT u.name, o.amount FROM j_users u JOIN j_orders o ON o.user_id = u.id WHERE u.id IN (1, 2, 4000)$$);

-- Not pushed (joined here, each table read on its own):
-- the join does not equate the sharding keys (Picodata would move one table);
SELECT * FROM join_explain($$SELECT u.id, o.id FROM j_users u JOIN j_orders o ON o.id = u.id$$);
SELECT * FROM join_explain($$SELECT p.v, q.w FROM j_pairs p JOIN j_pairs2 q ON q.a = p.a$$);
SELECT * FROM join_explain($$SELECT p.v, q.w FROM j_pairs p JOIN j_pairs2 q ON q.a = p.b AND q.b = p.a$$);
-- keys of different types (they hash differently only in principle, but are not the same key);
SELECT * FROM join_explain($$SELECT u.id, e.kind FROM j_users u JOIN j_events e ON e.user_id = u.id$$);
-- a global table LEFT JOINed to a sharded one;
SELECT * FROM join_explain($$SELECT c.name, u.id FROM j_countries c LEFT JOIN j_users u ON u.country = c.code$$);
-- a clause or a column Picodata cannot evaluate (the join then runs here: for a few users a
-- batched join, which looks the orders of each batch of users up by their sharding key; for all
-- of them one scan of each table);
SELECT * FROM join_explain($$SELECT u.id, o.id FROM j_users u JOIN j_orders o ON o.user_id = u.id WHERE abs(u.score) = 3$$);
SELECT * FROM join_explain($$SELECT u.id, o.id FROM j_users u JOIN j_orders o ON o.user_id = u.id AND o.amount::text = u.name$$);
SELECT * FROM join_explain($$SELECT u.doc, o.id FROM j_users u JOIN j_orders o ON o.user_id = u.id$$);
SELECT * FROM join_explain($$SELECT c.name, u.id FROM j_countries c JOIN j_users u ON u.country < c.code$$);
-- tables of two servers, tables scattered to the masters;
SELECT * FROM join_explain($$SELECT u.id, v.name FROM j_users u JOIN j_users2 v ON v.id = u.id$$);
SELECT * FROM join_explain($$SELECT u.id, o.id FROM j_users_m u JOIN j_orders_m o ON o.user_id = u.id$$);
-- row locks.
SELECT * FROM join_explain($$SELECT u.id, o.id FROM j_users u JOIN j_orders o ON o.user_id = u.id FOR UPDATE$$);
