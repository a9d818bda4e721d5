-- The static schema of an instance: roles, the catalog views over the catalog file, the
-- emulator's own tables. Run once on the template server, copied into every master; hash.sql,
-- strict.sql and key_route.sql follow it.
-- Placeholders (SQL, quoted by the caller): {{password_encryption}} a string literal,
-- {{admin}}, {{client}} role names, {{admin_pw}}, {{client_pw}} string literals.

SET password_encryption = {{password_encryption}};
ALTER ROLE {{admin}} PASSWORD {{admin_pw}};
CREATE ROLE {{client}} LOGIN PASSWORD {{client_pw}};
CREATE EXTENSION postgres_fdw;

CREATE SCHEMA _picoemu;
-- The catalog is not stored in tables: every instance, standbys included, reads it from the file
-- picoemu_catalog.json that picoemu writes into its data directory, as every Picodata instance
-- applies the catalog from the Raft log. A standby thus shows a stopped master Offline at once.
CREATE FUNCTION _picoemu.catalog_file() RETURNS json
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $f$
DECLARE t text := pg_read_file('picoemu_catalog.json', 0, 100000000, true);
BEGIN
  IF t IS NULL THEN
    RAISE EXCEPTION 'picoemu: the catalog file picoemu_catalog.json is missing in the data directory of instance %',
      current_setting('picoemu.instance', true) USING ERRCODE = 'PE003';
  END IF;
  RETURN t::json;
END $f$;
-- The rows of one catalog table, for a user that may read it: the grants are part of the catalog
-- document too (picoemu grant/revoke), so every instance applies the same ones. (A check for the
-- clients picoemu knows, not a security boundary: _picoemu.catalog_file() is callable by all.)
CREATE FUNCTION _picoemu.catalog_doc(tbl text) RETURNS json
LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS $f$
DECLARE doc json := _picoemu.catalog_file();
BEGIN
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
     AND NOT EXISTS (SELECT 1 FROM json_array_elements_text(doc -> 'grants' -> tbl) g
                      WHERE g IN ('PUBLIC', current_user)) THEN
    RAISE EXCEPTION 'permission denied for table %', tbl USING ERRCODE = '42501';
  END IF;
  RETURN doc -> tbl;
END $f$;
GRANT EXECUTE ON FUNCTION _picoemu.catalog_doc(text) TO PUBLIC;
CREATE VIEW public._pico_instance AS SELECT * FROM json_to_recordset(_picoemu.catalog_doc('_pico_instance')) AS x(
  name text, uuid text, raft_id bigint, replicaset_name text, replicaset_uuid text, current_state json,
  target_state json, failure_domain json, tier text, picodata_version text, sync_incarnation bigint,
  target_state_reason text, target_state_change_time timestamptz);
CREATE VIEW public._pico_peer_address AS SELECT * FROM json_to_recordset(_picoemu.catalog_doc('_pico_peer_address')) AS x(
  raft_id bigint, address text, connection_type text);
CREATE VIEW public._pico_replicaset AS SELECT * FROM json_to_recordset(_picoemu.catalog_doc('_pico_replicaset')) AS x(
  name text, uuid text, current_master_name text, target_master_name text, tier text,
  weight double precision, weight_origin text, state text, current_config_version bigint,
  target_config_version bigint, promotion_vclock json, master_change_counter bigint,
  current_bucket_state_version bigint, target_bucket_state_version bigint);
CREATE VIEW public._pico_tier AS SELECT * FROM json_to_recordset(_picoemu.catalog_doc('_pico_tier')) AS x(
  name text, replication_factor bigint, can_vote boolean, current_vshard_config_version bigint,
  target_vshard_config_version bigint, vshard_bootstrapped boolean, bucket_count bigint,
  is_default boolean, current_bucket_state_version bigint, target_bucket_state_version bigint);
CREATE VIEW public._pico_table AS SELECT * FROM json_to_recordset(_picoemu.catalog_doc('_pico_table')) AS x(
  id bigint, name text, distribution json, format json, schema_version bigint, operable boolean,
  engine text, owner bigint, description text);
-- Only each table's primary key (index 0): `parts` lists [field, type, collation, is_nullable, path].
CREATE VIEW public._pico_index AS SELECT * FROM json_to_recordset(_picoemu.catalog_doc('_pico_index')) AS x(
  table_id bigint, id bigint, name text, type text, opts json, parts json, operable boolean,
  schema_version bigint);
GRANT SELECT ON public._pico_instance, public._pico_peer_address, public._pico_replicaset,
  public._pico_tier, public._pico_table, public._pico_index TO PUBLIC;
-- SQL version() as the emulated build answers it (emu_caps.version_function_text, in the setting
-- picoemu.version_text): the fronts send a client's version() as _picoemu.picodata_version().
CREATE FUNCTION _picoemu.picodata_version() RETURNS text
LANGUAGE sql STABLE AS $f$ SELECT current_setting('picoemu.version_text') $f$;

GRANT USAGE ON SCHEMA _picoemu TO PUBLIC;
CREATE TABLE _picoemu.meta (key text PRIMARY KEY, value text);
CREATE TABLE _picoemu.setting (key text PRIMARY KEY, value text);
CREATE TABLE _picoemu.bucket_range (
  tier text NOT NULL, bucket_start bigint NOT NULL, bucket_end bigint NOT NULL,
  replicaset_name text NOT NULL, replicaset_uuid text NOT NULL, PRIMARY KEY (tier, bucket_start));
CREATE TABLE _picoemu.guard (tier text NOT NULL, bucket_id bigint NOT NULL, PRIMARY KEY (tier, bucket_id));
-- The views read the guard through this function, not by naming the table: LOCK TABLE on a view
-- also locks every relation the view names, so a view rebuild (drop_topology.sql) that has locked
-- one view would hold the guard, which every sharded view shares, while a statement of another
-- view, holding that view, waits for the guard: a deadlock on each try under a steady write load.
-- A function is not followed by the lock; the planner inlines it, so plans are as with the table.
CREATE FUNCTION _picoemu.guard_buckets(t text) RETURNS SETOF bigint LANGUAGE sql STABLE
  AS $f$ SELECT bucket_id FROM _picoemu.guard WHERE tier = t $f$;
GRANT SELECT ON ALL TABLES IN SCHEMA _picoemu TO PUBLIC;
CREATE SCHEMA _picoemu_local;
CREATE SCHEMA _picoemu_remote;
