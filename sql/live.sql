-- Where picoroute connects, and a map that stays live: addresses from the map (TCP host:port
-- only), picoroute.allowed_hosts, conninfo parse errors that never echo the string, a tier that
-- starts with no buckets, capacity overflows that recover, bounded, interruptible and
-- all-or-nothing picoroute_apply_events, the bucket-index memory bound, and stopping the worker.
SELECT pr_clear_map();
CREATE VIEW lv_state AS SELECT generation, tiers, replicasets, instances, bucket_ranges,
    capacity_exceeded FROM picoroute_status;
CREATE TEMP TABLE lv_before AS SELECT generation FROM picoroute_status;

-- A tier of its own: one replicaset, its master on a non-routable address. The tier is first
-- listed with bucket_count 0 (5. it takes its count when it gets one; its buckets then apply).
SELECT picoroute_apply_events('[
  {"op":"replace","map":"tier","name":"live","bucket_count":0},
  {"op":"replace","map":"replicaset","replicaset_uuid":"lv-r1","tier":"live","current_master_uuid":"lv-i1"},
  {"op":"replace","map":"instance","instance_uuid":"lv-i1","replicaset_uuid":"lv-r1","current_state":"Online","address":"10.255.255.1:4327"}]');
SELECT name, bucket_count, buckets_mapped FROM picoroute_tiers WHERE name = 'live';
SELECT picoroute_apply_events('[{"op":"replace","map":"tier","name":"live","bucket_count":100},
  {"op":"replace","map":"bucket","tier":"live","bucket_id":{"start":1,"end":100},"current_replicaset_uuid":"lv-r1"}]');
SELECT name, bucket_count, buckets_mapped FROM picoroute_tiers WHERE name = 'live';
SELECT picoroute_master('live', 1);

-- 1. Only TCP host:port addresses enter the map: a Unix-socket directory, a conninfo fragment or
-- an unbracketed IPv6 address is refused with the event, and the map does not change.
UPDATE lv_before SET generation = (SELECT generation FROM picoroute_status);
SELECT picoroute_apply_events('{"op":"replace","map":"instance","instance_uuid":"lv-i1","address":"/tmp:5432"}');
SELECT picoroute_apply_events('{"op":"replace","map":"instance","instance_uuid":"lv-i1","address":"x:1 host=/tmp"}');
SELECT picoroute_apply_events('[{"op":"replace","map":"instance","instance_uuid":"lv-i2","address":"10.0.0.1:1"},
  {"op":"replace","map":"instance","instance_uuid":"lv-i1","address":"fe80::1:4327"}]');
SELECT generation = (SELECT generation FROM lv_before) AS unchanged, picoroute_master('live', 1)
FROM picoroute_status;

-- picoroute.allowed_hosts restricts where picoroute connects: the refusal names the instance and
-- the setting, and comes at once (no connection attempt to the non-routable address).
ALTER SYSTEM SET picoroute.allowed_hosts = '127.0.0.1, 192.168.0.0/16, pico.example';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SHOW picoroute.allowed_hosts;
SELECT * FROM picoroute_exec('live', 1, 'SELECT 1') AS t(x int);
-- The setting cannot be changed in a session, and a malformed value is refused.
SET picoroute.allowed_hosts = '';
ALTER SYSTEM SET picoroute.allowed_hosts = '10.0.0.0/33';
ALTER SYSTEM RESET picoroute.allowed_hosts;
-- Empty, the default: an address that only picoroute_apply_events gave (every address of this
-- map) gets no connection, so no credentials; '*' (test/regress.conf) admits any address.
ALTER SYSTEM SET picoroute.allowed_hosts = '';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SELECT * FROM picoroute_exec('live', 1, 'SELECT 1') AS t(x int);
ALTER SYSTEM RESET picoroute.allowed_hosts;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);

-- 2. A conninfo libpq cannot parse (an unquoted password with a blank) is reported without any
-- part of the string.
ALTER SYSTEM SET picoroute.conninfo = 'host=127.0.0.1 port=9 user=picoroute password=top secret';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SELECT * FROM picoroute_exec('live', 1, 'SELECT 1') AS t(x int);
SELECT conninfo FROM picoroute_status;
ALTER SYSTEM RESET picoroute.conninfo;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);

-- A topology over capacity (picoroute.max_bucket_ranges = 64) is refused and reported; the next
-- batch that fits applies, and the report clears.
SELECT picoroute_apply_events(jsonb_agg(jsonb_build_object('op', 'replace', 'map', 'bucket',
         'tier', 'live', 'bucket_id', jsonb_build_object('start', b, 'end', b),
         'current_replicaset_uuid', 'lv-r1')))
FROM generate_series(1, 70) AS b;
SELECT capacity_exceeded FROM picoroute_status;
SELECT picoroute_apply_events('{"op":"replace","map":"bucket","tier":"live","bucket_id":{"start":1,"end":30},"current_replicaset_uuid":"lv-r1","state":"sending"}');
SELECT capacity_exceeded FROM picoroute_status;
SELECT bucket_id_start, bucket_id_end, state FROM picoroute_buckets WHERE tier = 'live';

-- 8. picoroute_apply_events is bounded, all-or-nothing and interruptible.
SELECT picoroute_apply_events(jsonb_agg('{}'::jsonb)) FROM generate_series(1, 100001);
UPDATE lv_before SET generation = (SELECT generation FROM picoroute_status);
-- An error in the last event of a long array: nothing of the array is applied.
SELECT picoroute_apply_events(jsonb_agg(CASE WHEN i < 5000
    THEN jsonb_build_object('op', 'replace', 'map', 'instance', 'instance_uuid', 'lv-i1',
                            'current_state', 'Offline', 'address', '10.255.255.' || (i % 200 + 1) || ':4327')
    ELSE '{"op":"replace","map":"bucket","tier":"live","bucket_id":{"start":5,"end":500},"current_replicaset_uuid":"lv-r1"}'::jsonb END))
FROM generate_series(1, 5000) AS i;
SELECT generation = (SELECT generation FROM lv_before) AS unchanged, state, address
FROM picoroute_status, picoroute_instances WHERE uuid = 'lv-i1';
-- statement_timeout stops a long call, and the map is not published.
CREATE TEMP TABLE lv_big AS
SELECT jsonb_agg(jsonb_build_object('op', 'replace', 'map', 'instance', 'instance_uuid', 'lv-i1',
                 'current_state', CASE WHEN i % 2 = 0 THEN 'Online' ELSE 'Offline' END,
                 'address', '10.255.' || (i % 250) || '.' || (i % 199 + 1) || ':4327')) AS events
FROM generate_series(1, 99999) AS i;
SET statement_timeout = '20ms';
SELECT picoroute_apply_events(events) FROM lv_big;
RESET statement_timeout;
SELECT generation = (SELECT generation FROM lv_before) AS unchanged, state, address
FROM picoroute_status, picoroute_instances WHERE uuid = 'lv-i1';
-- Without the timeout the same call applies (and ends on the last event).
SELECT picoroute_apply_events(events) FROM lv_big;
SELECT state, address FROM picoroute_instances WHERE uuid = 'lv-i1';

-- 7. The bucket-index memory of a session is bounded; lookups give the same answers without it.
SHOW picoroute.max_map_memory;
SELECT picoroute_master('live', 7), picoroute_master('live', 30);
SET picoroute.max_map_memory = 0;
SELECT picoroute_apply_events('{"op":"replace","map":"instance","instance_uuid":"lv-i1","address":"10.255.255.1:4327"}');
SELECT picoroute_master('live', 7), picoroute_master('live', 30), picoroute_master('live', 31);
RESET picoroute.max_map_memory;

-- 6. The worker can be stopped from SQL; the postmaster starts it again.
SELECT p.oid::regprocedure AS function, has_function_privilege('public', p.oid, 'EXECUTE') AS public_may_execute
FROM pg_proc p WHERE proname = 'picoroute_restart_worker';
CREATE TEMP TABLE lv_pid AS SELECT worker_pid AS pid FROM picoroute_status;
SELECT pg_terminate_backend(pid) FROM lv_pid;
CREATE FUNCTION lv_wait_new_worker() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  FOR i IN 1..300 LOOP
    IF EXISTS (SELECT 1 FROM picoroute_status, lv_pid
               WHERE worker_pid IS NOT NULL AND worker_pid <> pid) THEN
      RETURN true;
    END IF;
    PERFORM pg_sleep(0.1);
  END LOOP;
  RETURN false;
END $$;
SELECT lv_wait_new_worker();
UPDATE lv_pid SET pid = (SELECT worker_pid FROM picoroute_status);
SELECT picoroute_restart_worker() = pid AS signalled_the_worker FROM lv_pid;
SELECT lv_wait_new_worker();
SELECT backend_type FROM pg_stat_activity WHERE pid = (SELECT worker_pid FROM picoroute_status);

-- The worker answers process-signal barriers: DROP DATABASE (which waits for every process of
-- the process array to absorb one) does not hang on it.
CREATE DATABASE lv_barrier;
SET statement_timeout = '30s';
DROP DATABASE lv_barrier;
RESET statement_timeout;

DROP FUNCTION lv_wait_new_worker();
DROP VIEW lv_state;
