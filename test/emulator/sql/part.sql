-- A write that spans several replicasets, applied one replicaset at a time.

-- Picodata sends each replicaset's part of a keyless UPDATE/DELETE, or of an INSERT whose rows
-- belong to several replicasets, to that replicaset's master, where it commits on its own: a part
-- that fails leaves the others applied. The front runs such a statement once per replicaset, each
-- run in its own transaction, with the session setting picoemu.part naming the replicaset whose
-- rows the run may touch (emu_front.py, write_parts). Unset or empty: every replicaset.
-- IMMUTABLE on purpose, like _picoemu.asked(): the planner folds it, so the branches of the view
-- that belong to other replicasets have no scan at all (a foreign scan would connect to a stopped
-- master even under a false filter). Every session of the front plans each execution afresh
-- (plan_cache_mode = force_custom_plan), with the setting of that run.
CREATE OR REPLACE FUNCTION _picoemu.in_part(rs text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE p text := current_setting('picoemu.part', true);
BEGIN
  RETURN p IS NULL OR p = '' OR p = rs;
END $f$;
