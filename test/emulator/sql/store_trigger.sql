-- Storage trigger of a sharded table on a master: computes bucket_id, refuses rows of buckets this
-- replicaset does not own, and makes a write to a bucket being moved away wait for the move
-- (check_transfer, in strict.sql).
-- Placeholders (SQL, quoted by the caller): {{fn}} the function's name, {{local}} the storage
-- table, {{tname}} the table's name and {{tier}} its tier (string literals), {{hash}} the bucket
-- of NEW (an expression).

CREATE OR REPLACE FUNCTION _picoemu.{{fn}}() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE nb bigint;
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM _picoemu.check_transfer({{tname}}, {{tier}}, OLD.bucket_id);
    RETURN OLD;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    PERFORM _picoemu.check_transfer({{tname}}, {{tier}}, OLD.bucket_id);
  END IF;
  nb := {{hash}};
  IF NEW.bucket_id IS NULL THEN NEW.bucket_id := nb;
  ELSIF NEW.bucket_id <> nb THEN
    RAISE EXCEPTION 'picoemu: row of table "%" has bucket_id % but its sharding key hashes to bucket %', {{tname}}, NEW.bucket_id, nb;
  END IF;
  PERFORM _picoemu.check_transfer({{tname}}, {{tier}}, nb);
  IF NOT _picoemu.owns({{tier}}, nb) THEN
    RAISE EXCEPTION 'picoemu: instance % (replicaset %) does not own bucket % of tier %: refusing to store a row of table "%" (owner: %)',
      current_setting('picoemu.instance'), current_setting('picoemu.replicaset'), nb, {{tier}}, {{tname}},
      coalesce(_picoemu.owner_of({{tier}}, nb), '(none)') USING ERRCODE = 'PE002';
  END IF;
  RETURN NEW;
END $f$;
DROP TRIGGER IF EXISTS picoemu_store ON {{local}};
CREATE TRIGGER picoemu_store BEFORE INSERT OR UPDATE OR DELETE ON {{local}} FOR EACH ROW EXECUTE FUNCTION _picoemu.{{fn}}();
