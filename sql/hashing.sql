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

-- picoroute_bucket_id_with_count hashes doubles by Picodata 25.5's rule: cb + IEEE 754 (the rule of
-- 26.1 and later: picoroute_bucket_id_for_version below); 2.0 does not hash like integer 2. A real is
-- widened exactly.
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

------------------------------------------------------------------------------------------------
-- The hashing rule of each Picodata release line (src/core/bucket_hash.h): the lines differ for
-- doubles only. 25.5: cb + IEEE 754. From the 26.1.0 tag on: an integral double in [-2^63, 2^64)
-- as the MessagePack integer it equals, marker included; any other double as its 8 IEEE 754 bytes
-- without the cb header. Integers keep their marker at every release. Every expected value comes
-- from the Python reference (its self-test has the same DOUBLE_EDGES and INTEGER_EDGES).
------------------------------------------------------------------------------------------------
SELECT v, picoroute_bucket_id_for_version('25.5.10', 3000, v) AS "25.5.10",
       picoroute_bucket_id_for_version('26.1.6', 3000, v) AS "26.1.6",
       picoroute_bucket_id_for_version('26.1.6', 3000, v) = b26
         AND picoroute_bucket_id_for_version('26.1.1', 3000, v) = b26
         AND picoroute_bucket_id_for_version('26.2.1-rc1', 3000, v) = b26
         AND picoroute_bucket_id_for_version('26.2.1-rc2', 3000, v) = b26
         AND picoroute_bucket_id_for_version('26.3.0', 3000, v) = b26
         AND picoroute_bucket_id_for_version('25.5.10', 3000, v) = b25
         AND picoroute_bucket_id_for_version('25.5.1', 3000, v) = b25
         AND picoroute_bucket_id_with_count(3000, v) = b25 AS ok
FROM (VALUES (1.5::float8, 632, 510), (-1.5, 618, 1027), (1.0, 2099, 1934), (0.0, 1781, 84),
             ('-0'::float8, 1327, 84), ('NaN', 1936, 2629), ('Infinity', 1721, 418),
             ('-Infinity', 1086, 2251), (1e300, 2568, 2830), (9007199254740992, 2661, 2913),
             (9223372036854775808, 2100, 506), (18446744073709549568, 1201, 16),
             (18446744073709551616, 1917, 845), (-9223372036854775808, 2358, 413),
             (-9223372036854777856, 882, 1357), (127, 1952, 2362), (128, 1644, 1089),
             (255, 2254, 1968), (256, 709, 1052), (65535, 2190, 1488), (65536, 2729, 108),
             (4294967295, 647, 2889), (4294967296, 1396, 2356), (-32, 1934, 1881), (-33, 748, 1728),
             (-128, 2915, 1124), (-129, 387, 344), (-32768, 973, 105), (-32769, 1151, 2910),
             (-2147483648, 1092, 2160), (-2147483649, 2418, 2667)) AS t(v, b25, b26);
-- A real is widened exactly under either rule; an integral double under 26.1's rule hashes like the
-- integer it equals, in every width.
SELECT picoroute_bucket_id_for_version('26.1.6', 3000, 1.5::float4) AS "real 1.5 -> 510",
       picoroute_bucket_id_for_version('25.5.10', 3000, 1.5::float4) AS "real 1.5 -> 632",
       bool_and(picoroute_bucket_id_for_version('26.3.0', 3000, i::float8)
                = picoroute_bucket_id_for_version('26.3.0', 3000, i)) AS "26.1: double = integer"
FROM (VALUES (0::bigint), (-1), (127), (128), (-33), (-129), (65536), (-32769), (4294967296),
             (-2147483649), (-9223372036854775808)) AS t(i);
-- Integers: the same bucket under every rule (the marker stays; -2^63 -> 413 is Picodata's own
-- test/int/sql/insert.sql:83 at every release).
SELECT v, b, bool_and(picoroute_bucket_id_for_version(version, 3000, v) = b) AS ok
FROM (VALUES (127::bigint, 2362), (128, 1089), (255, 1968), (256, 1052), (65535, 1488),
             (65536, 108), (4294967295, 2889), (4294967296, 2356), (-32, 1881), (-33, 1728),
             (-128, 1124), (-129, 344), (-32768, 105), (-32769, 2910), (-2147483648, 2160),
             (-2147483649, 2667), (-9223372036854775808, 413), (9223372036854775807, 246)) AS t(v, b),
     (VALUES ('25.5.10'), ('26.1.6'), ('26.2.1-rc2'), ('26.3.0')) AS r(version)
GROUP BY v, b ORDER BY v;
-- Picodata's own buckets at its release tags (test/unit/bucket_hash_rules_test.cpp cites where):
-- integer, (text, integer), decimal and (on the 25.5 line) double keys.
SELECT picoroute_bucket_id_for_version('26.3.0', 3000, 43) AS "43 -> 214",
       picoroute_bucket_id_for_version('26.1.1', 3000, '1'::text, 1) AS "('1', 1) -> 898",
       picoroute_bucket_id_for_version('26.3.0', 3000, 'kek'::text, 42) AS "('kek', 42) -> 2873",
       picoroute_bucket_id_for_version('26.3.0', 3000, 1.0::numeric) AS "1.0::decimal -> 712",
       picoroute_bucket_id_for_version('25.5.10', 3000, 1::float8) AS "1::double -> 2099";
-- The version as Picodata reports it; a NULL version, count or key array gives NULL.
SELECT picoroute_bucket_id_for_version('picodata 26.1.1', 3000, 1.5::float8) AS "510",
       picoroute_bucket_id_for_version('26.2.1rc1', 3000, 1.5::float8) AS "510 too",
       picoroute_bucket_id_for_version('25.5', 3000, 1.5::float8) AS "632",
       picoroute_bucket_id_for_version(NULL, 3000, 1) IS NULL AS "NULL version",
       picoroute_bucket_id_for_version('26.1.6', NULL, 1) IS NULL AS "NULL count",
       picoroute_bucket_id_for_version('26.1.6', 3000, VARIADIC NULL::int[]) IS NULL AS "NULL array";
SELECT picoroute_bucket_id_for_version('latest', 3000, 1);
SELECT statement, pr_try(statement) AS error FROM (VALUES
    ($$SELECT picoroute_bucket_id_for_version('26.1', 0, 1)$$),
    ($$SELECT picoroute_bucket_id_for_version('', 3000, 1)$$),
    ($$SELECT picoroute_bucket_id_for_version('26.1', 3000, current_date)$$)) AS t(statement);

-- picoroute_bucket_id and picoroute_route hash by the cluster's detected version (the lowest an
-- online instance reports), the newest rule while none is detected, as the FDW assumes.
SELECT pr_clear_map();
SELECT picoroute_apply_events('[
  {"op": "replace", "map": "tier", "name": "default", "bucket_count": 3000},
  {"op": "replace", "map": "replicaset", "replicaset_uuid": "hv-r", "name": "hv_r", "tier": "default", "current_master_uuid": "hv-i1"},
  {"op": "replace", "map": "instance", "instance_uuid": "hv-i1", "name": "hv_i1", "replicaset_uuid": "hv-r", "current_state": "Online", "address": "192.0.2.31:4327"},
  {"op": "replace", "map": "bucket", "tier": "default", "state": "active", "bucket_id": {"start": 1, "end": 3000}, "current_replicaset_uuid": "hv-r"}
]') > 0 AS applied;
SELECT coalesce(picodata_version, 'none') AS detected, picoroute_bucket_id('default', 1.5::float8) AS "1.5",
       picoroute_bucket_id('default', 1.0::float8) AS "1.0",
       (picoroute_route('default', 1.5::float8)).bucket_id AS route
FROM picoroute_status;
SELECT picoroute_apply_events('{"op": "replace", "map": "instance", "instance_uuid": "hv-i1", "name": "hv_i1", "replicaset_uuid": "hv-r", "current_state": "Online", "address": "192.0.2.31:4327", "picodata_version": "25.5.10"}');
SELECT picodata_version AS detected, picoroute_bucket_id('default', 1.5::float8) AS "1.5",
       picoroute_bucket_id('default', 1.0::float8) AS "1.0",
       (picoroute_route('default', 1.5::float8)).bucket_id AS route
FROM picoroute_status;
-- The lowest online version counts: a 26.3.0 instance beside the 25.5.10 one changes nothing
-- until the older one is gone.
SELECT picoroute_apply_events('{"op": "replace", "map": "instance", "instance_uuid": "hv-i2", "name": "hv_i2", "replicaset_uuid": "hv-r", "current_state": "Online", "address": "192.0.2.32:4327", "picodata_version": "26.3.0"}');
SELECT picodata_version AS detected, picoroute_bucket_id('default', 1.5::float8) AS "1.5" FROM picoroute_status;
SELECT picoroute_apply_events('{"op": "delete", "map": "instance", "instance_uuid": "hv-i1"}');
SELECT picodata_version AS detected, picoroute_bucket_id('default', 1.5::float8) AS "1.5",
       picoroute_bucket_id('default', 1.0::float8) AS "1.0",
       (picoroute_route('default', 1.5::float8)).bucket_id AS route,
       picoroute_bucket_id('default', -9223372036854775808) AS "int -2^63"
FROM picoroute_status;
SELECT pr_clear_map();
