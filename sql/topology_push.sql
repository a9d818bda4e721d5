-- Push source (picoroute.source = 'push', see test/regress.conf): topology notifications applied
-- with picoroute_apply_events, replaying every case of the bucket-map seed (000), with the views
-- checked after each step.

-- Compact views of the map for this suite.
CREATE VIEW pr_bucket_map AS
    SELECT tier, bucket_id_start AS first, bucket_id_end AS last, replicaset_uuid AS rs,
           replicaset_name AS rs_name, master_address, state
    FROM picoroute_buckets ORDER BY tier, bucket_id_start;

-- Start from a map without instances, replicasets or ranges (other suites may have run before).
SELECT pr_clear_map();

-- Tiers come first (a picoroute extension of the notification format).
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "tier", "name": "default", "bucket_count": 3000},
  {"op": "replace", "map": "tier", "name": "t1", "bucket_count": 30},
  {"op": "replace", "map": "tier", "name": "t2", "bucket_count": 30}
]');
-- The generation counted from here (1: the map with these tiers; other suites may have published
-- maps before, and may have named these tiers already), the tiers of this suite only (tier t9 is
-- named by no other suite: it is still unknown where this suite expects it so).
SELECT generation - 1 AS tp_start FROM picoroute_status \gset
CREATE VIEW pr_generation AS
    SELECT generation - :tp_start AS generation,
           (SELECT count(*) FROM picoroute_tiers WHERE name IN ('default', 't1', 't2', 't9'))::integer AS tiers,
           replicasets, instances, bucket_ranges
    FROM picoroute_status;
SELECT * FROM picoroute_tiers WHERE name IN ('default', 't1', 't2', 't9') ORDER BY name;
SELECT * FROM pr_generation;

-- The topology event log from here on (picoroute_topology_events; the events of other suites and
-- of the tiers above depend on the suites run before): pr_events() shows the events recorded
-- since its previous call, generations counted as in pr_generation.
CREATE TABLE pr_events_seen AS
    SELECT coalesce(max(seq), 0) AS seq, :tp_start::bigint AS tp_start FROM picoroute_topology_events;
CREATE FUNCTION pr_events(OUT generation bigint, OUT kind text, OUT tier text, OUT first integer,
                          OUT last integer, OUT from_rs text, OUT to_rs text, OUT rs text,
                          OUT instance text, OUT old_value text, OUT new_value text)
RETURNS SETOF record LANGUAGE plpgsql AS $$
DECLARE
    seen bigint;
    start bigint;
BEGIN
    SELECT s.seq, s.tp_start INTO seen, start FROM pr_events_seen s;
    RETURN QUERY
        SELECT e.generation - start, e.kind, e.tier, e.bucket_id_start, e.bucket_id_end,
               e.from_replicaset, e.to_replicaset, e.replicaset, e.instance, e.old_value,
               e.new_value
        FROM picoroute_topology_events e WHERE e.seq > seen ORDER BY e.seq;
    UPDATE pr_events_seen SET seq = (SELECT coalesce(max(e.seq), seen) FROM picoroute_topology_events e);
END $$;
SELECT * FROM pr_events();

-- The initial snapshot of tier default: replicasets, then instances, then bucket ranges.
-- R1(1-1000), R2(1001-2000), R3(2001-3000), two instances each.
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "r1", "name": "rs_1", "tier": "default", "current_master_uuid": "i1a"},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "r2", "name": "rs_2", "tier": "default", "current_master_uuid": "i2a"},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "r3", "name": "rs_3", "tier": "default", "current_master_uuid": "i3a"},
  {"op": "replace", "map": "instance", "instance_uuid": "i1a", "name": "i_1a", "replicaset_uuid": "r1", "current_state": "Online", "address": "10.0.1.1:4327"},
  {"op": "replace", "map": "instance", "instance_uuid": "i1b", "name": "i_1b", "replicaset_uuid": "r1", "current_state": "Online", "address": "10.0.1.2:4327"},
  {"op": "replace", "map": "instance", "instance_uuid": "i2a", "name": "i_2a", "replicaset_uuid": "r2", "current_state": "Online", "address": "10.0.2.1:4327"},
  {"op": "replace", "map": "instance", "instance_uuid": "i2b", "name": "i_2b", "replicaset_uuid": "r2", "current_state": "Offline", "address": "10.0.2.2:4327"},
  {"op": "replace", "map": "instance", "instance_uuid": "i3a", "name": "i_3a", "replicaset_uuid": "r3", "current_state": "Online", "address": "10.0.3.1:4327"},
  {"op": "replace", "map": "instance", "instance_uuid": "i3b", "name": "i_3b", "replicaset_uuid": "r3", "current_state": "Online", "address": "10.0.3.2:4327"},
  {"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 1, "end": 1000}, "current_replicaset_uuid": "r1"},
  {"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 1001, "end": 2000}, "current_replicaset_uuid": "r2"},
  {"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 2001, "end": 3000}, "current_replicaset_uuid": "r3"}
]');
SELECT * FROM pr_generation;
SELECT * FROM picoroute_instances ORDER BY uuid;
SELECT * FROM picoroute_replicasets ORDER BY uuid;
SELECT * FROM pr_bucket_map;
SELECT * FROM picoroute_tiers WHERE name IN ('default', 't1', 't2', 't9') ORDER BY name;
-- What the event log says of it.
SELECT * FROM pr_events();

-- Lookups on that map.
SELECT b, picoroute_master('default', b) FROM (VALUES (1), (1000), (1001), (2000), (2001), (3000)) AS t(b);
SELECT picoroute_bucket_id('default', 1) AS bucket_of_1, picoroute_bucket_id('default', 'lol', 5) AS bucket_of_lol_5,
       picoroute_bucket_id('t1', 1) AS t1_bucket_of_1;
SELECT * FROM picoroute_route('default', 1);
SELECT * FROM picoroute_route('default', 'lol', 5);
SELECT * FROM picoroute_route('default', VARIADIC ARRAY[1::bigint]);
SELECT * FROM picoroute_replicas('default', 1500);
SELECT * FROM picoroute_replicas('default', 2500);

------------------------------------------------------------------------------------------------
-- Seed case 1: a replicaset is removed. R2 is expelled; its buckets spread over R1 and R3.
------------------------------------------------------------------------------------------------
-- replicaset event: R2 deleted -> the tier's map is cleared (R1(), R3()).
SELECT picoroute_apply_events('{"op": "delete", "map": "replicaset", "replicaset_uuid": "r2"}');
SELECT * FROM pr_generation;
-- The log: the replicaset is removed, and the map no longer knows any bucket's owner.
SELECT * FROM pr_events();
SELECT * FROM pr_bucket_map;
SELECT uuid, name, tier, master_uuid, instance_count, bucket_count FROM picoroute_replicasets ORDER BY uuid;
SELECT * FROM picoroute_tiers WHERE name = 'default';
-- Every bucket of the tier is unknown now: no master, no route, no replicas.
SELECT picoroute_master('default', 1) AS master_1, picoroute_master('default', 2500) AS master_2500;
SELECT * FROM picoroute_route('default', 1);
SELECT count(*) FROM picoroute_replicas('default', 1);
-- Its instances are still known (Picodata sends their own events), without a replicaset.
SELECT uuid, replicaset_uuid, replicaset_name, tier, is_master FROM picoroute_instances WHERE replicaset_uuid = 'r2';
SELECT picoroute_apply_events('[
  {"op": "delete", "map": "instance", "instance_uuid": "i2a"},
  {"op": "delete", "map": "instance", "instance_uuid": "i2b"}
]');
SELECT count(*) AS r2_instances FROM picoroute_instances WHERE replicaset_uuid = 'r2';
-- bucket event: R1 1-1500 -> R1(1-1500), R3().
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 1, "end": 1500}, "current_replicaset_uuid": "r1"}');
SELECT * FROM pr_generation;
SELECT * FROM pr_bucket_map;
SELECT picoroute_master('default', 1500) AS master_1500, picoroute_master('default', 1501) AS master_1501;
-- bucket event: R3 1501-3000 -> R1(1-1500), R3(1501-3000).
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 1501, "end": 3000}, "current_replicaset_uuid": "r3"}');
SELECT * FROM pr_generation;
SELECT * FROM pr_bucket_map;
SELECT uuid, name, instance_count, bucket_count FROM picoroute_replicasets ORDER BY uuid;
SELECT * FROM picoroute_tiers WHERE name = 'default';
SELECT picoroute_master('default', 1500) AS master_1500, picoroute_master('default', 1501) AS master_1501;
-- The log: R2's instances removed, then the buckets mapped again, one call each.
SELECT * FROM pr_events();

------------------------------------------------------------------------------------------------
-- Seed case 2: a replicaset is added. R1(1-1500), R3(1501-3000); R4 joins the tier.
------------------------------------------------------------------------------------------------
-- replicaset event R4 (new in a tier that has replicasets -> the tier's map is cleared), then
-- the instance events of R4 (the map stays empty), sent in one call.
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "r4", "name": "rs_4", "tier": "default", "current_master_uuid": "i4a"},
  {"op": "replace", "map": "instance", "instance_uuid": "i4a", "name": "i_4a", "replicaset_uuid": "r4", "current_state": "Online", "address": "10.0.4.1:4327"},
  {"op": "replace", "map": "instance", "instance_uuid": "i4b", "name": "i_4b", "replicaset_uuid": "r4", "current_state": "Online", "address": "10.0.4.2:4327"}
]');
SELECT * FROM pr_generation;
SELECT * FROM pr_bucket_map;
SELECT uuid, name, tier, master_uuid, master_address, instance_count, bucket_count FROM picoroute_replicasets ORDER BY uuid;
SELECT * FROM picoroute_tiers WHERE name = 'default';
SELECT picoroute_master('default', 1) AS master_1, picoroute_master('default', 3000) AS master_3000;
-- bucket events R1 1-1000, R3 1001-2000, R4 2001-3000, one call each.
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 1, "end": 1000}, "current_replicaset_uuid": "r1"}');
SELECT * FROM pr_bucket_map;
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 1001, "end": 2000}, "current_replicaset_uuid": "r3"}');
SELECT * FROM pr_bucket_map;
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 2001, "end": 3000}, "current_replicaset_uuid": "r4"}');
SELECT * FROM pr_generation;
SELECT * FROM pr_bucket_map;
SELECT uuid, name, instance_count, bucket_count FROM picoroute_replicasets ORDER BY uuid;
SELECT b, picoroute_master('default', b) FROM (VALUES (1000), (1001), (2000), (2001)) AS t(b);
SELECT * FROM pr_events();

------------------------------------------------------------------------------------------------
-- Seed case 3: weights change. R1(1-1000), R3(1001-2000), R4(2001-3000) -> 0.25 / 0.25 / 0.5.
-- No replicaset event; the bucket events alone rebuild the map.
------------------------------------------------------------------------------------------------
-- R1 1-750 overlaps R1's known 1-1000 -> the map is cleared, then R1(1-750) applied.
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 1, "end": 750}, "current_replicaset_uuid": "r1"}');
SELECT * FROM pr_generation;
SELECT * FROM pr_bucket_map;
SELECT picoroute_master('default', 751) AS master_751;
-- R3 751-1500: no overlap with the map -> added.
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 751, "end": 1500}, "current_replicaset_uuid": "r3"}');
SELECT * FROM pr_bucket_map;
-- R4 1501-3000: no overlap -> added; the map is complete again.
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 1501, "end": 3000}, "current_replicaset_uuid": "r4"}');
SELECT * FROM pr_generation;
SELECT * FROM pr_bucket_map;
SELECT uuid, name, bucket_count FROM picoroute_replicasets ORDER BY uuid;
SELECT * FROM picoroute_tiers WHERE name = 'default';
-- The log: the map cleared by the overlap, then rebuilt with buckets 751-1000 moved from R1 to R3
-- and 1501-2000 from R3 to R4 (the owner of each bucket is compared, whatever the ranges).
SELECT * FROM pr_events();

------------------------------------------------------------------------------------------------
-- Seed case 4: tier isolation. T1(A1, A2), T2(B1); A4 joins T1: only T1's map is cleared.
------------------------------------------------------------------------------------------------
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "a1", "name": "t1_1", "tier": "t1", "current_master_uuid": "ia1"},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "a2", "name": "t1_2", "tier": "t1", "current_master_uuid": "ia2"},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "b1", "name": "t2_1", "tier": "t2", "current_master_uuid": "ib1"},
  {"op": "replace", "map": "instance", "instance_uuid": "ia1", "replicaset_uuid": "a1", "current_state": "Online", "address": "10.1.1.1:4327"},
  {"op": "replace", "map": "instance", "instance_uuid": "ia2", "replicaset_uuid": "a2", "current_state": "Online", "address": "10.1.2.1:4327"},
  {"op": "replace", "map": "instance", "instance_uuid": "ib1", "replicaset_uuid": "b1", "current_state": "Online", "address": "10.2.1.1:4327"},
  {"op": "replace", "map": "bucket", "tier": "t1", "bucket_id": {"start": 1, "end": 15}, "current_replicaset_uuid": "a1"},
  {"op": "replace", "map": "bucket", "tier": "t1", "bucket_id": {"start": 16, "end": 30}, "current_replicaset_uuid": "a2"},
  {"op": "replace", "map": "bucket", "tier": "t2", "bucket_id": {"start": 1, "end": 30}, "current_replicaset_uuid": "b1"}
]');
SELECT * FROM pr_generation;
SELECT * FROM pr_bucket_map WHERE tier <> 'default';
SELECT * FROM picoroute_tiers WHERE name IN ('default', 't1', 't2', 't9') ORDER BY name;
-- A4 (and its instance) joins T1: T1 is cleared, T2 and default keep their maps.
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "a4", "name": "t1_4", "tier": "t1", "current_master_uuid": "ia4"},
  {"op": "replace", "map": "instance", "instance_uuid": "ia4", "replicaset_uuid": "a4", "current_state": "Online", "address": "10.1.4.1:4327"}
]');
SELECT * FROM pr_bucket_map WHERE tier <> 'default';
SELECT * FROM picoroute_tiers WHERE name IN ('default', 't1', 't2', 't9') ORDER BY name;
SELECT picoroute_master('t1', 1) AS t1_master_1, picoroute_master('t2', 1) AS t2_master_1,
       picoroute_master('default', 1) AS default_master_1;
-- bucket events for T1's replicasets only: T1(A1), T1(A2), T1(A4).
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "t1", "bucket_id": {"start": 1, "end": 10}, "current_replicaset_uuid": "a1"}');
SELECT * FROM pr_bucket_map WHERE tier <> 'default';
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "t1", "bucket_id": {"start": 11, "end": 20}, "current_replicaset_uuid": "a2"}');
SELECT * FROM pr_bucket_map WHERE tier <> 'default';
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "t1", "bucket_id": {"start": 21, "end": 30}, "current_replicaset_uuid": "a4"}');
SELECT * FROM pr_generation;
SELECT * FROM pr_bucket_map WHERE tier <> 'default';
SELECT * FROM picoroute_tiers WHERE name IN ('default', 't1', 't2', 't9') ORDER BY name;
SELECT b, picoroute_master('t1', b) AS t1, picoroute_master('t2', b) AS t2 FROM (VALUES (1), (11), (21), (30)) AS t(b);
-- The log: tiers t1 and t2 filled, then t1 alone cleared and filled again.
SELECT * FROM pr_events();

------------------------------------------------------------------------------------------------
-- Master switch: the map is not touched, the master and its address change.
------------------------------------------------------------------------------------------------
SELECT picoroute_apply_events('{"op": "replace", "map": "replicaset", "replicaset_uuid": "r1", "current_master_uuid": "i1b"}');
SELECT * FROM pr_generation;
SELECT * FROM pr_bucket_map WHERE tier = 'default';
SELECT picoroute_master('default', 1) AS master_1;
SELECT * FROM picoroute_replicas('default', 1);
SELECT uuid, is_master FROM picoroute_instances WHERE replicaset_uuid = 'r1' ORDER BY uuid;
SELECT uuid, master_uuid, master_name, master_address FROM picoroute_replicasets WHERE uuid = 'r1';

-- An instance changes state and address; only the given fields change.
SELECT picoroute_apply_events('{"op": "replace", "map": "instance", "instance_uuid": "i1a", "current_state": "Offline"}');
SELECT uuid, name, replicaset_uuid, state, address, is_online FROM picoroute_instances WHERE uuid = 'i1a';
SELECT picoroute_apply_events('{"op": "replace", "map": "instance", "instance_uuid": "i1b", "address": "10.0.1.20:5432"}');
SELECT picoroute_master('default', 1) AS master_1;
-- The log: the master switch names the old and the new master; then the state and the address.
SELECT * FROM pr_events();

------------------------------------------------------------------------------------------------
-- Redelivery: events that change nothing return their count but keep the generation.
------------------------------------------------------------------------------------------------
SELECT generation AS generation_before FROM picoroute_status \gset
SELECT picoroute_apply_events('{"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 1, "end": 750}, "current_replicaset_uuid": "r1"}');
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "r3", "name": "rs_3", "tier": "default", "current_master_uuid": "i3a"},
  {"op": "replace", "map": "instance", "instance_uuid": "i3a", "name": "i_3a", "replicaset_uuid": "r3", "current_state": "Online", "address": "10.0.3.1:4327"},
  {"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 751, "end": 1500}, "current_replicaset_uuid": "r3"},
  {"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 1501, "end": 3000}, "current_replicaset_uuid": "r4"},
  {"op": "replace", "map": "tier", "name": "default", "bucket_count": 3000}
]');
SELECT picoroute_apply_events('[]');
SELECT generation = :generation_before AS generation_unchanged FROM picoroute_status;
SELECT * FROM pr_bucket_map WHERE tier = 'default';
-- A tier's bucket_count is fixed once known: a different value is ignored.
SELECT picoroute_apply_events('{"op": "replace", "map": "tier", "name": "default", "bucket_count": 16}');
SELECT generation = :generation_before AS generation_unchanged, (SELECT bucket_count FROM picoroute_tiers WHERE name = 'default') FROM picoroute_status;
-- Nothing published, nothing logged.
SELECT * FROM pr_events();

------------------------------------------------------------------------------------------------
-- A tier named by a replicaset before its bucket_count is known.
------------------------------------------------------------------------------------------------
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "c1", "name": "t9_1", "tier": "t9", "current_master_uuid": "ic1"},
  {"op": "replace", "map": "instance", "instance_uuid": "ic1", "replicaset_uuid": "c1", "current_state": "Online", "address": "10.3.1.1:4327"},
  {"op": "replace", "map": "bucket", "tier": "t9", "bucket_id": {"start": 1, "end": 100}, "current_replicaset_uuid": "c1"}
]');
SELECT * FROM picoroute_tiers WHERE name = 't9';
SELECT picoroute_master('t9', 50) AS master_50, picoroute_master('t9', 5000) AS master_5000;
SELECT picoroute_bucket_id('t9', 1);
-- Its bucket_count arrives later and is kept (the map was published without it in between).
SELECT picoroute_apply_events('{"op": "replace", "map": "tier", "name": "t9", "bucket_count": 100}');
SELECT * FROM picoroute_tiers WHERE name = 't9';
SELECT picoroute_bucket_id('t9', 1) AS t9_bucket_of_1;
SELECT * FROM picoroute_route('t9', 1);
SELECT picoroute_master('t9', 101);
-- Retire tier t9's replicaset and instance again.
SELECT picoroute_apply_events('[
  {"op": "delete", "map": "replicaset", "replicaset_uuid": "c1"},
  {"op": "delete", "map": "instance", "instance_uuid": "ic1"}
]');
SELECT * FROM picoroute_tiers WHERE name IN ('default', 't1', 't2', 't9') ORDER BY name;
SELECT * FROM pr_bucket_map WHERE tier = 't9';

------------------------------------------------------------------------------------------------
-- A replicaset and its master's instance in separate calls: the published image keeps the
-- master's uuid even before the instance is known, so the instance event completes the route.
-- Resending the replicaset event afterwards changes nothing (the generation stays).
------------------------------------------------------------------------------------------------
SELECT picoroute_apply_events('{"op": "replace", "map": "replicaset", "replicaset_uuid": "b2", "name": "t2_2", "tier": "t2", "current_master_uuid": "ib2"}');
SELECT picoroute_apply_events('{"op": "replace", "map": "instance", "instance_uuid": "ib2", "replicaset_uuid": "b2", "current_state": "Online", "address": "10.2.2.1:4327"}');
SELECT uuid, master_uuid, master_address FROM picoroute_replicasets WHERE uuid = 'b2';
SELECT picoroute_apply_events('{"op": "replace", "map": "replicaset", "replicaset_uuid": "b2", "current_master_uuid": "ib2"}');
SELECT uuid, master_uuid, master_address FROM picoroute_replicasets WHERE uuid = 'b2';
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "bucket", "tier": "t2", "bucket_id": {"start": 1, "end": 15}, "current_replicaset_uuid": "b1"},
  {"op": "replace", "map": "bucket", "tier": "t2", "bucket_id": {"start": 16, "end": 30}, "current_replicaset_uuid": "b2"}
]');

-- The final state of this suite, used by the following ones.
SELECT * FROM pr_generation;
SELECT * FROM picoroute_instances ORDER BY uuid;
SELECT * FROM picoroute_replicasets ORDER BY uuid;
SELECT * FROM pr_bucket_map;
SELECT * FROM picoroute_tiers WHERE name IN ('default', 't1', 't2', 't9') ORDER BY name;

------------------------------------------------------------------------------------------------
-- The detected version: the lowest that an online instance reports (an offline one does not
-- count); NULL while none reports one. The instances are removed again, leaving the state above.
------------------------------------------------------------------------------------------------
SELECT picodata_version FROM picoroute_status;
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "instance", "instance_uuid": "iv1", "current_state": "Online", "address": "10.9.0.1:4327", "picodata_version": "26.3.0-142-gabc"},
  {"op": "replace", "map": "instance", "instance_uuid": "iv2", "current_state": "Online", "address": "10.9.0.2:4327", "picodata_version": "25.5.10"},
  {"op": "replace", "map": "instance", "instance_uuid": "iv3", "current_state": "Offline", "address": "10.9.0.3:4327", "picodata_version": "25.5.1"}
]');
SELECT uuid, is_online, picodata_version FROM picoroute_instances WHERE uuid LIKE 'iv%' ORDER BY uuid;
SELECT picodata_version FROM picoroute_status;
SELECT picoroute_apply_events('{"op": "delete", "map": "instance", "instance_uuid": "iv2"}');
SELECT picodata_version FROM picoroute_status;
SELECT picoroute_apply_events('[
  {"op": "delete", "map": "instance", "instance_uuid": "iv1"},
  {"op": "delete", "map": "instance", "instance_uuid": "iv3"}
]');
SELECT picodata_version FROM picoroute_status;
-- The log of this section: the instances added, the cluster's version as it changed, the
-- instances removed.
SELECT * FROM pr_events();
DROP FUNCTION pr_events();
DROP TABLE pr_events_seen;
