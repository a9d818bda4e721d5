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

-- Where this instance reads its own replicaset's part of a sharded table: 'local' (its storage),
-- 'self' (its master, through the foreign server picoemu_self) or 'replica' (a replica of its
-- replicaset, through picoemu_replica). The read preference: the session's picoemu.read_preference
-- (a startup option or a statement's OPTION, set by the front), else the cluster's setting
-- (picoemu set read_preference: _picoemu.setting, as Picodata's session takes ALTER SYSTEM's value,
-- src/pgproto/backend.rs:110-113 at 26.1.1), else leader.
-- * on a standby: 'local' with replica or any on versions whose replicas serve reads (26.1+),
--   else 'self' (its master answers);
-- * on a master: 'self' on versions without local execution (25.5: one more hop, to itself);
--   'replica' with replica on versions whose replicas serve reads (Picodata's local path runs a
--   read at the master for leader and any only, local_dispatch_matches_read_preference in
--   src/sql/dispatch.rs:881-898 at 26.1.1; for replica it sends the read to a replica, vshard's
--   callbre with force_replica in one_step_dispatch, src/sql/dispatch.lua:316-322); else 'local'.
-- IMMUTABLE on purpose: the planner folds it, so the branches not taken have no scan at all (a
-- foreign scan would connect even when not run). A plan cached in a session keeps the value it
-- was planned with.
CREATE OR REPLACE FUNCTION _picoemu.read_part() RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE pref text := lower(coalesce(nullif(current_setting('picoemu.read_preference', true), ''),
                                    (SELECT value FROM _picoemu.setting WHERE key = 'read_preference'),
                                    'leader'));
        replicas boolean := coalesce(current_setting('picoemu.replica_reads', true), 'off')::boolean;
BEGIN
  IF pref NOT IN ('leader', 'replica', 'any') THEN
    RAISE EXCEPTION 'picoemu: invalid read_preference "%" (leader, replica or any)', pref USING ERRCODE = '22023';
  END IF;
  IF pg_is_in_recovery() THEN
    RETURN CASE WHEN replicas AND pref IN ('replica', 'any') THEN 'local' ELSE 'self' END;
  END IF;
  IF NOT coalesce(current_setting('picoemu.local_exec', true), 'on')::boolean THEN RETURN 'self'; END IF;
  IF NOT (replicas AND pref = 'replica') THEN RETURN 'local'; END IF;
  -- the replica: the foreign server picoemu_replica exists only where the replicaset has one
  IF NOT EXISTS (SELECT 1 FROM pg_foreign_server WHERE srvname = 'picoemu_replica') THEN
    RAISE EXCEPTION 'picoemu: read_preference replica: replicaset % has no replica to read from',
      current_setting('picoemu.replicaset') USING ERRCODE = 'PE005';
  END IF;
  RETURN 'replica';
END $f$;

-- Buckets in flight from this replicaset: picoemu_transfer.json in the data directory, written by
-- picoemu while it moves them (each entry: tier, bucket range, destination, and the move's phase,
-- "copy" then "publish"). A file, not a table, so that every transaction sees it at once, whatever
-- its snapshot.
-- Picodata never refuses a statement for a bucket in flight: its storage reference waits for the
-- move (vshard storage/ref.lua ref_add, at the commit 25.5.10 pins). So a write of such a bucket
-- waits here, polling the file every 10 ms:
-- * while the move copies (phase "copy"), until the move needs a lock this statement holds (the
--   copy's SHARE lock, the views' rebuild, the delete at the old owner: a backend of picoemu on this
--   server waiting for this one, directly or behind other waiters), and at most 5 s; other
--   statements waiting for its locks wait with it (on Picodata every statement of the storage waits
--   for the move);
-- * once the move publishes its map (phase "publish"), 50 ms: a coordinator on another server may
--   then wait for this statement's locks there, which this server cannot see;
-- * until the file no longer lists the bucket (the move is done).
-- It then raises PE004: the statement's implicit transaction is rolled back, and the front runs it
-- again (front/rerun.py, MOVE_STATES), now through the new map. The message is the one the client gets
-- when the front gives up (after 60 s): Picodata's for a storage reference that timed out
-- (src/sql.rs:2709 proc_sql_execute_impl; src/sql/lua.rs:647-661 and :733-742 VshardError, a
-- ProcLua box error that tarantool's Error writes "box error: ProcLua: ..." (tarantool/tarantool/src/
-- error.rs:48); all @25.5.10, the same through 26.2.1-rc2), behind the "sbroad: " of the coordinator
-- that dispatched the statement (src/traft/error.rs:139@25.5.10; the wrappers between are not
-- reproduced).
CREATE OR REPLACE FUNCTION _picoemu.check_transfer(tbl text, tier text, b bigint) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $f$
DECLARE dst text; phase text; t0 timestamptz; waited interval; why text;
BEGIN
  IF pg_stat_file('picoemu_transfer.json', true) IS NULL THEN RETURN; END IF;
  LOOP
    SELECT x.dst, coalesce(x.phase, 'copy') INTO dst, phase
      FROM json_to_recordset(coalesce(pg_read_file('picoemu_transfer.json', 0, 100000000, true), '[]')::json)
           AS x(tier text, bucket_start bigint, bucket_end bigint, dst text, phase text)
     WHERE x.tier = $2 AND $3 BETWEEN x.bucket_start AND x.bucket_end LIMIT 1;
    IF t0 IS NULL THEN
      IF dst IS NULL THEN RETURN; END IF;
      t0 := clock_timestamp();
    END IF;
    waited := clock_timestamp() - t0;
    PERFORM pg_stat_clear_snapshot();  -- else pg_stat_activity is read once per transaction
    IF dst IS NULL THEN why := 'the move is done';
    ELSIF phase = 'publish' AND waited >= interval '50 ms' THEN why := 'the move publishes its map';
    ELSIF waited >= interval '5 s' THEN why := 'waited 5 s';
    ELSIF EXISTS (WITH RECURSIVE blocked(pid) AS (
                     SELECT w.pid FROM pg_locks w
                      WHERE NOT w.granted AND pg_backend_pid() = ANY (pg_blocking_pids(w.pid))
                     UNION
                     SELECT w.pid FROM pg_locks w JOIN blocked k ON k.pid = ANY (pg_blocking_pids(w.pid))
                      WHERE NOT w.granted)
                   SELECT 1 FROM blocked k JOIN pg_stat_activity a ON a.pid = k.pid
                    WHERE a.application_name = 'picoemu') THEN
      why := 'the move waits for this statement''s locks';
    END IF;
    IF why IS NOT NULL THEN
      RAISE EXCEPTION 'sbroad: Failed to add a storage reference: box error: ProcLua: vshard error: Timeout exceeded (type: ClientError, code: 78, name: TIMEOUT)'
        USING ERRCODE = 'PE004',
        DETAIL = format('picoemu: bucket %s of table "%s" was in flight at instance %s (%s after %s ms): '
                        'the statement runs again', b, tbl, current_setting('picoemu.instance'), why,
                        round(extract(epoch FROM waited) * 1000)),
        HINT = 'on a private port there is no front to run it again: run it again yourself';
    END IF;
    PERFORM pg_sleep(0.01);
  END LOOP;
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
