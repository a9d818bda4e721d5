-- picoroute: routing that verifies itself (appended to the extension script). Before keyed
-- statements of a foreign table are routed by the bucket picoroute computes, the cluster is asked
-- to EXPLAIN a statement fixing a sample key, and the buckets are compared; the verdicts are shared
-- by every session (picoroute.route_check, picoroute.max_route_checks).

CREATE FUNCTION picoroute_route_check_rows(OUT database text, OUT foreign_table text,
                                           OUT key_types text, OUT picodata_version text,
                                           OUT hash_rule text, OUT state text, OUT sample text,
                                           OUT picoroute_bucket integer,
                                           OUT picodata_bucket integer, OUT detail text,
                                           OUT checked_at timestamptz,
                                           OUT next_check timestamptz, OUT attempts integer)
RETURNS SETOF record
AS 'MODULE_PATHNAME', 'picoroute_route_check_rows'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION picoroute_route_check_rows() IS
'The verdicts of the route check (behind the view picoroute_route_checks).';

CREATE VIEW picoroute_route_checks AS
    SELECT * FROM picoroute_route_check_rows();

COMMENT ON VIEW picoroute_route_checks IS
'One row per foreign table, key types (the Picodata types of the sharding-key values routed), '
'detected Picodata version and hashing rule (25.5 or 26.1) that picoroute checked its bucket '
'for: state pending (being checked), agreed, disagreed (its keyed statements go through a '
'coordinator) or unknown '
'(the check could not conclude; retried at next_check), the sample key asked about, picoroute''s '
'and Picodata''s bucket of it, Picodata''s buckets line or why the check did not conclude, and '
'when it was checked. Shared by every database of the server.';

GRANT SELECT ON picoroute_route_checks TO PUBLIC;
