-- INSTEAD OF trigger of a sharded table's view: sends each written row to the storage of the
-- replicaset that owns its bucket (local, or a peer's through its foreign table).
-- Placeholders (SQL, built by the caller): {{fn}} the function's name, {{name}} the view,
-- {{hash}} the bucket of NEW, {{old_case}}, {{new_case}} the owner of OLD's and of the new bucket
-- (CASE expressions), {{old_check}}, {{new_check}} the strict-mode checks of both,
-- {{del_old}}, {{upd}}, {{ins}} IF chains that delete OLD, update, insert NEW at the owner,
-- {{tname}} the table's name (a string literal).

CREATE OR REPLACE FUNCTION _picoemu.{{fn}}() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public AS $f$
DECLARE nb bigint; owner text; old_owner text;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    old_owner := {{old_case}};
    {{old_check}}
  END IF;
  IF TG_OP = 'DELETE' THEN
    {{del_old}}
    RETURN OLD;
  END IF;
  nb := {{hash}};
  IF TG_OP = 'INSERT' AND NEW.bucket_id IS NOT NULL AND NEW.bucket_id <> nb THEN
    RAISE EXCEPTION 'picoemu: bucket_id cannot be inserted: the sharding key of this row hashes to bucket %', nb;
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.bucket_id IS DISTINCT FROM OLD.bucket_id THEN
    RAISE EXCEPTION 'picoemu: bucket_id cannot be updated';
  END IF;
  NEW.bucket_id := nb;
  owner := {{new_case}};
  {{new_check}}
  -- a statement run one part at a time (part.sql): a row of another part's buckets is not this run's
  IF TG_OP = 'INSERT' AND NOT _picoemu.part_has({{tname}}, nb) THEN
    RETURN NULL;
  END IF;
  IF TG_OP = 'INSERT' THEN
    {{ins}}
  ELSIF owner = old_owner AND NEW.bucket_id = OLD.bucket_id THEN
    {{upd}}
  ELSE
    {{del_old}}
    {{ins}}
  END IF;
  RETURN NEW;
END $f$;
CREATE TRIGGER picoemu_route INSTEAD OF INSERT OR UPDATE OR DELETE ON public.{{name}}
  FOR EACH ROW EXECUTE FUNCTION _picoemu.{{fn}}();
