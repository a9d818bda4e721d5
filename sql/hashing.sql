-- Bucket ids computed as Picodata computes them. Every expected value below comes from the
-- independent Python reference (test/tools/bucket_hash_reference.py), and the first three are the
-- examples verified against Picodata itself (facts, section 3).

-- Verified against Picodata, bucket_count 3000.
SELECT picoroute_bucket_id_with_count(3000, 1) AS "1 -> 1934",
       picoroute_bucket_id_with_count(3000, 'lol'::text, 5) AS "('lol', 5) -> 442",
       picoroute_bucket_id_with_count(3000, 1::numeric) AS "1::numeric -> 2135";

-- Integers: every width hashes as the same MessagePack integer, in its most compact form.
SELECT picoroute_bucket_id_with_count(3000, 1::smallint) AS int2,
       picoroute_bucket_id_with_count(3000, 1::integer) AS int4,
       picoroute_bucket_id_with_count(3000, 1::bigint) AS int8;
SELECT v, picoroute_bucket_id_with_count(3000, v) AS bucket, expected, picoroute_bucket_id_with_count(3000, v) = expected AS ok
FROM (VALUES (0::bigint, 84), (127, 2362), (128, 1089), (255, 1968), (256, 1052), (65535, 1488),
             (65536, 108), (4294967296, 2356), (-32, 1881), (-33, 1728),
             (-9223372036854775808, 413)) AS t(v, expected)
ORDER BY v;
SELECT picoroute_bucket_id_with_count(3000, 2::smallint) AS "2 -> 1410",
       picoroute_bucket_id_with_count(3000, 127::smallint) AS "127 -> 2362";

-- Text types: raw bytes. character(n) ignores its trailing blanks, like PostgreSQL comparisons;
-- an untyped literal hashes as text.
SELECT picoroute_bucket_id_with_count(3000, 'lol'::text) AS text,
       picoroute_bucket_id_with_count(3000, 'lol'::varchar(10)) AS varchar,
       picoroute_bucket_id_with_count(3000, 'lol'::name) AS name,
       picoroute_bucket_id_with_count(3000, 'lol'::char(6)) AS bpchar,
       picoroute_bucket_id_with_count(3000, 'lol') AS unknown_literal,
       2196 AS expected;
SELECT picoroute_bucket_id_with_count(3000, ''::text) AS "'' -> 563",
       picoroute_bucket_id_with_count(3000, 'lol', 5) AS "untyped ('lol', 5) -> 442";

-- Booleans.
SELECT picoroute_bucket_id_with_count(3000, true) AS "true -> 2131",
       picoroute_bucket_id_with_count(3000, false) AS "false -> 757";

-- Doubles by Picodata 25.5's rule (up to 26.1.0), which the SQL functions keep for now: cb + IEEE 754;
-- 2.0 does not hash like integer 2 (from 26.1.1 Picodata hashes it like 2). A real is widened exactly.
SELECT picoroute_bucket_id_with_count(3000, 1.5::float8) AS "1.5 -> 632",
       picoroute_bucket_id_with_count(3000, 1.5::float4) AS "real 1.5 -> 632",
       picoroute_bucket_id_with_count(3000, 2.0::float8) AS "2.0 -> 482",
       picoroute_bucket_id_with_count(3000, 2) AS "int 2 -> 1410";

-- Decimals keep their scale: 1 and 1.0 differ.
SELECT picoroute_bucket_id_with_count(3000, 1::numeric) AS "1 -> 2135",
       picoroute_bucket_id_with_count(3000, 1.0::numeric) AS "1.0 -> 712",
       picoroute_bucket_id_with_count(3000, -12.340::numeric) AS "-12.340 -> 1891",
       picoroute_bucket_id_with_count(3000, 0::numeric) AS "0 -> 2785";

-- uuid.
SELECT picoroute_bucket_id_with_count(3000, '123e4567-e89b-12d3-a456-426614174000'::uuid)
       AS "uuid -> 2731";

-- timestamptz: Picodata datetime, seconds since 1970 and nanoseconds (UTC); before 2000 the
-- PostgreSQL value is negative and the sub-second part must still come out positive.
SELECT picoroute_bucket_id_with_count(3000, '1970-01-01 00:00:00+00'::timestamptz) AS "epoch -> 2751",
       picoroute_bucket_id_with_count(3000, '2000-01-01 00:00:00.5+00'::timestamptz) AS "2000 + 0.5 s -> 327",
       picoroute_bucket_id_with_count(3000, '1969-12-31 23:59:59.25+00'::timestamptz) AS "1970 - 0.75 s -> 900",
       picoroute_bucket_id_with_count(3000, '2024-05-01 12:00:00+03'::timestamptz) AS "2024-05-01 09:00 UTC -> 1613",
       picoroute_bucket_id_with_count(3000, '1900-01-01 00:00:00.000001+00'::timestamptz) AS "1900 + 1 us -> 2837";

-- NULL key parts hash as nil (c0); a NULL bucket_count gives NULL.
SELECT picoroute_bucket_id_with_count(3000, NULL::integer) AS "NULL -> 1638",
       picoroute_bucket_id_with_count(3000, NULL) AS "untyped NULL -> 1638",
       picoroute_bucket_id_with_count(3000, 1, NULL::text) AS "(1, NULL) -> 2541",
       picoroute_bucket_id_with_count(NULL, 1) IS NULL AS "NULL count -> NULL";

-- Composite keys, in key order.
SELECT picoroute_bucket_id_with_count(3000, 'a'::text, 1, true, 2.5::numeric, NULL::uuid)
       AS "('a', 1, true, 2.5, NULL) -> 1127";
SELECT picoroute_bucket_id_with_count(1, 'lol', 5) AS "count 1 -> 1",
       picoroute_bucket_id_with_count(16, 'lol', 5) AS "count 16 -> 10";

-- An explicit VARIADIC array: its elements are the key parts.
SELECT picoroute_bucket_id_with_count(3000, VARIADIC ARRAY[1]) AS "[1] -> 1934",
       picoroute_bucket_id_with_count(3000, VARIADIC ARRAY[1, NULL]) AS "[1, NULL] -> 2541",
       picoroute_bucket_id_with_count(3000, VARIADIC ARRAY['lol'::text]) AS "['lol'] -> 2196",
       picoroute_bucket_id_with_count(3000, VARIADIC NULL::int[]) IS NULL AS "NULL array -> NULL";

-- A domain hashes as its base type.
CREATE DOMAIN pr_account_id AS bigint CHECK (VALUE > 0);
SELECT picoroute_bucket_id_with_count(3000, 1::pr_account_id) AS "domain 1 -> 1934",
       picoroute_bucket_id_with_count(3000, VARIADIC ARRAY[1::pr_account_id]) AS "domain [1] -> 1934";
DROP DOMAIN pr_account_id;

-- As a table expression, and used to compute a column.
CREATE TABLE pr_keys (id integer, name text);
INSERT INTO pr_keys VALUES (1, 'lol'), (5, NULL), (128, 'x');
SELECT id, name, picoroute_bucket_id_with_count(3000, id) AS by_id,
       picoroute_bucket_id_with_count(3000, name, id) AS by_name_id
FROM pr_keys ORDER BY id;
DROP TABLE pr_keys;

-- Errors. bucket_count must be positive.
SELECT picoroute_bucket_id_with_count(0, 1);
SELECT picoroute_bucket_id_with_count(-5, 1);
-- Types Picodata cannot hash are named, with the supported ones.
SELECT picoroute_bucket_id_with_count(3000, '2024-01-01'::date);
SELECT picoroute_bucket_id_with_count(3000, 1, '2024-01-01 00:00'::timestamp);
SELECT picoroute_bucket_id_with_count(3000, '{"a": 1}'::jsonb);
SELECT picoroute_bucket_id_with_count(3000, ARRAY[1, 2]);
SELECT picoroute_bucket_id_with_count(3000, VARIADIC ARRAY['2024-01-01'::date]);
-- Values Picodata cannot represent.
SELECT picoroute_bucket_id_with_count(3000, 'NaN'::numeric);
SELECT picoroute_bucket_id_with_count(3000, 'Infinity'::numeric);
SELECT picoroute_bucket_id_with_count(3000, 'infinity'::timestamptz);
SELECT picoroute_bucket_id_with_count(3000, '123456789012345678901234567890123456789'::numeric);
SELECT picoroute_bucket_id_with_count(3000, VARIADIC '{}'::int[]);
-- The SQLSTATE of each.
SELECT statement, pr_try(statement) AS error FROM (VALUES
    ('SELECT picoroute_bucket_id_with_count(0, 1)'),
    ('SELECT picoroute_bucket_id_with_count(3000, current_date)'),
    ('SELECT picoroute_bucket_id_with_count(3000, ''NaN''::numeric)'),
    ('SELECT picoroute_bucket_id_with_count(3000, ''-infinity''::timestamptz)'),
    ('SELECT picoroute_bucket_id_with_count(3000, 1e40::numeric)'),
    ('SELECT picoroute_bucket_id_with_count(3000, VARIADIC ''{}''::int[])'),
    ('SELECT picoroute_bucket_id(''nope'', 1)')) AS t(statement);

SELECT picoroute_bucket_id(NULL, 1) IS NULL AS "NULL tier -> NULL";
