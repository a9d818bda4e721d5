-- Bad input to picoroute_apply_events leaves the previous map in place and the generation
-- unchanged; lookups reject unknown tiers and buckets out of range.

-- The seed map (sql/setup.sql) and one replicaset more, t3_9 in tier t3 (which has no bucket
-- range yet) without instances: 9 replicasets (picoroute.max_replicasets), 11 instances, 8 bucket
-- ranges.
SELECT pr_clear_map();
SELECT pr_push_seed_map() > 0 AS applied;
SELECT picoroute_apply_events('{"op": "replace", "map": "replicaset", "replicaset_uuid": "c9", "name": "t3_9", "tier": "t3"}');

-- Everything the views show, as one digest, to compare before and after each rejected call.
CREATE FUNCTION pr_map_digest() RETURNS text LANGUAGE sql AS $$
    SELECT md5(concat_ws('|',
        (SELECT string_agg(t::text, ';' ORDER BY name) FROM picoroute_tiers t),
        (SELECT string_agg(r::text, ';' ORDER BY uuid) FROM picoroute_replicasets r),
        (SELECT string_agg(i::text, ';' ORDER BY uuid) FROM picoroute_instances i),
        (SELECT string_agg(b::text, ';' ORDER BY tier, bucket_id_start) FROM picoroute_buckets b)))
$$;
SELECT generation AS generation_before, pr_map_digest() AS digest_before FROM picoroute_status \gset
CREATE VIEW pr_unchanged AS
    SELECT generation = :generation_before AS same_generation,
           pr_map_digest() = :'digest_before' AS same_map
    FROM picoroute_status;
SELECT * FROM pr_unchanged;

------------------------------------------------------------------------------------------------
-- Malformed JSON (rejected by jsonb itself) and values that are not notifications.
------------------------------------------------------------------------------------------------
SELECT picoroute_apply_events('{"op": "replace", "map": ');
SELECT picoroute_apply_events('[1]');
SELECT picoroute_apply_events('"replace"');
SELECT picoroute_apply_events(NULL) IS NULL AS "NULL -> NULL";
SELECT * FROM pr_unchanged;

-- Unknown map and op.
SELECT picoroute_apply_events('{"op": "replace", "map": "shard", "name": "x"}');
SELECT picoroute_apply_events('{"op": "upsert", "map": "replicaset", "replicaset_uuid": "r1"}');
SELECT picoroute_apply_events('{"op": "delete", "map": "tier", "name": "t1"}');
SELECT * FROM pr_unchanged;

-- Missing or wrongly typed fields.
SELECT picoroute_apply_events('{"map": "instance", "instance_uuid": "i1a"}');
SELECT picoroute_apply_events('{"op": "replace", "map": "replicaset", "tier": "default"}');
SELECT picoroute_apply_events('{"op": "replace", "map": "instance", "instance_uuid": ""}');
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "bucket_id": {"start": 1, "end": 10}}');
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "current_replicaset_uuid": "r1"}');
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "bucket_id": {"start": "1", "end": 10}, "current_replicaset_uuid": "r1"}');
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": 5, "bucket_id": {"start": 1, "end": 10}, "current_replicaset_uuid": "r1"}');
SELECT picoroute_apply_events('{"op": "replace", "map": "tier", "name": "t9"}');
SELECT picoroute_apply_events('{"op": "replace", "map": "tier", "name": "t9", "bucket_count": -1}');
SELECT * FROM pr_unchanged;

-- Ranges out of bounds.
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "bucket_id": {"start": 0, "end": 10}, "current_replicaset_uuid": "r1"}');
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "bucket_id": {"start": 20, "end": 10}, "current_replicaset_uuid": "r1"}');
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "bucket_id": {"start": 2001, "end": 3001}, "current_replicaset_uuid": "r4"}');
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "t1", "bucket_id": {"start": 21, "end": 31}, "current_replicaset_uuid": "a4"}');
SELECT * FROM pr_unchanged;

-- All or nothing: a valid event followed by an invalid one changes nothing.
SELECT picoroute_apply_events('[
  {"op": "delete", "map": "replicaset", "replicaset_uuid": "r1"},
  {"op": "replace", "map": "bucket", "tier": "default", "bucket_id": {"start": 1, "end": 3001}, "current_replicaset_uuid": "r3"}
]');
SELECT * FROM pr_unchanged;
SELECT picoroute_master('default', 1) AS master_1;

------------------------------------------------------------------------------------------------
-- Capacity (test/regress.conf: 9 replicasets, 16 instances, 64 bucket ranges).
------------------------------------------------------------------------------------------------
SELECT replicasets, max_replicasets, instances, max_instances, bucket_ranges, max_bucket_ranges,
       capacity_exceeded
FROM picoroute_status;
-- A tenth replicaset.
SELECT picoroute_apply_events('{"op": "replace", "map": "replicaset", "replicaset_uuid": "b3", "tier": "t2"}');
SELECT capacity_exceeded FROM picoroute_status;
SELECT * FROM pr_unchanged;
-- Six more instances (17).
SELECT picoroute_apply_events(jsonb_agg(jsonb_build_object(
           'op', 'replace', 'map', 'instance', 'instance_uuid', 'extra' || n,
           'replicaset_uuid', 'b2', 'current_state', 'Online', 'address', '10.9.0.' || n || ':4327')))
FROM generate_series(1, 6) AS n;
SELECT * FROM pr_unchanged;
-- 57 more ranges (65).
SELECT picoroute_apply_events(jsonb_agg(jsonb_build_object(
           'op', 'replace', 'map', 'bucket', 'tier', 't3', 'bucket_id',
           jsonb_build_object('start', n, 'end', n), 'current_replicaset_uuid', 'c1')))
FROM generate_series(1, 57) AS n;
SELECT * FROM pr_unchanged;
-- Up to the limit is fine: 56 more ranges (64).
SELECT picoroute_apply_events(jsonb_agg(jsonb_build_object(
           'op', 'replace', 'map', 'bucket', 'tier', 't3', 'bucket_id',
           jsonb_build_object('start', n, 'end', n), 'current_replicaset_uuid', 'c1')))
FROM generate_series(1, 56) AS n;
SELECT bucket_ranges, max_bucket_ranges, capacity_exceeded FROM picoroute_status;
SELECT * FROM picoroute_tiers WHERE name = 't3';
-- One range over t3's whole span overlaps them all: the tier is cleared, one range remains.
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "t3", "bucket_id": {"start": 1, "end": 100}, "current_replicaset_uuid": "c1"}');
SELECT bucket_ranges, capacity_exceeded FROM picoroute_status;
SELECT * FROM picoroute_tiers WHERE name = 't3';
SELECT * FROM picoroute_buckets WHERE tier = 't3';
-- New baseline. Deleting a replicaset the map does not know (c1 was deleted before) changes
-- nothing: the generation stays.
SELECT generation AS generation_before, pr_map_digest() AS digest_before FROM picoroute_status \gset
CREATE OR REPLACE VIEW pr_unchanged AS
    SELECT generation = :generation_before AS same_generation,
           pr_map_digest() = :'digest_before' AS same_map
    FROM picoroute_status;
SELECT picoroute_apply_events('{"op": "delete", "map": "replicaset", "replicaset_uuid": "c1"}');
SELECT * FROM pr_unchanged;

------------------------------------------------------------------------------------------------
-- Lookup errors.
------------------------------------------------------------------------------------------------
-- (terse: the hint of an unknown tier lists every tier known, which depends on the suites run before)
\set VERBOSITY terse
SELECT picoroute_master('nope', 1);
\set VERBOSITY default
SELECT picoroute_master('default', 0);
SELECT picoroute_master('default', 3001);
SELECT picoroute_master('default', -7);
\set VERBOSITY terse
SELECT * FROM picoroute_replicas('nope', 1);
\set VERBOSITY default
SELECT * FROM picoroute_replicas('t1', 31);
\set VERBOSITY terse
SELECT * FROM picoroute_route('nope', 1);
\set VERBOSITY default
SELECT * FROM picoroute_route('default', now()::date);
\set VERBOSITY terse
SELECT picoroute_bucket_id('nope', 1);
\set VERBOSITY default
-- NULL arguments.
SELECT picoroute_master(NULL, 1) IS NULL AS a, picoroute_master('default', NULL) IS NULL AS b,
       (SELECT count(*) FROM picoroute_replicas(NULL, 1)) AS c,
       picoroute_route(NULL, 1) IS NULL AS d,
       picoroute_route('default', VARIADIC NULL::int[]) IS NULL AS e,
       picoroute_bucket_id('default', NULL) AS "bucket of NULL",
       (picoroute_route('default', NULL::int)).bucket_id AS "route of NULL";
-- The SQLSTATEs.
SELECT statement, pr_try(statement) AS error FROM (VALUES
    ($$SELECT picoroute_apply_events('{"op": "replace", "map": ')$$),
    ($$SELECT picoroute_apply_events('[1]')$$),
    ($$SELECT picoroute_apply_events('{"op": "replace", "map": "shard"}')$$),
    ($$SELECT picoroute_apply_events('{"op": "replace", "map": "tier", "name": "t9"}')$$),
    ($$SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "t1", "bucket_id": {"start": 1, "end": 31}, "current_replicaset_uuid": "a1"}')$$),
    ($$SELECT picoroute_apply_events('{"op": "replace", "map": "replicaset", "replicaset_uuid": "b3", "tier": "t2"}')$$),
    ($$SELECT picoroute_master('nope', 1)$$),
    ($$SELECT picoroute_master('default', 0)$$),
    ($$SELECT picoroute_refresh()$$),
    ($$SELECT picoroute_refresh(1000)$$)) AS t(statement);
SELECT * FROM pr_unchanged;

------------------------------------------------------------------------------------------------
-- picoroute_refresh belongs to the poll source.
------------------------------------------------------------------------------------------------
SELECT picoroute_refresh();
SELECT picoroute_refresh(NULL) IS NULL AS "NULL -> NULL";
