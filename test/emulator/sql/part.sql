-- A write that spans several replicasets, applied one part at a time.

-- Picodata sends each replicaset's part of a keyless UPDATE/DELETE, or of an INSERT whose rows
-- belong to several replicasets, to that replicaset's master, where it commits on its own: a part
-- that fails leaves the others applied. The front runs such a statement once per part, each run in
-- its own transaction (front/writeparts.py, parts.write_parts), with three session settings:
-- picoemu.part_table (the statement's table), picoemu.part_buckets (an int8multirange: the buckets
-- of this part, those one replicaset owned when the statement was split) and picoemu.part_reads
-- (on: the run reads only the table's rows of those buckets, an UPDATE or DELETE; off: it inserts
-- only the rows of those buckets, an INSERT). Unset or empty: no part, every row.
-- A part is a set of buckets fixed when the statement arrives, not a replicaset: the parts cover
-- every bucket once, so a bucket that moves while they run is still written exactly once (by the
-- part that holds it, at its owner of that moment).

-- The buckets of the run in progress for table tname, or NULL when no part restricts it. The table
-- '*' stands for every table (a read bound to read nothing: parts.NOTHING).
CREATE OR REPLACE FUNCTION _picoemu.part_of(tname text) RETURNS int8multirange
LANGUAGE sql STABLE AS $f$
  SELECT CASE WHEN current_setting('picoemu.part_table', true) IN (tname, '*')
              THEN nullif(current_setting('picoemu.part_buckets', true), '')::int8multirange END $f$;

-- The same for the reads of the table (UPDATE, DELETE), NULL for an INSERT's run or no part.
-- IMMUTABLE on purpose, like _picoemu.asked(): the planner folds it into a constant, so a view
-- branch whose buckets the part excludes has no scan at all (a foreign scan would connect to a
-- stopped master even under a false filter), and the row filter (part_rows @> _bucket) is a plain
-- operator. Every session of the front plans each execution afresh (plan_cache_mode =
-- force_custom_plan), with the settings of that run.
CREATE OR REPLACE FUNCTION _picoemu.part_rows(tname text) RETURNS int8multirange
LANGUAGE plpgsql IMMUTABLE AS $f$
BEGIN
  IF coalesce(current_setting('picoemu.part_reads', true), '') <> 'on' THEN RETURN NULL; END IF;
  RETURN _picoemu.part_of(tname);
END $f$;

-- Whether a view branch holding the buckets `ranges` of table tname takes part in the run.
CREATE OR REPLACE FUNCTION _picoemu.in_part(tname text, ranges int8multirange) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $f$
  SELECT _picoemu.part_rows(tname) IS NULL OR _picoemu.part_rows(tname) && ranges $f$;

-- Whether the INSTEAD OF INSERT trigger of table tname writes a row of bucket b in this run.
-- STABLE, not folded: the trigger's statements are planned once per session.
CREATE OR REPLACE FUNCTION _picoemu.part_has(tname text, b bigint) RETURNS boolean
LANGUAGE sql STABLE AS $f$
  SELECT coalesce(_picoemu.part_of(tname) @> b, true) $f$;
