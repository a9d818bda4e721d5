-- INSTEAD OF trigger of a global table's view: writes every row to the storage of every replicaset.
-- Placeholders (SQL, built by the caller): {{fn}} the function's name, {{name}} the view,
-- {{ins}}, {{upd}}, {{dele}} the statements that insert, update, delete at every replicaset.

CREATE OR REPLACE FUNCTION _picoemu.{{fn}}() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public AS $f$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {{ins}}
    RETURN NEW;
  ELSIF TG_OP = 'UPDATE' THEN
    {{upd}}
    RETURN NEW;
  END IF;
  {{dele}}
  RETURN OLD;
END $f$;
CREATE TRIGGER picoemu_route INSTEAD OF INSERT OR UPDATE OR DELETE ON public.{{name}}
  FOR EACH ROW EXECUTE FUNCTION _picoemu.{{fn}}();
