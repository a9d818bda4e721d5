-- The extension is created by pg_regress (--load-extension); check what it installed and the
-- settings of the temporary instance (test/regress.conf).
SELECT extname, extversion FROM pg_extension WHERE extname = 'picoroute';
SELECT current_setting('picoroute.source') AS source,
       current_setting('picoroute.max_replicasets') AS max_replicasets,
       current_setting('picoroute.max_instances') AS max_instances,
       current_setting('picoroute.max_bucket_ranges') AS max_bucket_ranges;

-- Every function and view of the extension carries a comment.
SELECT pg_describe_object(classid, objid, 0) AS object_without_comment
FROM pg_depend
WHERE refclassid = 'pg_extension'::regclass
  AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'picoroute')
  AND deptype = 'e'
  AND classid IN ('pg_proc'::regclass, 'pg_class'::regclass)
  AND obj_description(objid, CASE classid WHEN 'pg_proc'::regclass THEN 'pg_proc'
                                          ELSE 'pg_class' END) IS NULL
ORDER BY 1;

-- Volatility, strictness and parallel safety of the topology surface.
SELECT p.oid::regprocedure AS function, provolatile, proisstrict, proparallel
FROM pg_proc p
WHERE p.oid IN ('picoroute_bucket_id(text,"any")'::regprocedure,
                'picoroute_bucket_id_with_count(integer,"any")'::regprocedure,
                'picoroute_master(text,integer)'::regprocedure,
                'picoroute_route(text,"any")'::regprocedure,
                'picoroute_replicas(text,integer)'::regprocedure,
                'picoroute_instance_rows()'::regprocedure,
                'picoroute_replicaset_rows()'::regprocedure,
                'picoroute_bucket_rows()'::regprocedure,
                'picoroute_tier_rows()'::regprocedure,
                'picoroute_status_row()'::regprocedure,
                'picoroute_refresh(integer)'::regprocedure,
                'picoroute_apply_events(jsonb)'::regprocedure,
                'picoroute_assert_preloaded()'::regprocedure)
ORDER BY p.oid::regprocedure::text;

-- The map is empty before the first event.
SELECT source, generation, tiers, replicasets, instances, bucket_ranges, max_replicasets,
       max_instances, max_bucket_ranges, capacity_exceeded
FROM picoroute_status;
-- The connection string is shown with its password masked.
SELECT conninfo FROM picoroute_status;
SELECT count(*) FROM picoroute_instances;
SELECT count(*) FROM picoroute_replicasets;
SELECT count(*) FROM picoroute_buckets;
SELECT count(*) FROM picoroute_tiers;

-- A helper for the following suites: runs a statement and returns "SQLSTATE: message" of the
-- error it raises, or "ok".
CREATE FUNCTION pr_try(statement text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    state text;
    message text;
BEGIN
    EXECUTE statement;
    RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
    GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE, message = MESSAGE_TEXT;
    RETURN state || ': ' || message;
END $$;

-- Helpers for the suites that route statements against a pushed map.
-- pr_clear_map(): removes every bucket range, instance and replicaset of the map (earlier suites
-- leave theirs; the capacities of test/regress.conf are small). Tiers cannot be deleted and stay.
CREATE FUNCTION pr_clear_map() RETURNS void LANGUAGE plpgsql AS $$
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

-- pr_push_tier(tier, bucket_count, replicasets): pushes a tier and its replicasets in one batch
-- of events (the tier, then the replicasets, their instances, their bucket ranges), every
-- instance online. Each replicaset is {"uuid", "name", "instances": [[uuid, name, address], ...]
-- (the first is the master), "buckets": [[start, end], ...]}. Returns what
-- picoroute_apply_events returns.
CREATE FUNCTION pr_push_tier(tier text, bucket_count integer, replicasets jsonb)
RETURNS integer LANGUAGE sql AS $$
  SELECT picoroute_apply_events(
    jsonb_build_array(jsonb_build_object('op', 'replace', 'map', 'tier', 'name', tier,
                                         'bucket_count', bucket_count))
    || coalesce((SELECT jsonb_agg(jsonb_build_object(
                          'op', 'replace', 'map', 'replicaset', 'replicaset_uuid', rs->>'uuid',
                          'name', rs->>'name', 'tier', tier,
                          'current_master_uuid', rs->'instances'->0->>0) ORDER BY r)
                 FROM jsonb_array_elements(replicasets) WITH ORDINALITY AS s(rs, r)), '[]')
    || coalesce((SELECT jsonb_agg(jsonb_build_object(
                          'op', 'replace', 'map', 'instance', 'instance_uuid', i->>0,
                          'name', i->>1, 'replicaset_uuid', rs->>'uuid',
                          'current_state', 'Online', 'address', i->>2) ORDER BY r, n)
                 FROM jsonb_array_elements(replicasets) WITH ORDINALITY AS s(rs, r),
                      jsonb_array_elements(rs->'instances') WITH ORDINALITY AS t(i, n)), '[]')
    || coalesce((SELECT jsonb_agg(jsonb_build_object(
                          'op', 'replace', 'map', 'bucket', 'tier', tier, 'state', 'active',
                          'bucket_id', jsonb_build_object('start', b->0, 'end', b->1),
                          'current_replicaset_uuid', rs->>'uuid') ORDER BY r, n)
                 FROM jsonb_array_elements(replicasets) WITH ORDINALITY AS s(rs, r),
                      jsonb_array_elements(coalesce(rs->'buckets', '[]')) WITH ORDINALITY AS t(b, n)),
                '[]'))
$$;

-- The map of tier "rt" (routing, runtime_params): rs_a owns 1-1500 (master ia1, replica ia2),
-- rs_b owns 1501-2900 (master ib1), buckets 2901-3000 are unknown. Addresses are never contacted.
CREATE FUNCTION pr_push_tier_rt() RETURNS integer LANGUAGE sql AS $$
  SELECT pr_push_tier('rt', 3000, '[
    {"uuid": "rs-a", "name": "rs_a", "instances": [["ia1", "a1", "192.0.2.1:4327"], ["ia2", "a2", "192.0.2.2:4327"]], "buckets": [[1, 1500]]},
    {"uuid": "rs-b", "name": "rs_b", "instances": [["ib1", "b1", "192.0.2.3:4327"]], "buckets": [[1501, 2900]]}
  ]')
$$;

-- The map of tier "dt" (dialect, upper): rs_x owns 1-1500 (master x1, replica x2), rs_y owns
-- 1501-3000 (master y1), rs_z (master z1) was just added and owns no bucket yet.
CREATE FUNCTION pr_push_tier_dt() RETURNS integer LANGUAGE sql AS $$
  SELECT pr_push_tier('dt', 3000, '[
    {"uuid": "rs-x", "name": "rs_x", "instances": [["x1", "x1", "192.0.2.11:4327"], ["x2", "x2", "192.0.2.12:4327"]], "buckets": [[1, 1500]]},
    {"uuid": "rs-y", "name": "rs_y", "instances": [["y1", "y1", "192.0.2.13:4327"]], "buckets": [[1501, 3000]]},
    {"uuid": "rs-z", "name": "rs_z", "instances": [["z1", "z1", "192.0.2.14:4327"]]}
  ]')
$$;

-- explain_v(query): EXPLAIN (VERBOSE, COSTS OFF) on tier "dt". A keyless statement goes to a
-- coordinator chosen per session: a master of the tier for read_preference leader (x1, y1 or
-- z1), a replica for 'replica' (x2); the master's address is masked, so EXPLAIN shows its role.
CREATE FUNCTION explain_v(query text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || query LOOP
    RETURN NEXT regexp_replace(line, 'coordinator 192\.0\.2\.1[134]:4327', 'coordinator <a master>');
  END LOOP;
END $$;
