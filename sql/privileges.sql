-- Any role can read the map and look buckets up; changing or forcing the map is not granted to
-- PUBLIC; the connection string is shown to superusers and pg_read_all_settings only.
CREATE ROLE regress_picoroute_reader;
CREATE ROLE regress_picoroute_settings IN ROLE pg_read_all_settings;
CREATE ROLE regress_picoroute_feeder;
GRANT EXECUTE ON FUNCTION picoroute_apply_events(jsonb) TO regress_picoroute_feeder;

SELECT p.oid::regprocedure AS function,
       has_function_privilege('regress_picoroute_reader', p.oid, 'EXECUTE') AS reader_may_execute
FROM pg_proc p
WHERE p.proname IN ('picoroute_bucket_id', 'picoroute_bucket_id_with_count',
                    'picoroute_bucket_id_for_version', 'picoroute_master',
                    'picoroute_route', 'picoroute_replicas', 'picoroute_refresh',
                    'picoroute_apply_events')
ORDER BY p.oid;

-- The seed map (sql/setup.sql).
SELECT pr_clear_map();
SELECT pr_push_seed_map() > 0 AS applied;

-- A plain role: views and lookups work.
SET ROLE regress_picoroute_reader;
SELECT count(*) AS instances FROM picoroute_instances;
SELECT count(*) AS replicasets FROM picoroute_replicasets;
SELECT * FROM picoroute_buckets WHERE tier = 'default' ORDER BY bucket_id_start;
SELECT * FROM picoroute_tiers WHERE name IN ('default', 't1', 't2', 't3') ORDER BY name;
SELECT source, conninfo IS NULL AS conninfo_hidden, generation > 0 AS has_map FROM picoroute_status;
SELECT picoroute_master('default', 1), picoroute_bucket_id('default', 1),
       picoroute_bucket_id_with_count(3000, 'lol', 5),
       picoroute_bucket_id_for_version('26.1.6', 3000, 'lol', 5);
SELECT * FROM picoroute_route('default', 'lol', 5);
SELECT * FROM picoroute_replicas('t2', 20);
-- ... but it may not change the map or force a refresh.
SELECT picoroute_apply_events('[]');
SELECT picoroute_refresh();
SELECT pr_try('SELECT picoroute_apply_events(''[]'')') AS apply_events,
       pr_try('SELECT picoroute_refresh(10)') AS refresh;
RESET ROLE;

-- Members of pg_read_all_settings see the connection string, password masked.
SET ROLE regress_picoroute_settings;
SELECT conninfo FROM picoroute_status;
RESET ROLE;

-- A role granted picoroute_apply_events may feed events.
SET ROLE regress_picoroute_feeder;
SELECT picoroute_apply_events('{"op": "replace", "map": "instance", "instance_uuid": "i1a", "current_state": "Online"}');
SELECT uuid, state, is_online FROM picoroute_instances WHERE uuid = 'i1a';
SELECT conninfo IS NULL AS conninfo_hidden FROM picoroute_status;
RESET ROLE;

REVOKE EXECUTE ON FUNCTION picoroute_apply_events(jsonb) FROM regress_picoroute_feeder;
DROP ROLE regress_picoroute_feeder;
DROP ROLE regress_picoroute_settings;
DROP ROLE regress_picoroute_reader;

------------------------------------------------------------------------------------------------
-- Poll mode (last, because it switches the source of this instance): picoroute_apply_events
-- refuses to run, and says how to switch.
------------------------------------------------------------------------------------------------
ALTER SYSTEM SET picoroute.source = 'poll';
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SHOW picoroute.source;
SELECT source FROM picoroute_status;
SELECT picoroute_apply_events('[]');
ALTER SYSTEM RESET picoroute.source;
SELECT pg_reload_conf();
SELECT pg_sleep(0.5);
SHOW picoroute.source;
