\echo Use "ALTER EXTENSION picoroute UPDATE" to load this file. \quit

-- picoroute 0.1 -> 0.2 (run by ALTER EXTENSION picoroute UPDATE TO '0.2').
--
-- Every change to the SQL surface made in 0.2 goes BOTH into its part under src/sql/ (what a fresh
-- CREATE EXTENSION runs) AND into this file (what an installation of 0.1 runs to reach 0.2):
--   a new function or view:        the same CREATE statement, its COMMENT and its GRANT/REVOKE;
--   a changed function:             CREATE OR REPLACE (or DROP and CREATE when its result type
--                                   changes), and the new COMMENT;
--   a removed object:               DROP ...;
--   changed privileges or comment:  the GRANT/REVOKE or COMMENT.
-- The pg_regress suite `upgrade` compares an installation updated through this file with a fresh
-- one (objects, signatures, attributes, definitions, privileges, comments) and fails with the
-- difference when one is forgotten.
--
-- 0.2 changed the packaging only (install-script layout, versioned scripts, Debian package, PGXN
-- metadata); its SQL objects are those of 0.1. Changes to the SQL surface made in 0.2 follow here.
