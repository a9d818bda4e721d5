-- Upper-relation pushdown (aggregates, GROUP BY, HAVING, ORDER BY, LIMIT), pinned by EXPLAIN
-- VERBOSE (Remote SQL is the statement as sent). The map is pushed; no statement below reaches an
-- instance.
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

-- Tier "dt": rs_x owns 1-1500 (master x1, replica x2), rs_y owns 1501-3000 (master y1), rs_z
-- (master z1) was just added and owns no bucket yet.
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "tier", "name": "dt", "bucket_count": 3000},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "rs-x", "name": "rs_x", "tier": "dt", "current_master_uuid": "x1"},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "rs-y", "name": "rs_y", "tier": "dt", "current_master_uuid": "y1"},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "rs-z", "name": "rs_z", "tier": "dt", "current_master_uuid": "z1"},
  {"op": "replace", "map": "instance", "instance_uuid": "x1", "name": "x1", "replicaset_uuid": "rs-x", "current_state": "Online", "address": "192.0.2.11:4327"},
  {"op": "replace", "map": "instance", "instance_uuid": "x2", "name": "x2", "replicaset_uuid": "rs-x", "current_state": "Online", "address": "192.0.2.12:4327"},
  {"op": "replace", "map": "instance", "instance_uuid": "y1", "name": "y1", "replicaset_uuid": "rs-y", "current_state": "Online", "address": "192.0.2.13:4327"},
  {"op": "replace", "map": "instance", "instance_uuid": "z1", "name": "z1", "replicaset_uuid": "rs-z", "current_state": "Online", "address": "192.0.2.14:4327"},
  {"op": "replace", "map": "bucket", "tier": "dt", "state": "active", "bucket_id": {"start": 1, "end": 1500}, "current_replicaset_uuid": "rs-x"},
  {"op": "replace", "map": "bucket", "tier": "dt", "state": "active", "bucket_id": {"start": 1501, "end": 3000}, "current_replicaset_uuid": "rs-y"}
]') > 0 AS applied;

-- A keyless statement goes to a coordinator chosen per session: a master of the tier for
-- read_preference leader (x1, y1 or z1), a replica for 'replica' (x2). EXPLAIN shows its role.
CREATE OR REPLACE FUNCTION explain_v(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || query LOOP
    RETURN NEXT regexp_replace(line, 'coordinator 192\.0\.2\.1[134]:4327', 'coordinator <a master>');
  END LOOP;
END $$;

-- Upper-relation pushdown: aggregates, GROUP BY, HAVING, ORDER BY and LIMIT go to Picodata.
CREATE SERVER u FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'dt');
CREATE SERVER u_m FOREIGN DATA WRAPPER picoroute
    OPTIONS (tier 'dt', scatter 'masters', picodata_version '26.2.1');
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
-- option pushdown_aggregates 'off' on the server or the table.
SELECT * FROM explain_v($$SELECT count(*) FROM up_off$$);
SELECT * FROM explain_v($$SELECT id FROM up_toff ORDER BY id LIMIT 1$$);
