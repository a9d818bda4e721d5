-- picoroute: the topology surface (the first part of the install script; see the Makefile).
-- Bucket ids computed exactly as Picodata computes them, lookups on the topology map the
-- background worker (or picoroute_apply_events) publishes in shared memory, views of that map,
-- and the functions that refresh or change it.

------------------------------------------------------------------------------------------------
-- Bucket ids
------------------------------------------------------------------------------------------------

-- Not STRICT: a NULL key part hashes as Picodata's NULL; a NULL tier or bucket_count gives NULL.
CREATE FUNCTION picoroute_bucket_id(tier text, VARIADIC key "any")
RETURNS integer
AS 'MODULE_PATHNAME', 'picoroute_bucket_id'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_bucket_id(text, "any") IS
'Picodata bucket id of a sharding key (values in sharding-key order) in the given tier, using the '
'tier''s bucket_count from the topology map and the hashing rule of the cluster''s detected '
'Picodata version (doubles hash differently from 26.1 on; the newest rule while no version is '
'detected). Key types: smallint, integer, bigint, text, varchar, character (trailing blanks '
'ignored), name, boolean, real, double precision, numeric, uuid, timestamp with time zone; NULL '
'hashes as nil.';

CREATE FUNCTION picoroute_bucket_id_with_count(bucket_count integer, VARIADIC key "any")
RETURNS integer
AS 'MODULE_PATHNAME', 'picoroute_bucket_id_with_count'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_bucket_id_with_count(integer, "any") IS
'Picodata bucket id of a sharding key for an explicit bucket_count (no topology needed): '
'murmur3_x86_32 of the MessagePack-encoded key, seed 13, modulo bucket_count, plus 1, by the '
'hashing rule of Picodata 25.5 (a double as cb + IEEE 754; use picoroute_bucket_id_for_version '
'for 26.1 and later). Same key types as picoroute_bucket_id.';

CREATE FUNCTION picoroute_bucket_id_for_version(picodata_version text, bucket_count integer,
                                                VARIADIC key "any")
RETURNS integer
AS 'MODULE_PATHNAME', 'picoroute_bucket_id_for_version'
LANGUAGE C IMMUTABLE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_bucket_id_for_version(text, integer, "any") IS
'Picodata bucket id of a sharding key for an explicit bucket_count, hashed as the given Picodata '
'version hashes it (as Picodata reports it, e.g. 25.5.10 or 26.1.6; doubles hash differently from '
'26.1 on). No topology needed. Same key types as picoroute_bucket_id.';

------------------------------------------------------------------------------------------------
-- Lookups
------------------------------------------------------------------------------------------------

CREATE FUNCTION picoroute_master(tier text, bucket_id integer)
RETURNS text
AS 'MODULE_PATHNAME', 'picoroute_master'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_master(text, integer) IS
'PostgreSQL-protocol address (host:port) of the master of the replicaset owning the bucket, or '
'NULL when the map does not know it. Errors for an unknown tier or a bucket outside '
'1..bucket_count.';

CREATE FUNCTION picoroute_route(tier text, VARIADIC key "any",
                                OUT bucket_id integer, OUT replicaset_uuid text,
                                OUT master_uuid text, OUT master_address text)
RETURNS record
AS 'MODULE_PATHNAME', 'picoroute_route'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_route(text, "any") IS
'Bucket id of a sharding key in the tier and where it lives: the owning replicaset, its master '
'and the master''s address (NULL where the map does not know).';

CREATE FUNCTION picoroute_replicas(tier text, bucket_id integer,
                                   OUT uuid text, OUT name text, OUT address text,
                                   OUT state text, OUT is_master boolean)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_replicas'
LANGUAGE C STABLE STRICT PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_replicas(text, integer) IS
'Every known instance of the replicaset owning the bucket, master first, then by uuid; no rows '
'when the map does not know the bucket''s owner.';

------------------------------------------------------------------------------------------------
-- Views of the map
------------------------------------------------------------------------------------------------

CREATE FUNCTION picoroute_instance_rows(OUT uuid text, OUT name text, OUT replicaset_uuid text,
                                        OUT replicaset_name text, OUT tier text, OUT state text,
                                        OUT address text, OUT is_master boolean,
                                        OUT is_online boolean, OUT picodata_version text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_instance_rows'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_instance_rows() IS
'The instances of the topology map (behind the view picoroute_instances).';

CREATE VIEW picoroute_instances AS
    SELECT * FROM picoroute_instance_rows();

COMMENT ON VIEW picoroute_instances IS
'Instances of the Picodata cluster as the topology map knows them: replicaset, tier, state, '
'PostgreSQL-protocol address, whether it is its replicaset''s master, whether it is Online, and '
'the Picodata version it reports (_pico_instance.picodata_version).';

CREATE FUNCTION picoroute_replicaset_rows(OUT uuid text, OUT name text, OUT tier text,
                                          OUT master_uuid text, OUT master_name text,
                                          OUT master_address text, OUT instance_count integer,
                                          OUT bucket_count bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_replicaset_rows'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_replicaset_rows() IS
'The replicasets of the topology map (behind the view picoroute_replicasets).';

CREATE VIEW picoroute_replicasets AS
    SELECT * FROM picoroute_replicaset_rows();

COMMENT ON VIEW picoroute_replicasets IS
'Replicasets of the Picodata cluster as the topology map knows them: tier, master, number of '
'known instances and number of buckets the map assigns to it.';

CREATE FUNCTION picoroute_bucket_rows(OUT tier text, OUT bucket_id_start bigint,
                                      OUT bucket_id_end bigint, OUT replicaset_uuid text,
                                      OUT replicaset_name text, OUT master_address text,
                                      OUT state text)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_bucket_rows'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_bucket_rows() IS
'The bucket ranges of the topology map (behind the view picoroute_buckets).';

CREATE VIEW picoroute_buckets AS
    SELECT * FROM picoroute_bucket_rows();

COMMENT ON VIEW picoroute_buckets IS
'Bucket map: contiguous ranges of bucket ids (inclusive) per tier and the replicaset owning each, '
'with its master''s address. Buckets outside every range are unknown (e.g. during rebalancing).';

CREATE FUNCTION picoroute_tier_rows(OUT name text, OUT bucket_count bigint,
                                    OUT replicaset_count integer, OUT range_count integer,
                                    OUT buckets_mapped bigint)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_tier_rows'
LANGUAGE C STABLE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_tier_rows() IS
'The tiers of the topology map (behind the view picoroute_tiers).';

CREATE VIEW picoroute_tiers AS
    SELECT * FROM picoroute_tier_rows();

COMMENT ON VIEW picoroute_tiers IS
'Tiers: bucket_count (NULL while not known), number of replicasets, number of bucket ranges and '
'how many buckets those ranges cover (buckets_mapped < bucket_count while the map is incomplete).';

CREATE FUNCTION picoroute_status_row(OUT source text, OUT conninfo text,
                                     OUT source_instance text, OUT worker_pid integer,
                                     OUT worker_state text,
                                     OUT last_refresh_start timestamptz,
                                     OUT last_refresh_end timestamptz,
                                     OUT last_success timestamptz, OUT last_error text,
                                     OUT last_warning text, OUT generation bigint,
                                     OUT refreshes bigint, OUT refresh_failures bigint,
                                     OUT topology_resets bigint, OUT tiers integer, OUT replicasets integer,
                                     OUT instances integer, OUT bucket_ranges integer,
                                     OUT max_replicasets integer, OUT max_instances integer,
                                     OUT max_bucket_ranges integer,
                                     OUT capacity_exceeded boolean,
                                     OUT picodata_version text)
RETURNS record
AS 'MODULE_PATHNAME', 'picoroute_status_row'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_status_row() IS
'The state of the topology source and map (behind the view picoroute_status).';

CREATE VIEW picoroute_status AS
    SELECT * FROM picoroute_status_row();

COMMENT ON VIEW picoroute_status IS
'One row: the topology source (poll or push), its connection string with the password masked '
'(shown to superusers and members of pg_read_all_settings only), the instance read from, the '
'worker''s state, refresh times and counters (topology_resets counts the times the topology was '
'cleared and rebuilt because the worker started reading from another instance), the last error and warning, the map generation, '
'entry counts against the configured capacities, and the detected Picodata version (the lowest '
'that an online instance reports; NULL while none is known), which capability lookups follow '
'unless a server sets the option picodata_version.';

-- The map is not secret (the password in the connection string is masked, and the string is only
-- shown to superusers and members of pg_read_all_settings): every role may read the views.
GRANT SELECT ON picoroute_instances, picoroute_replicasets, picoroute_buckets, picoroute_tiers,
                picoroute_status TO PUBLIC;

------------------------------------------------------------------------------------------------
-- Changing the map (not granted to PUBLIC)
------------------------------------------------------------------------------------------------

CREATE FUNCTION picoroute_refresh(timeout_ms integer DEFAULT 5000)
RETURNS bigint
AS 'MODULE_PATHNAME', 'picoroute_refresh'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION picoroute_refresh(integer) IS
'Poll source: wakes the background worker and waits up to timeout_ms for a refresh that started '
'after the call; returns the map generation then current. Errors in push mode, when the worker is '
'not running, on timeout, and when that refresh failed.';

CREATE FUNCTION picoroute_apply_events(events jsonb)
RETURNS integer
AS 'MODULE_PATHNAME', 'picoroute_apply_events'
LANGUAGE C VOLATILE STRICT PARALLEL UNSAFE;

COMMENT ON FUNCTION picoroute_apply_events(jsonb) IS
'Push source (picoroute.source = push): applies one topology notification or an array of them '
'(maps replicaset, instance, bucket, and tier with name and bucket_count) to the map and '
'publishes the result once. All or nothing: on error the previous map stays. Returns the number '
'of events applied.';

REVOKE ALL ON FUNCTION picoroute_apply_events(jsonb), picoroute_refresh(integer) FROM PUBLIC;

------------------------------------------------------------------------------------------------
-- CREATE EXTENSION fails here, with a hint, unless the library is in shared_preload_libraries.
------------------------------------------------------------------------------------------------

CREATE FUNCTION picoroute_assert_preloaded()
RETURNS void
AS 'MODULE_PATHNAME', 'picoroute_assert_preloaded'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_assert_preloaded() IS
'Errors unless picoroute is loaded through shared_preload_libraries.';

SELECT picoroute_assert_preloaded();
