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
