-- picoroute: declarations of foreign tables checked against the cluster (appended to the
-- extension script).

CREATE FUNCTION picoroute_check_foreign_table(foreign_table regclass)
RETURNS boolean
AS 'MODULE_PATHNAME', 'picoroute_check_foreign_table'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION picoroute_check_foreign_table(regclass) IS
'Compares a picoroute foreign table with its row of Picodata''s _pico_table: distribution, tier '
'(the server''s tier option), sharding key (names and order) and key column types. Returns true '
'when they agree; raises an error naming the column, what the cluster has and what to change '
'otherwise (a warning for a key type that hashes the same but is narrower). The same check runs '
'at the first use of a table in a session.';
