-- Strict mode, reads on replicas, and the bucket-move and ownership checks of the storage.

-- Strict mode (Picodata's forward=off): the session setting picoemu.strict wins when set
-- (SET picoemu.strict = on, or options='-c picoemu.strict=on'); else the cluster-wide setting.
-- Versions without forward=off (before 26.2.1) have no strict mode: the setting is ignored there.
CREATE OR REPLACE FUNCTION _picoemu.strict_enabled() RETURNS boolean
LANGUAGE plpgsql STABLE AS $f$
DECLARE s text := current_setting('picoemu.strict', true);
BEGIN
  IF NOT coalesce(current_setting('picoemu.forward', true), 'off')::boolean THEN RETURN false; END IF;
  IF s IS NOT NULL AND s <> '' THEN RETURN s::boolean; END IF;
  RETURN coalesce((SELECT value::boolean FROM _picoemu.setting WHERE key = 'strict'), false);
END $f$;

-- Whether this instance reads its own replicaset's part of a sharded table from its local storage
-- (true), or asks the master of its replicaset through the foreign server picoemu_self (false):
-- * on a standby, only with read_preference replica or any (session setting picoemu.read_preference,
--   default leader), and only on versions whose replicas serve reads (26.1+);
-- * on a master, always, except on versions without local execution (25.5): the read then costs one
--   more hop, to itself.
-- IMMUTABLE on purpose: the planner folds it, so the branch not taken has no scan at all (a foreign
-- scan would connect even when not run). A plan cached in a session keeps the value it was planned
-- with.
CREATE OR REPLACE FUNCTION _picoemu.read_local() RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE pref text := lower(coalesce(nullif(current_setting('picoemu.read_preference', true), ''), 'leader'));
BEGIN
  IF pref NOT IN ('leader', 'replica', 'any') THEN
    RAISE EXCEPTION 'picoemu: invalid read_preference "%" (leader, replica or any)', pref USING ERRCODE = '22023';
  END IF;
  IF pg_is_in_recovery() THEN
    RETURN coalesce(current_setting('picoemu.replica_reads', true), 'off')::boolean AND pref IN ('replica', 'any');
  END IF;
  RETURN coalesce(current_setting('picoemu.local_exec', true), 'on')::boolean;
END $f$;

-- Buckets being moved away from this replicaset (picoemu_transfer.json in the data directory,
-- written by picoemu while it copies them): writes to them are refused as vshard refuses them
-- (TRANSFER_IS_IN_PROGRESS). A file, not a table, so that every transaction sees it at once,
-- whatever its snapshot.
CREATE OR REPLACE FUNCTION _picoemu.check_transfer(tbl text, tier text, b bigint) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $f$
DECLARE dst text;
BEGIN
  IF pg_stat_file('picoemu_transfer.json', true) IS NULL THEN RETURN; END IF;
  SELECT x.dst INTO dst
    FROM json_to_recordset(coalesce(pg_read_file('picoemu_transfer.json', 0, 100000000, true), '[]')::json)
         AS x(tier text, bucket_start bigint, bucket_end bigint, dst text)
   WHERE x.tier = $2 AND $3 BETWEEN x.bucket_start AND x.bucket_end LIMIT 1;
  IF dst IS NOT NULL THEN
    RAISE EXCEPTION 'Bucket % is transferring to replicaset %', b, dst USING ERRCODE = 'XX000',
      DETAIL = format('picoemu: table "%s", instance %s: the bucket is being moved (vshard TRANSFER_IS_IN_PROGRESS)',
                      tbl, current_setting('picoemu.instance')),
      HINT = 'retry on the new owner once the move is published';
  END IF;
END $f$;

CREATE OR REPLACE FUNCTION _picoemu.owner_of(tier text, b bigint) RETURNS text
LANGUAGE sql STABLE AS $f$
  SELECT replicaset_name FROM _picoemu.bucket_range r
   WHERE r.tier = $1 AND $2 BETWEEN r.bucket_start AND r.bucket_end $f$;

CREATE OR REPLACE FUNCTION _picoemu.refuse(tbl text, tier text, b bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
  RAISE EXCEPTION 'picoemu: forward=off: bucket % of table "%" belongs to replicaset %, not to % (instance %)',
    b, tbl, coalesce(_picoemu.owner_of(tier, b), '(none)'), current_setting('picoemu.replicaset'),
    current_setting('picoemu.instance')
    USING ERRCODE = 'PE001', HINT = 'strict mode: send the statement to the master of the owning replicaset';
END $f$;

CREATE OR REPLACE FUNCTION _picoemu.owns(tier text, b bigint) RETURNS boolean
LANGUAGE sql STABLE AS $f$
  SELECT EXISTS (SELECT 1 FROM _picoemu.bucket_range r
                  WHERE r.tier = $1 AND $2 BETWEEN r.bucket_start AND r.bucket_end
                    AND r.replicaset_name = current_setting('picoemu.replicaset')) $f$;
