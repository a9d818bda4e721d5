-- _pico_bucket(tier): Picodata's bucket map function (25.5.2+), from the catalog file.

CREATE OR REPLACE FUNCTION public._pico_bucket(tier text) RETURNS json
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $f$
DECLARE r text; doc json := _picoemu.catalog_file();
BEGIN
  IF $1 IS NULL THEN RAISE EXCEPTION '_pico_bucket: tier name is null'; END IF;
  IF NOT EXISTS (SELECT 1 FROM json_array_elements(doc -> '_pico_tier') t WHERE t ->> 'name' = $1) THEN
    RAISE EXCEPTION '_pico_bucket: tier ''%'' doesn''t exist', $1;
  END IF;
  SELECT '[' || coalesce(string_agg(format(
      '{"bucket_id_start":%s,"bucket_id_end":%s,"current_replicaset_uuid":%s,'
      '"target_replicaset_uuid":%s,"tier_name":%s,"state":"active"}',
      b.bucket_start, b.bucket_end, to_json(b.replicaset_uuid), to_json(b.replicaset_uuid),
      to_json(b.tier)), ',' ORDER BY b.bucket_start), '') || ']'
    INTO r FROM json_to_recordset(doc -> 'buckets')
                AS b(tier text, bucket_start bigint, bucket_end bigint, replicaset_uuid text)
   WHERE b.tier = $1;
  RETURN r::json;
END $f$;
GRANT EXECUTE ON FUNCTION public._pico_bucket(text) TO PUBLIC;
