-- Picodata's dialect: every shape the FDW sends, pinned by EXPLAIN VERBOSE (Remote SQL is the
-- statement as sent, bucket filter and OPTION clause included). The map is pushed; no statement
-- below reaches an instance.
-- The map of tier "dt" and explain_v come from the setup suite.
SELECT pr_clear_map();
SELECT pr_push_tier_dt() > 0 AS applied;

-- Options: versions, execution options, limits.
CREATE SERVER d_bad FOREIGN DATA WRAPPER picoroute OPTIONS (picodata_version '24.1');
CREATE SERVER d_bad FOREIGN DATA WRAPPER picoroute OPTIONS (execution_options 'maybe');
CREATE SERVER d_bad FOREIGN DATA WRAPPER picoroute OPTIONS (sql_motion_row_max '-1');
CREATE SERVER d_bad FOREIGN DATA WRAPPER picoroute OPTIONS (sql_vdbe_opcode_max 'lots');
CREATE SERVER d FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'dt');
CREATE SERVER d_m FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'dt', scatter 'masters');
CREATE SERVER d_m21 FOREIGN DATA WRAPPER picoroute
    OPTIONS (tier 'dt', scatter 'masters', picodata_version '26.2.1-rc2');
CREATE SERVER d_off FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'dt', execution_options 'off');
CREATE SERVER d_lim FOREIGN DATA WRAPPER picoroute
    OPTIONS (tier 'dt', sql_motion_row_max '20000', sql_vdbe_opcode_max '100000');
CREATE SERVER d_r FOREIGN DATA WRAPPER picoroute
    OPTIONS (tier 'dt', read_preference 'replica', picodata_version '25.5.10');
CREATE USER MAPPING FOR CURRENT_USER SERVER d OPTIONS (user 'u', password 'p');
CREATE USER MAPPING FOR CURRENT_USER SERVER d_m OPTIONS (user 'u', password 'p');
CREATE USER MAPPING FOR CURRENT_USER SERVER d_m21 OPTIONS (user 'u', password 'p');
CREATE USER MAPPING FOR CURRENT_USER SERVER d_off OPTIONS (user 'u', password 'p');
CREATE USER MAPPING FOR CURRENT_USER SERVER d_lim OPTIONS (user 'u', password 'p');
CREATE USER MAPPING FOR CURRENT_USER SERVER d_r OPTIONS (user 'u', password 'p');
CREATE FOREIGN TABLE d_bad (id bigint) SERVER d OPTIONS (table_name 'a"b');
CREATE FOREIGN TABLE d_bad (id bigint) SERVER d OPTIONS (sharding_key '"a""b"');

CREATE FOREIGN TABLE users (id bigint, name text COLLATE "C", v bigint, f float8,
                            n numeric, ts timestamptz, note text COLLATE "und-x-icu")
    SERVER d OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE kw ("option" bigint, "set" text, "by" bigint, "begin" text, "filter" bigint,
                         "over" text) SERVER d OPTIONS (table_name 'select', sharding_key 'option');
CREATE FOREIGN TABLE fl (f float8, v text) SERVER d OPTIONS (sharding_key 'f');
CREATE FOREIGN TABLE nm (n numeric(10,2), v text) SERVER d OPTIONS (sharding_key 'n');
CREATE FOREIGN TABLE users_m (id bigint, v bigint) SERVER d_m OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE users_m21 (id bigint, v bigint) SERVER d_m21 OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE users_off (id bigint, v bigint) SERVER d_off OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE users_lim (id bigint, v bigint) SERVER d_lim OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE users_tlim (id bigint, v bigint) SERVER d_lim
    OPTIONS (table_name 'users', sharding_key 'id', sql_motion_row_max '0');
CREATE FOREIGN TABLE users_r (id bigint, v bigint) SERVER d_r OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE quoted (id bigint, "x""y" text) SERVER d OPTIONS (sharding_key 'id');

-- Names: always double-quoted (keywords of Picodata that PostgreSQL leaves bare).
SELECT * FROM explain_v($$SELECT "set", "begin" FROM kw WHERE "option" = 7 AND "by" > 2 AND "filter" IS NULL AND "over" = 'x'$$);
SELECT * FROM explain_v($$SELECT * FROM kw WHERE "by" = 1$$);
-- A name with a double quote is refused at first use.
SELECT * FROM explain_v($$SELECT * FROM quoted WHERE id = 1$$);

-- NOT LIKE / NOT ILIKE: Picodata's LIKE has no NOT flag. ILIKE and text ordering only under a
-- byte-order collation ("C"); under another one they stay local.
SELECT * FROM explain_v($$SELECT id FROM users WHERE name NOT LIKE 'a%' AND name NOT ILIKE '%B' AND name > 'm'$$);
SELECT * FROM explain_v($$SELECT id FROM users WHERE note NOT LIKE 'a%' AND note > 'm' AND note = 'x'$$);
SELECT * FROM explain_v($$SELECT id FROM users WHERE name COLLATE "und-x-icu" > 'm'$$);
-- String constants: quotes doubled; a constant with a backslash goes as a parameter, so that it
-- means the same whatever standard_conforming_strings says on either side.
SELECT * FROM explain_v($$SELECT id FROM users WHERE name = 'it''s \ here'$$);

-- Unary minus: (0 - x) for integers and numerics; on doubles evaluated locally.
SELECT * FROM explain_v($$SELECT id FROM users WHERE -v < 0 AND -n > 1 AND -f < 2$$);
SELECT * FROM explain_v($$SELECT id FROM users WHERE v = -5$$);

-- Constants typed as PostgreSQL types them: doubles with an exponent, decimals with their scale.
SELECT * FROM explain_v($$SELECT id FROM users WHERE f = 1.5 AND f < 1e20 AND f > -2 AND n = 3 AND n < 2.50 AND n > -1$$);
SELECT * FROM explain_v($$SELECT id FROM users WHERE f <> 'NaN' AND ts > '2025-02-01 10:00:00+00'$$);
-- Functions, casts and real stay local.
SELECT * FROM explain_v($$SELECT id FROM users WHERE abs(v) = 1 AND v::text = '1' AND f::real = 1$$);
-- Operators Picodata evaluates as PostgreSQL does: || on text, / and % on integers, / on
-- doubles, coalesce over one type; an UPDATE or DELETE with them is one remote statement.
SELECT * FROM explain_v($$UPDATE users SET name = name || 'x', v = v % 3 + v / 7, f = f / 3 WHERE id = 1$$);
SELECT * FROM explain_v($$UPDATE users SET v = coalesce(v, 0) WHERE coalesce(name, '') LIKE 'a%'$$);
SELECT * FROM explain_v($$SELECT id FROM users WHERE v % 2 = 0 AND (name || '!') = 'x!' AND f / 2 > 1$$);
-- Not with PostgreSQL's result (the scale of a numeric division, upper and lower beyond ASCII,
-- round, which Picodata lacks, intervals, || over a number): written row by row.
SELECT * FROM explain_v($$UPDATE users SET n = n / 7 WHERE id = 1$$);
SELECT * FROM explain_v($$UPDATE users SET name = upper(name) WHERE id = 1$$);
SELECT * FROM explain_v($$UPDATE users SET n = round(n, 1), ts = ts + interval '1 day' WHERE id = 1$$);
SELECT * FROM explain_v($$UPDATE users SET name = name || v WHERE id = 1$$);
SELECT * FROM explain_v($$DELETE FROM users WHERE id = 1 AND upper(name) = 'X'$$);

-- Sharding keys of type double and numeric(10,2): hashed as the column stores them.
SELECT picoroute_bucket_id('dt', 1.5::float8) AS f15, picoroute_bucket_id('dt', 1.00::numeric) AS n100,
       picoroute_bucket_id('dt', 1::numeric) AS n1, picoroute_bucket_id('dt', 2.50::numeric) AS n250;
SELECT * FROM explain_v($$SELECT v FROM fl WHERE f = 1.5$$);
SELECT * FROM explain_v($$SELECT v FROM nm WHERE n = 1$$);
SELECT * FROM explain_v($$SELECT v FROM nm WHERE n = 2.5$$);
SELECT * FROM explain_v($$SELECT v FROM nm WHERE n IN (1, 2.5)$$);
-- A value that the column's scale cannot hold exactly is left as it is (no row can match).
SELECT * FROM explain_v($$SELECT v FROM nm WHERE n = 1.005$$);
SET plan_cache_mode = force_generic_plan;
PREPARE pn(numeric) AS SELECT v FROM nm WHERE n = $1;
SELECT * FROM explain_v('EXECUTE pn(1)');
PREPARE pf(float8) AS SELECT v FROM fl WHERE f = $1;
SELECT * FROM explain_v('EXECUTE pf(1.5)');
RESET plan_cache_mode;

-- Execution options. Keyless reads lift the row and instruction limits (Picodata's defaults,
-- 5000 rows and 45000 instructions, would fail a count(*) over a large table); point reads do
-- not need it. Table options override server options; execution_options 'off' sends none.
SELECT * FROM explain_v($$SELECT count(*) FROM users$$);
SELECT * FROM explain_v($$SELECT v FROM users ORDER BY v DESC LIMIT 3$$);
SELECT * FROM explain_v($$SELECT v FROM users OFFSET 2 LIMIT 3$$);
SELECT * FROM explain_v($$SELECT v FROM users WHERE id = 1$$);
SELECT * FROM explain_v($$SELECT v FROM users_lim$$);
SELECT * FROM explain_v($$SELECT v FROM users_lim WHERE id = 1$$);
SELECT * FROM explain_v($$SELECT v FROM users_tlim$$);
SELECT * FROM explain_v($$SELECT v FROM users_off$$);
SELECT * FROM explain_v($$DELETE FROM users WHERE v > 3$$);
SELECT * FROM explain_v($$UPDATE users SET v = -v WHERE id = 3$$);
SELECT * FROM explain_v($$UPDATE nm SET v = 'x' WHERE n = 1$$);

-- INSERT batches never carry more rows than the row limit (5000 unless the table or server
-- says otherwise), nor more than 65535 parameters.
CREATE FOREIGN TABLE big (id bigint, v bigint) SERVER d OPTIONS (sharding_key 'id', batch_size '10000');
CREATE FOREIGN TABLE big_lim (id bigint, v bigint) SERVER d_lim
    OPTIONS (table_name 'big', sharding_key 'id', batch_size '10000', sql_motion_row_max '1000');
EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO big SELECT g, g FROM generate_series(1, 6000) g;
EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO big_lim SELECT g, g FROM generate_series(1, 6000) g;
EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO users_lim SELECT g, g FROM generate_series(1, 6000) g;
DROP FOREIGN TABLE big, big_lim;
-- A global table's rows all go to one coordinator.
CREATE FOREIGN TABLE g_ins (id bigint, v text) SERVER d OPTIONS (distribution 'global');
EXPLAIN (VERBOSE, COSTS OFF) INSERT INTO g_ins VALUES (1, 'a'), (2, 'b');
DROP FOREIGN TABLE g_ins;

-- Scatter: 'masters' only where Picodata restricts a statement by bucket_id (26.2.1-rc2), else a
-- coordinator with a note; never the master that owns no bucket (rs_z).
SELECT * FROM explain_v($$SELECT count(*) FROM users_m$$);
SELECT * FROM explain_v($$SELECT count(*) FROM users_m21$$);
-- read_preference replica: keyless reads through a replica.
SELECT * FROM explain_v($$SELECT count(*) FROM users_r$$);

-- json columns (Picodata map/array/any) cannot take values: refused before sending.
CREATE FOREIGN TABLE js (id bigint, doc json) SERVER d OPTIONS (sharding_key 'id');
INSERT INTO js VALUES (1, '{"a": 1}');

-- The declaration check function refuses what is not a picoroute foreign table.
CREATE TABLE plain_t (id int);
SELECT picoroute_check_foreign_table('plain_t');

DROP TABLE plain_t;
DROP FOREIGN TABLE users, kw, fl, nm, users_m, users_m21, users_off, users_lim, users_tlim,
    users_r, quoted, js;
DROP SERVER d, d_m, d_m21, d_off, d_lim, d_r CASCADE;
