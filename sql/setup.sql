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
                'picoroute_bucket_id_for_version(text,integer,"any")'::regprocedure,
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
-- A lookup before the map is loaded says so.
SELECT picoroute_bucket_id('default', 1);

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
-- pr_clear_map(): removes every bucket range, instance and replicaset of the map (other suites
-- leave theirs; the capacities of test/regress.conf are small). Tiers cannot be deleted and stay:
-- every suite that reads the map starts with pr_clear_map() and pushes what it needs, so the suites
-- run in any order after this one (the nine tiers they name in all fit picoroute.max_replicasets,
-- which also bounds the number of tiers; a suite that needs a tier still unknown names its own).
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

-- pr_push_seed_map(): a map of four tiers for the suites that check lookups and capacities on it
-- (errors, privileges): tier default (3000 buckets): rs_1 (master i_1b, i_1a offline) owns 1-750,
-- rs_3 (i_3a, i_3b) 751-1500, rs_4 (i_4a, i_4b) 1501-3000; tier t1 (30): t1_1, t1_2, t1_4 own
-- 10 buckets each; tier t2 (30): t2_1 owns 1-15, t2_2 16-30; tier t3 (100) has no replicaset.
-- 8 replicasets, 11 instances, 8 bucket ranges. Returns what picoroute_apply_events returns.
CREATE FUNCTION pr_push_seed_map() RETURNS integer LANGUAGE sql AS $$
  SELECT picoroute_apply_events(
    (SELECT jsonb_agg(jsonb_build_object('op', 'replace', 'map', 'tier', 'name', t, 'bucket_count', n))
       FROM (VALUES ('default', 3000), ('t1', 30), ('t2', 30), ('t3', 100)) AS v(t, n))
    || (SELECT jsonb_agg(jsonb_build_object('op', 'replace', 'map', 'replicaset', 'replicaset_uuid', u,
                                            'name', n, 'tier', t, 'current_master_uuid', m))
          FROM (VALUES ('a1', 't1_1', 't1', 'ia1'), ('a2', 't1_2', 't1', 'ia2'), ('a4', 't1_4', 't1', 'ia4'),
                       ('b1', 't2_1', 't2', 'ib1'), ('b2', 't2_2', 't2', 'ib2'),
                       ('r1', 'rs_1', 'default', 'i1b'), ('r3', 'rs_3', 'default', 'i3a'),
                       ('r4', 'rs_4', 'default', 'i4a')) AS v(u, n, t, m))
    || (SELECT jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                 'op', 'replace', 'map', 'instance', 'instance_uuid', u, 'name', n,
                 'replicaset_uuid', r, 'current_state', st, 'address', a)))
          FROM (VALUES ('i1a', 'i_1a', 'r1', 'Offline', '10.0.1.1:4327'),
                       ('i1b', 'i_1b', 'r1', 'Online', '10.0.1.20:5432'),
                       ('i3a', 'i_3a', 'r3', 'Online', '10.0.3.1:4327'),
                       ('i3b', 'i_3b', 'r3', 'Online', '10.0.3.2:4327'),
                       ('i4a', 'i_4a', 'r4', 'Online', '10.0.4.1:4327'),
                       ('i4b', 'i_4b', 'r4', 'Online', '10.0.4.2:4327'),
                       ('ia1', NULL, 'a1', 'Online', '10.1.1.1:4327'),
                       ('ia2', NULL, 'a2', 'Online', '10.1.2.1:4327'),
                       ('ia4', NULL, 'a4', 'Online', '10.1.4.1:4327'),
                       ('ib1', NULL, 'b1', 'Online', '10.2.1.1:4327'),
                       ('ib2', NULL, 'b2', 'Online', '10.2.2.1:4327')) AS v(u, n, r, st, a))
    || (SELECT jsonb_agg(jsonb_build_object(
                 'op', 'replace', 'map', 'bucket', 'tier', t, 'state', 'active',
                 'bucket_id', jsonb_build_object('start', b0, 'end', b1), 'current_replicaset_uuid', r))
          FROM (VALUES ('default', 1, 750, 'r1'), ('default', 751, 1500, 'r3'),
                       ('default', 1501, 3000, 'r4'), ('t1', 1, 10, 'a1'), ('t1', 11, 20, 'a2'),
                       ('t1', 21, 30, 'a4'), ('t2', 1, 15, 'b1'), ('t2', 16, 30, 'b2')) AS v(t, b0, b1, r)))
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
