-- TRUNCATE TABLE through a front. Picodata runs it as DDL: its governor empties a sharded table on
-- every master of the table's tier, a global one on every instance (src/governor/ddl.rs,
-- handle_truncate_table, 26.3.0). The front judges the statement (dialect/), sets the session
-- setting picoemu.truncate to the table's name and sends `TRUNCATE _picoemu.truncate_gate`, whose
-- command tag, `TRUNCATE TABLE`, is the one Picodata answers. The gate holds no row: its BEFORE
-- TRUNCATE trigger empties the table's storage on every replicaset, one storage at a time in the
-- order of the replicasets' names (its own storage in its place, as global writes do), so two
-- coordinators take the storages' locks in the same order. A replicaset without a copy of the table
-- (a sharded table of another tier) is skipped. On a standby the gate cannot be truncated
-- (read-only): send TRUNCATE to a master. No placeholders.

CREATE TABLE _picoemu.truncate_gate (unused int);
CREATE FUNCTION _picoemu.truncate_table() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog AS $f$
DECLARE
  tbl text := coalesce(current_setting('picoemu.truncate', true), '');
  rel text;
  rs record;
BEGIN
  IF tbl = '' OR to_regclass(format('_picoemu_local.%I', tbl)) IS NULL
     OR NOT EXISTS (SELECT 1 FROM public._pico_table WHERE name = tbl) THEN
    RAISE EXCEPTION 'table % does not exist', tbl USING ERRCODE = 'XX000';
  END IF;
  FOR rs IN SELECT name FROM public._pico_replicaset WHERE state <> 'expelled'
            ORDER BY name COLLATE "C" LOOP
    IF rs.name = current_setting('picoemu.replicaset') THEN
      rel := format('_picoemu_local.%I', tbl);
    ELSE
      rel := format('_picoemu_remote.%I', tbl || '__' || rs.name);
      CONTINUE WHEN to_regclass(rel) IS NULL;
    END IF;
    EXECUTE 'TRUNCATE ' || rel;
  END LOOP;
  RETURN NULL;
END $f$;
CREATE TRIGGER picoemu_truncate BEFORE TRUNCATE ON _picoemu.truncate_gate
  FOR EACH STATEMENT EXECUTE FUNCTION _picoemu.truncate_table();
GRANT TRUNCATE ON _picoemu.truncate_gate TO PUBLIC;
