#!/usr/bin/env python3
"""Unit tests of the front's dialect validator (emu_dialect): every row of the facts document's
section 1 is refused and its accepted equivalent accepted, the statements picoroute sends today
(FDW deparser, bucket filters, worker catalog queries) are accepted, OPTION names follow the version.

Run: python3 test/emulator/test_emu_dialect.py  (also run by the emulator self-test and test/run_all.sh)
"""

import json
import os
import struct
import sys
import unittest

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

import emu_caps  # noqa: E402
import emu_dialect as d  # noqa: E402
import emu_parts  # noqa: E402
import emu_route  # noqa: E402
import emu_sql  # noqa: E402
import emu_state  # noqa: E402

# The emulated builds, told apart by what they can do (never by name).
ALL = emu_caps.BUILDS
WITH_ARRAYS = [v for v in ALL if d.has_arrays(v)]
NEWEST = emu_caps.DEFAULT_BUILD

# Section 1 of the facts document: (PostgreSQL form refused, rule, accepted equivalent).
SECTION_1 = [
    ("SELECT * FROM t WHERE name NOT LIKE 'x'", "not_like", "SELECT * FROM t WHERE NOT (name LIKE 'x')"),
    ("SELECT * FROM t WHERE name NOT ILIKE 'x'", "not_like", "SELECT * FROM t WHERE NOT (name ILIKE 'x')"),
    ("SELECT (- v) FROM t", "unary_minus", "SELECT (0 - v) FROM t"),
    ("SELECT * FROM t WHERE v = (- $1)", "unary_minus", "SELECT * FROM t WHERE v = (0 - $1)"),
    ("SELECT -v FROM t", "unary_minus", "SELECT -5, -1.5, v FROM t"),
    ("SELECT option FROM t", "keyword_identifier", 'SELECT "option" FROM t'),
    ("SELECT id FROM t WHERE set = 1", "keyword_identifier", 'SELECT id FROM t WHERE "set" = 1'),
    ("INSERT INTO t (id, begin) VALUES (1, 2)", "keyword_identifier", 'INSERT INTO t (id, "begin") VALUES (1, 2)'),
    ("UPDATE t SET filter = 1", "keyword_identifier", 'UPDATE t SET "filter" = 1'),
    ("SELECT by, over FROM t", "keyword_identifier", 'SELECT "by", "over" FROM t'),
    ("SELECT t.option FROM t", "keyword_identifier", 'SELECT t."option" FROM t'),
    ("SELECT a AS values FROM t", "keyword_identifier", 'SELECT a AS "values" FROM t'),
    ("SELECT * FROM myschema.t", "schema", "SELECT * FROM public.t"),
    ("DELETE FROM myschema.t WHERE id = 1", "schema", "DELETE FROM t WHERE id = 1"),
    ("SELECT * FROM _picoemu_local.users", "schema", "SELECT * FROM users"),
    ("SELECT * FROM t LIMIT 5 OFFSET 5", "offset", "SELECT * FROM t LIMIT 10"),
    ("SELECT * FROM t ORDER BY a COLLATE \"C\"", "collate", "SELECT * FROM t ORDER BY a"),
    ("SHOW search_path", "show", None),
    ("SELECT * FROM t WHERE id = ANY(ARRAY[1, 2])", "any_array", "SELECT * FROM t WHERE id IN (1, 2)"),
    ("SELECT * FROM t WHERE id = ANY($1)", "any_array", "SELECT * FROM t WHERE id IN ($1, $2)"),
    ("SELECT * FROM t WHERE id = ANY($1::int8[])", "any_array", "SELECT * FROM t WHERE id IN ($1)"),
]
OPTION_READ_PREFERENCE = "SELECT * FROM t WHERE id = 1 OPTION (read_preference = replica)"

# Other PostgreSQL forms Picodata's grammar does not parse, or PostgreSQL-only statements.
REFUSED = [
    ("DECLARE c CURSOR FOR SELECT 1", "statement"),
    ("FETCH 10 FROM c", "statement"),
    ("COPY t TO STDOUT", "statement"),
    ("START TRANSACTION", "statement"),
    ("BEGIN ISOLATION LEVEL SERIALIZABLE", "statement"),
    ("RESET ALL", "statement"),
    ("LISTEN x", "statement"),
    ("PREPARE p AS SELECT 1", "statement"),
    ("VACUUM t", "statement"),
    ("CREATE TABLE x (id int)", "statement"),
    ("SET picoemu.strict = on", "statement"),
    ("EXPLAIN ANALYZE SELECT 1", "statement"),
    ("SELECT 1; SELECT 2", "multiple_statements"),
    ("SELECT 1 -- comment", "comment"),
    ("SELECT /* c */ 1", "comment"),
    ("SELECT pg_is_in_recovery()", "function"),
    ("SELECT * FROM generate_series(1, 3)", "function"),
    ('SELECT round("d", 1) FROM "t"', "function"),
    ('UPDATE "t" SET "n" = length("name")', "function"),
    ("SELECT pg_catalog.now()", "schema"),
    ("SELECT a.b.c FROM t", "schema"),
    ("SELECT x::timestamptz FROM t", "cast_type"),
    ("SELECT CAST(x AS double precision) FROM t", "cast_type"),
    ("SELECT x::float8 FROM t", "cast_type"),
    ("SELECT * FROM t LIMIT $1", "limit"),
    ("SELECT * FROM t FETCH FIRST 3 ROWS ONLY", "offset"),
    ("INSERT INTO t (a) VALUES (1) RETURNING a", "unsupported_clause"),
    ("SELECT * FROM t FOR UPDATE", "unsupported_clause"),
    ("SELECT * FROM t WHERE a IS DISTINCT FROM b", "unsupported_clause"),
    ("SELECT * FROM t RIGHT JOIN u ON t.a = u.a", "unsupported_clause"),
    ("SELECT a FROM t INTERSECT SELECT a FROM u", "unsupported_clause"),
    ("SELECT * FROM a, b", "comma_join"),
    ("SELECT E'x'", "string"),
    ("SELECT $$x$$", "string"),
    ("SELECT a FROM t WHERE a ~ 'x'", "operator"),
    ("SELECT \"a\"\"b\" FROM t", "identifier"),
    ("SELECT * FROM t OPTION (sql_motion_row_max = 1) LIMIT 1", "option_last"),
    ("SELECT * FROM t OPTION (foo = 1)", "option_name"),
    ("SELECT * FROM t OPTION (sql_motion_row_max = $1)", "option_param"),
    ("SELECT * FROM t OPTION (sql_motion_row_max = lots)", "option_value"),
    ("(SELECT 1)", "statement"),
    ("UPDATE t SET set = (set + 1) WHERE (id = 7)", "keyword_identifier"),  # not a prefix +
]

# What picoroute sends today: src/pg/fdw/deparse.cpp (SELECT/INSERT/UPDATE/DELETE with quoted or
# plain identifiers, parenthesised conditions, LIKE, IN lists, NULL tests, $n parameters),
# src/pg/fdw/routed.cpp (the appended bucket filter), src/core/catalog.h (the worker's catalog
# queries) and src/pg/fdw/import.cpp (IMPORT FOREIGN SCHEMA).
PICOROUTE = [
    'SELECT id, name, v FROM users WHERE ((id = 5)) AND bucket_id = 1934',
    'SELECT "id", "name" FROM "users" WHERE (("id" = $1)) AND bucket_id = 12',
    'SELECT id, name, v FROM users WHERE ((id IN (1, 2, 3))) AND bucket_id IN (1934, 7, 2999)',
    'SELECT id FROM users WHERE bucket_id BETWEEN 1 AND 1500',
    'SELECT id FROM users WHERE (bucket_id BETWEEN 1 AND 10 OR bucket_id BETWEEN 20 AND 30)',
    "SELECT name FROM users WHERE (v > 10) AND (name LIKE 'name_1%')",
    'SELECT a, b, note FROM pairs WHERE ((a = \'lol\')) AND ((b = 5)) AND bucket_id = 442',
    'SELECT id, k, v FROM nk WHERE ((k IS NULL)) AND bucket_id = 1',
    'SELECT id FROM users WHERE (NOT (v = 1)) AND ((id IS NOT NULL) OR (v < 3))',
    'SELECT id FROM users WHERE ((v + 1) * 2 = $1) AND (v - 3 > -5)',
    'SELECT NULL FROM users',
    'INSERT INTO users (id, name, v) VALUES ($1, $2, $3)',
    'INSERT INTO users (id, name, v) VALUES ($1, $2, $3), ($4, $5, $6), ($7, $8, $9)',
    'UPDATE users SET v = $1 WHERE ((id = $2)) AND bucket_id = 1934',
    'UPDATE users SET name = $1, v = $2 WHERE ((id = 7))',
    'DELETE FROM users WHERE ((id = 5)) AND bucket_id = 1934',
    "DELETE FROM users WHERE ((name = 'batch'))",
    'SELECT * FROM _pico_instance',
    'SELECT raft_id, address, connection_type FROM _pico_peer_address',
    'SELECT name, uuid, current_master_name, tier, state FROM _pico_replicaset',
    'SELECT * FROM _pico_tier',
    'SELECT _pico_bucket($1)',
    'SELECT * FROM _pico_bucket($1)',
    'SELECT "name", "distribution", "format" FROM "_pico_table"',
    'SELECT count(*) FROM users WHERE id = 1',
    'SELECT 1',
    'SELECT 1/0',
    'BEGIN', 'COMMIT', 'ROLLBACK', 'end;',
    'SELECT * FROM users WHERE id IN (1, 2) OPTION (sql_motion_row_max = 0, sql_vdbe_opcode_max = 100000)',
    'TRUNCATE TABLE "users"',
]

# Accepted everywhere (the facts document, section 1, "Accepted everywhere").
ACCEPTED = [
    "SELECT a FROM t WHERE a <> 1 AND b != 2 AND c <= 3 AND d >= 4 AND e < 5 AND f > 6",
    "SELECT a FROM t WHERE a NOT IN (1, 2) AND b NOT BETWEEN 1 AND 2 AND c IS NOT NULL",
    "SELECT CAST(a AS int), b::text, c::numeric(10, 2), d::double, e::varchar(3) FROM t",
    "SELECT coalesce(a, 0), lower(b), upper(c), abs(d), substr(e, 1, 2) FROM t",
    "SELECT a, count(*), sum(b), avg(c), min(d), max(e), count(DISTINCT f) FROM t GROUP BY a HAVING count(*) > 1",
    "SELECT a FROM t ORDER BY a DESC NULLS LAST, b ASC NULLS FIRST LIMIT 5",
    "SELECT DISTINCT a FROM t",
    "SELECT t.a, u.b FROM t INNER JOIN u ON t.id = u.id LEFT OUTER JOIN w ON w.id = t.id LEFT JOIN x ON x.id = t.id",
    "SELECT a FROM t WHERE a IN (SELECT a FROM u)",
    "SELECT a FROM t UNION ALL SELECT a FROM u UNION SELECT a FROM w EXCEPT SELECT a FROM x",
    "WITH c AS (SELECT 1) SELECT * FROM c",
    "VALUES (1, 2), (3, 4)",
    "SELECT CASE WHEN a = 1 THEN 2 ELSE 3 END FROM t",
    "SELECT * FROM public.t",
    "SELECT * FROM t WHERE bucket_id = 5",
    "SELECT 'it''s', 1.5e0, 1.0, -1 FROM t",
    "SELECT \"option\", \"set\", \"by\" FROM \"t\"",
    "UPDATE t AS x SET \"v\" = 1",
    "EXPLAIN SELECT 1",
    "SET DateStyle = ISO",
    "",
    "SELECT 1;;",
]


class DialectTest(unittest.TestCase):
    def refused(self, sql, rule, version):
        with self.assertRaises(d.Reject, msg="%s should be refused on %s" % (sql, version)) as cm:
            d.validate(sql, version)
        self.assertEqual(cm.exception.rule, rule, "%s on %s: %s" % (sql, version, cm.exception.detail))
        self.assertTrue(d.message(cm.exception).startswith("sbroad: rule parsing error: "))

    def accepted(self, sql, version):
        try:
            return d.validate(sql, version)
        except d.Reject as rej:
            self.fail("%s refused on %s: %s (%s)" % (sql, version, rej.detail, rej.rule))

    def test_section_1_rows_refused_equivalents_accepted(self):
        for sql, rule, equivalent in SECTION_1:
            versions = [v for v in ALL if v not in WITH_ARRAYS] if rule == "any_array" else ALL
            for v in versions:
                self.refused(sql, rule, v)
                if equivalent is not None:
                    self.accepted(equivalent, v)

    def test_arrays_from_26_2_1_rc1(self):
        self.assertEqual([v for v in ALL if d.has_arrays(v)], ["26.2.1-rc1", "26.2.1-rc2"])
        self.assertFalse(d.has_arrays("26.1.6"))
        self.assertTrue(d.has_arrays("26.2.1-rc1-3-gabc"))
        for v in WITH_ARRAYS:
            for sql, rule, _ in SECTION_1:
                if rule == "any_array" and "ARRAY[" not in sql:
                    self.accepted(sql, v)
            self.accepted("SELECT * FROM t WHERE id = ANY(ARRAY[1, 2])", v)

    def test_read_preference_option_by_version(self):
        for v in ALL:
            if emu_caps.has("read_preference", v):
                self.assertEqual(self.accepted(OPTION_READ_PREFERENCE, v).options, {"read_preference": "replica"})
            else:
                self.refused(OPTION_READ_PREFERENCE, "option_name", v)

    def test_forward_option_by_version(self):
        sql = "SELECT * FROM t OPTION (forward = off)"
        for v in ALL:
            if not emu_caps.has("forward", v):
                self.refused(sql, "option_name", v)
                continue
            self.assertEqual(self.accepted(sql, v).options, {"forward": "off"})
            # G:Forward = "forward" = (ForwardOn | ForwardOff | ForwardROtoRW | Parameter): `on` is a value
            for value in ("on", "ON", "ro_to_rw"):
                self.assertEqual(self.accepted("SELECT * FROM t OPTION (forward = %s)" % value, v).options,
                                 {"forward": value.lower()})

    def test_option_is_stripped(self):
        v = self.accepted("SELECT id FROM t WHERE id < 10 OPTION (sql_motion_row_max = 0, sql_vdbe_opcode_max = 7);",
                          ALL[0])
        self.assertEqual(v.sql, "SELECT id FROM t WHERE id < 10")
        self.assertEqual(v.options, {"sql_motion_row_max": 0, "sql_vdbe_opcode_max": 7})
        self.assertTrue(v.reads)

    def test_other_refusals(self):
        for sql, rule in REFUSED:
            for v in ALL:
                self.refused(sql, rule, v)

    def test_picoroute_statements_accepted(self):
        for sql in PICOROUTE:
            for v in ALL:
                self.accepted(sql, v)

    def test_accepted_everywhere(self):
        for sql in ACCEPTED:
            for v in ALL:
                self.accepted(sql, v)

    def test_kinds_and_counts(self):
        self.assertEqual(d.validate("BEGIN").kind, "tcl")
        self.assertEqual(d.validate("end").tag, "COMMIT")
        self.assertEqual(d.validate("SET x = 1").kind, "set")
        self.assertEqual(d.validate("INSERT INTO t (a) VALUES (1), (2), ($1)").insert_rows, 3)
        self.assertEqual(d.validate("INSERT INTO t (a) SELECT a FROM u").insert_rows, None)
        self.assertEqual(d.validate("SELECT $3, $12 FROM t").params, 12)
        self.refused("SELECT $65536", "parameters", NEWEST)

    def test_explain_options_by_release(self):
        """EXPLAIN (...): 25.5.x `(raw [, fmt])` only; from 26.1.1 facets raw and fmt in any list;
        from 26.2.1-rc1 also buckets, logical, forward and context (d.explain_options)."""
        q = " SELECT id FROM t WHERE id = 1"
        by_version = {"25.5.10": ["(RAW)", "(raw, fmt)", "( Raw ,FMT )"],
                      "26.1.6": ["(RAW)", "(raw, fmt)", "( Raw ,FMT )", "(fmt, raw)", "(fmt)", "(raw, raw)"],
                      "26.2.1-rc1": ["(RAW)", "(raw, fmt)", "( Raw ,FMT )", "(fmt, raw)", "(fmt)", "(raw, raw)",
                                     "(buckets)", "(logical, buckets)", "(context, forward)",
                                     "(BUCKETS, raw, fmt, logical, forward, context)"]}
        by_version["26.2.1-rc2"] = by_version["26.2.1-rc1"]
        for v in ALL:
            for opts in ["(RAW)", "(raw, fmt)", "(fmt, raw)", "(fmt)", "(raw, raw)", "(buckets)",
                         "(logical, buckets)", "(context, forward)", "(BUCKETS, raw, fmt, logical, forward, context)",
                         "( Raw ,FMT )"]:
                if opts in by_version[v]:
                    # the options are not a function call (the function rule used to say so)
                    self.assertEqual(self.accepted("EXPLAIN " + opts + q, v).kind, "explain", (v, opts))
                else:
                    self.refused("EXPLAIN " + opts + q, "statement", v)
            for bad in ["(raw,)", "()", "(raw fmt)", "(analyze)", "(raw", "(verbose, raw)"]:
                self.refused("EXPLAIN " + bad + q, "statement", v)
            self.refused("EXPLAIN(raw)SELECT 1", "statement", v)  # W after the options
            self.refused("EXPLAIN VERBOSE SELECT 1", "statement", v)
            self.refused("EXPLAIN (raw) SELECT pg_backend_pid()", "function", v)  # the statement is judged
            self.refused("EXPLAIN (raw) SELECT * FROM t OFFSET 1", "offset", v)
            self.assertEqual(self.accepted("EXPLAIN (raw, fmt) SELECT 1 OPTION (sql_vdbe_opcode_max = 5)", v).options,
                             {"sql_vdbe_opcode_max": 5})

    def test_truncate_table(self):
        """G:TruncateTable, the same at every tag from 25.5.1 to 26.3.0: truncate [table] [public.]name
        [wait applied globally|locally] [option (timeout = n)], one table, nothing of PostgreSQL's."""
        accepted = [("TRUNCATE TABLE t", "t"), ("truncate t;", "t"), ('TRUNCATE "Users"', "Users"),
                    ("TRUNCATE public.T", "t"), ('TRUNCATE TABLE "public"."t" WAIT APPLIED GLOBALLY', "t"),
                    ("TRUNCATE t WAIT APPLIED LOCALLY OPTION (TIMEOUT = 3.5)", "t"),
                    ('TRUNCATE "option"', "option")]
        refused = [("TRUNCATE t, u", "truncate"), ("TRUNCATE TABLE t CASCADE", "truncate"),
                   ("TRUNCATE t RESTRICT", "truncate"), ("TRUNCATE t RESTART IDENTITY", "truncate"),
                   ("TRUNCATE t CONTINUE IDENTITY", "truncate"), ("TRUNCATE ONLY t", "truncate"),
                   ("TRUNCATE TABLE", "truncate"), ("TRUNCATE other.t", "truncate"),
                   ("TRUNCATE t OPTION (sql_motion_row_max = 1)", "truncate"),
                   ("TRUNCATE t OPTION (TIMEOUT = $1)", "truncate"),
                   ("TRUNCATE option", "keyword_identifier")]
        for v in ALL:
            for sql, name in accepted:
                verdict = self.accepted(sql, v)
                self.assertEqual((verdict.kind, verdict.sql, verdict.options),
                                 ("truncate", d.TRUNCATE_GATE, {"truncate": name}), sql)
            for sql, rule in refused:
                self.refused(sql, rule, v)

    def test_every_rule_names_its_source(self):
        for name, source, _ in d.RULES:
            self.assertTrue(source, name)


class StartupOptionsTest(unittest.TestCase):
    """The `options` startup parameter, read as strictly as Picodata reads it (ClientParams::new,
    src/pgproto/client/startup.rs at 25.5.10 to 26.2.1-rc2). Picodata closes the connection on an error
    (emu_front: no ErrorResponse)."""

    def test_what_picoroute_sends(self):
        import emu_front
        for v in ALL:
            expected = {}
            if emu_caps.has("read_preference", v):
                expected["read_preference"] = "replica"
            if emu_caps.has("stmt_invalidation", v):
                expected["pico_stmt_invalidation"] = True
            self.assertEqual(emu_front.parse_startup_options("read_preference=replica,pico_stmt_invalidation=true",
                                                             v), expected, v)  # older: warnings only
            self.assertEqual(emu_front.parse_startup_options(None, v), {})

    def test_names_exact_values_strict(self):
        import emu_front
        parse = emu_front.parse_startup_options
        self.assertEqual(parse("sql_motion_row_max = 0", NEWEST), {})  # "sql_motion_row_max ": unknown
        self.assertEqual(parse("Read_Preference=replica", NEWEST), {})
        self.assertEqual(parse("read_preference=REPLICA", NEWEST), {"read_preference": "replica"})
        self.assertEqual(parse("sql_motion_row_max=5=6", NEWEST), {"sql_motion_row_max": 5})  # up to the next =
        for bad, text in (("sql_motion_row_max", "option without value"),
                          ("", "option without value"),
                          ("sql_motion_row_max=-1", "should be positive"),
                          ("sql_motion_row_max=1x", "invalid digit found in string"),
                          ("sql_motion_row_max=99999999999999999999", "number too large"),
                          ("pico_stmt_invalidation=True", "not `true` or `false`"),
                          ("forward=maybe", "unknown forward value")):
            with self.assertRaises(ValueError) as cm:
                parse(bad, NEWEST)
            self.assertIn(text, str(cm.exception), bad)


class CapabilitiesTest(unittest.TestCase):
    """The emulator reads picoroute's capability table (src/core/capabilities.json) and applies its rule
    as test/unit/capabilities_test.cpp checks it on the C++ side, so both read it alike."""

    WITH = {
        "prune_by_bucket_id": ["26.2.1-rc2"],
        "forward": ["26.2.1-rc1", "26.2.1-rc2"],
        "stmt_invalidation": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "read_preference": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "local_execution": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "integral_double_hash": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "dnf_chain_limit": ["26.1.6", "26.2.1-rc1", "26.2.1-rc2"],
        "switchover_refusal": ["26.1.%d" % i for i in range(2, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "explain_sections": ["26.2.1-rc1", "26.2.1-rc2"],
        "explain_insert_buckets": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "unlogged_tables": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "concat_below_additive": ["26.2.1-rc2"],
        "empty_set_aggregate": ["26.2.1-rc2"],
    }

    def test_every_capability_at_every_release(self):
        self.assertEqual(set(self.WITH), set(emu_caps.table()["capabilities"]))
        self.assertEqual(emu_caps.releases(), ["25.5.%d" % i for i in range(1, 11)]
                         + ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"])
        for capability, with_it in self.WITH.items():
            for release in emu_caps.releases():
                self.assertEqual(emu_caps.has(capability, release), release in with_it, (capability, release))

    def test_other_versions_take_the_newest_release_at_or_before_them(self):
        for version, release in [("26.2.1-rc1-5-gabc", "26.2.1-rc1"), ("26.2.1", "26.2.1-rc2"),
                                 ("26.1.7", "26.1.6"), ("26.2.0-300-gabc", "26.1.6"),
                                 ("26.3.0", "26.2.1-rc2"), ("26.3.0-115-gdef426247", "26.2.1-rc2"),
                                 ("picodata 26.2.1-rc2", "26.2.1-rc2"), ("26.1.0", "25.5.10"),
                                 ("25.6.0-40-gabc", "25.5.10"), ("25.5.0", None), ("24.6.1", None),
                                 ("head", None), ("", None)]:
            self.assertEqual(emu_caps.governing_release(version), release, version)
        self.assertTrue(emu_caps.has("prune_by_bucket_id", "26.3.0-115-gdef426247"))
        self.assertFalse(emu_caps.has("prune_by_bucket_id", "26.2.1-rc1-5-gabc"))
        self.assertFalse(emu_caps.has("forward", "26.1.7"))
        self.assertFalse(any(emu_caps.capabilities("24.6.1").values()))
        self.assertTrue(all(emu_caps.capabilities("99.0.0").values()))

    def test_hash_rule_by_release_line(self):
        # 26.1's rule where the version has integral_double_hash; the wrong-hash device flips it.
        for version, rule in [("25.5.10", "25.5"), ("26.1.0", "25.5"), ("26.1.1", "26.1"), ("26.1.6", "26.1"),
                              ("26.2.1-rc2", "26.1"), ("26.3.0-115-gdef426247", "26.1"), ("", "25.5")]:
            self.assertEqual(emu_caps.hash_rule(version), rule, version)
            self.assertEqual(emu_caps.hash_rule(version, wrong=True), "26.1" if rule == "25.5" else "25.5", version)

    def test_emulated_builds_are_releases(self):
        self.assertTrue(set(emu_caps.BUILDS) <= set(emu_caps.releases()))
        self.assertEqual(emu_caps.DEFAULT_BUILD, emu_caps.releases()[-1])
        self.assertEqual(emu_caps.build(None), emu_caps.DEFAULT_BUILD)
        for name in ("head", "26.2", "26.2.0", "26.3.0", "25.5"):
            with self.assertRaises(ValueError):
                emu_caps.build(name)
        # version(): "picodata X" from 26.2.1-rc1 (src/info.rs:147@26.2.1-rc1), bare before
        self.assertEqual(emu_caps.version_function_text("26.2.1-rc2"), "picodata 26.2.1-rc2")
        self.assertEqual(emu_caps.version_function_text("26.2.1-rc1"), "picodata 26.2.1-rc1")
        self.assertEqual(emu_caps.version_function_text("26.1.6"), "26.1.6")
        self.assertEqual(emu_caps.version_function_text("25.5.10"), "25.5.10")

    def test_versions(self):
        order = ["25.5.10", "26.1.0", "26.1.1", "26.1.1-12-gab", "26.2.1-rc1", "26.2.1-rc2",
                 "26.2.1-rc2-5-gab", "26.2.1", "26.2.1-1-gab", "26.3.0"]
        parsed = [emu_caps.parse_version(v) for v in order]
        self.assertEqual(parsed, sorted(parsed))
        for bad in ["", "26", "head", "26.1.1-beta", "26.1.1-rc", "26.1.1-12-g", "v26.1.1"]:
            self.assertIsNone(emu_caps.parse_version(bad), bad)
        self.assertEqual(emu_caps.dnf_chain_limit(), 512)
        self.assertEqual(emu_caps.dnf_most_chains(), 513)


class WritePartsTest(unittest.TestCase):
    """emu_parts: which writes the front runs once per replicaset, and the one answer it gives."""
    STATE = {"tables": [{"name": "users", "global": False, "tier": "default", "sharding_key": ["id"]},
                        {"name": "kv", "global": False, "tier": "default", "sharding_key": ["k", "n"]},
                        {"name": "g", "global": True, "tier": None, "sharding_key": []},
                        {"name": "solo", "global": False, "tier": "one", "sharding_key": ["id"]}],
             "buckets": {"default": [[1, 10, "default_1"], [11, 20, "default_2"], [21, 30, "default_1"]],
                         "one": [[1, 30, "one_1"]]}}
    BOTH = [("default_1", "{[1,10],[21,30]}"), ("default_2", "{[11,20]}")]

    def parts(self, sql, insert_rows=None):
        parts = emu_parts.write_parts(sql, insert_rows, self.STATE)
        return None if parts is None else [(p.rs, emu_parts.multirange(p.ranges)) for p in parts]

    def test_part_settings(self):
        """A part is the set of buckets its replicaset owned when the statement arrived; an UPDATE
        or DELETE restricts its reads to them, an INSERT only the rows it writes."""
        upd = emu_parts.write_parts("UPDATE users SET v = 1", None, self.STATE)
        self.assertEqual(upd[0].settings(), [("picoemu.part_table", "users"),
                                             ("picoemu.part_buckets", "{[1,10],[21,30]}"),
                                             ("picoemu.part_reads", "on")])
        ins = emu_parts.write_parts("INSERT INTO users VALUES (1, 'a'), (2, 'b')", 2, self.STATE)
        self.assertEqual(ins[1].settings()[2], ("picoemu.part_reads", "off"))
        self.assertEqual([v for _, v in emu_parts.NO_PART], ["", "", ""])

    def test_split(self):
        for sql in ("UPDATE users SET v = 1", 'UPDATE "users" SET "v" = 1 OPTION (sql_vdbe_opcode_max = 0)',
                    "DELETE FROM public.users WHERE v > 3", "UPDATE users SET v = 1 WHERE id = 1 OR id = 2",
                    "DELETE FROM users WHERE id IN (1, 2)", "UPDATE users SET v = 1 WHERE id > 5",
                    "UPDATE users SET v = (SELECT 1 WHERE id = 5)", "DELETE FROM users WHERE NOT (id = 1)",
                    "UPDATE kv SET v = 'x' WHERE k = 'a'", "INSERT INTO users SELECT * FROM users"):
            self.assertEqual(self.parts(sql), self.BOTH, sql)
        self.assertEqual(self.parts("INSERT INTO users VALUES (1, 'a'), (2, 'b')", 2), self.BOTH)

    def test_not_split(self):
        for sql, rows in (("UPDATE users SET v = 1 WHERE id = 5", None),
                          ('UPDATE "users" SET "v" = $1 WHERE ("id" = $2)', None),
                          ("DELETE FROM users WHERE v = 3 AND id = -7", None),
                          ("DELETE FROM users WHERE bucket_id = 12", None),
                          ("UPDATE kv SET v = 'x' WHERE k = 'a' AND n = 2", None),
                          ("INSERT INTO users VALUES (1, 'a')", 1),
                          ("UPDATE g SET v = 1", None), ("INSERT INTO g VALUES (1), (2)", 2),
                          ("UPDATE solo SET v = 1", None), ("UPDATE nosuch SET v = 1", None),
                          ("SELECT * FROM users", None)):
            self.assertIsNone(self.parts(sql, rows), sql)

    def test_merge(self):
        def m(typ, body):
            return typ + struct.pack("!I", len(body) + 4) + body
        ok1 = m(b"C", b"UPDATE 3\0") + m(b"Z", b"I")
        ok2 = m(b"N", b"Mnote\0\0") + m(b"C", b"UPDATE 4\0") + m(b"Z", b"I")
        err = m(b"E", b"SERROR\0C08001\0Mdown\0\0") + m(b"Z", b"I")
        self.assertEqual(emu_parts.merge_answers([ok1, ok2]), m(b"N", b"Mnote\0\0") + m(b"C", b"UPDATE 7\0"))
        self.assertEqual(emu_parts.merge_answers([ok1, err]), m(b"E", b"SERROR\0C08001\0Mdown\0\0"))
        self.assertEqual(emu_parts.merge_answers([m(b"C", b"INSERT 0 2\0"), m(b"C", b"INSERT 0 0\0")]),
                         m(b"C", b"INSERT 0 2\0"))


class DispatchPlanTest(unittest.TestCase):
    """emu_route.dispatch_plan: which statements a stopped master stalls (Lua dispatch) and which
    run on the 26.1.1+ local path; the text once the deadline has passed."""
    STATE = {"tables": [{"name": "users", "global": False, "tier": "default", "sharding_key": ["id"],
                         "columns": [{"name": "id", "type": "int8", "cls": "int"}]},
                        {"name": "g", "global": True, "tier": None, "sharding_key": [], "columns": []}],
             "tiers": [{"name": "default", "bucket_count": 3000}],
             "buckets": {"default": [[1, 1500, "default_1"], [1501, 3000, "default_2"]]},
             "replicasets": [{"name": "default_1", "uuid": "u1", "tier": "default", "master": "default_1_1",
                              "state": "ready"},
                             {"name": "default_2", "uuid": "u2", "tier": "default", "master": "default_2_1",
                              "state": "ready"}],
             "instances": [{"name": "default_1_1", "replicaset": "default_1", "state": "Online"},
                           {"name": "default_1_2", "replicaset": "default_1", "state": "Online"},
                           {"name": "default_2_1", "replicaset": "default_2", "state": "Offline"}]}

    # Emulated builds with and without the local path, by capability.
    WITH_LOCAL = next(b for b in reversed(emu_caps.BUILDS) if emu_caps.has("local_execution", b))
    WITHOUT_LOCAL = next(b for b in emu_caps.BUILDS if not emu_caps.has("local_execution", b))

    def plan(self, sql, version=None, instance="default_1_1", pref=None, params=None):
        version = version or self.WITH_LOCAL
        write = not sql.lower().startswith("select")
        return emu_route.dispatch_plan(self.STATE, instance, version, emu_route.statement_tokens(sql), params,
                                       pref, write)

    def key_of(self, rs):
        import bucket_hash_reference as ref
        return next(k for k in range(1, 100) if (ref.bucket_id([k], 3000) <= 1500) == (rs == "default_1"))

    def test_local_path_at_the_owners_master(self):
        k1 = self.key_of("default_1")
        for sql in ("SELECT * FROM users WHERE id = %d" % k1, "UPDATE users SET id = id WHERE id = %d" % k1,
                    "INSERT INTO users VALUES (%d)" % k1):
            self.assertIsNone(self.plan(sql), sql)
            self.assertEqual(self.plan(sql, version=self.WITHOUT_LOCAL),
                             {"tiers": ["default"], "targets": ["default_1"]},
                             self.WITHOUT_LOCAL + " has no local path: " + sql)
        self.assertIsNone(self.plan("SELECT * FROM users WHERE id = $1", params=[str(k1)]))

    def test_everything_else_is_dispatched(self):
        k1, k2 = self.key_of("default_1"), self.key_of("default_2")
        both = {"tiers": ["default"], "targets": ["default_1", "default_2"]}
        self.assertEqual(self.plan("SELECT count(*) FROM users"), both)
        self.assertEqual(self.plan("UPDATE users SET id = id"), both)
        self.assertEqual(self.plan("INSERT INTO users VALUES (%d), (%d)" % (k1, k2)), both)
        self.assertEqual(self.plan("SELECT * FROM users WHERE id = %d" % k2),
                         {"tiers": ["default"], "targets": ["default_2"]})
        # a replica runs its replicaset's read only for read_preference replica or any
        self.assertIsNotNone(self.plan("SELECT * FROM users WHERE id = %d" % k1, instance="default_1_2"))
        self.assertIsNone(self.plan("SELECT * FROM users WHERE id = %d" % k1, instance="default_1_2", pref="replica"))
        self.assertIsNotNone(self.plan("SELECT * FROM users WHERE id = %d" % k1, pref="replica"))

    def test_global_tables_and_the_catalog_are_not_dispatched(self):
        for sql in ("SELECT * FROM g", "UPDATE g SET id = 1", "SELECT * FROM _pico_instance", "SELECT 1"):
            self.assertIsNone(self.plan(sql), sql)

    def test_stopped_masters_and_the_text(self):
        self.assertEqual(emu_route.stopped_masters(self.STATE, ["default"]), ["default_2"])
        self.assertEqual(emu_route.stopped_masters(self.STATE, ["other"]), [])
        text = emu_route.dql_timeout_text(self.STATE, {"tiers": ["default"], "targets": ["default_1", "default_2"]})
        self.assertEqual(text, 'sbroad: box error: ProcLua: {"type":"ClientError","code":32,"message":'
                               '"Error on replicaset u1: dql timeout exceeded"}')
        self.assertIn("replicaset u2:", emu_route.dql_timeout_text(
            self.STATE, {"tiers": ["default"], "targets": ["default_2"]}))


class AdvertisedAddressTest(unittest.TestCase):
    """The pgproto address the catalog gives: the front's port, or with `up --advertise-private`
    the instance's private PostgreSQL port (no server needed: the state and the catalog document)."""

    def addresses(self, advertise_private):
        st = emu_state.new_state("/nonexistent/state.json", 20000, [("default", 1, 2, 10)], False,
                                 "scram-sha-256", advertise_private=advertise_private)
        tier = st.tier("default")
        rs = st.new_replicaset(tier)
        insts = [st.new_instance(rs, tier, j) for j in (1, 2)]
        rs["master"] = insts[0]["name"]
        doc = json.loads(emu_sql.catalog_doc(st))
        pgproto = [p["address"] for p in doc["_pico_peer_address"] if p["connection_type"] == "pgproto"]
        return pgproto, [st.advertised_port(i) for i in insts], insts

    def test_default_advertises_the_fronts(self):
        pgproto, ports, insts = self.addresses(False)
        self.assertEqual(ports, [20000, 20001])
        self.assertEqual(pgproto, ["127.0.0.1:20000", "127.0.0.1:20001"])
        self.assertEqual([i["port"] for i in insts], [20200, 20201])

    def test_advertise_private(self):
        pgproto, ports, insts = self.addresses(True)
        self.assertEqual(ports, [20200, 20201])
        self.assertEqual(pgproto, ["127.0.0.1:20200", "127.0.0.1:20201"])
        self.assertEqual([i["pgproto_port"] for i in insts], [20000, 20001])  # the fronts


# A cluster of two replicasets of one master and one replica each, 3000 buckets split in two, as
# forward sees it in state.json. Keys: 2 -> bucket 1410 (default_1), 1 -> 1934 and 3 -> 1958
# (default_2).
STATE = {
    "tables": [{"name": "t", "global": False, "tier": "default", "sharding_key": ["id"],
                "columns": [{"name": "id", "cls": "int"}, {"name": "b", "cls": "text"}]},
               {"name": "k2", "global": False, "tier": "default", "sharding_key": ["b", "id"],
                "columns": [{"name": "id", "cls": "int"}, {"name": "b", "cls": "text"}]},
               {"name": "g", "global": True, "tier": None, "sharding_key": [],
                "columns": [{"name": "id", "cls": "int"}]}],
    "tiers": [{"name": "default", "bucket_count": 3000}],
    "buckets": {"default": [[1, 1500, "default_1"], [1501, 3000, "default_2"]]},
    "instances": [{"name": "m1", "replicaset": "default_1"}, {"name": "r1", "replicaset": "default_1"},
                  {"name": "m2", "replicaset": "default_2"}],
    "replicasets": [{"name": "default_1", "master": "m1"}, {"name": "default_2", "master": "m2"}],
}
NOT_LOCAL = ('sbroad: invalid option: cannot satisfy "forward = off": buckets are not present on the '
             'current node, try using "forward = ro_to_rw" instead')
SPAN = ('sbroad: invalid option: cannot satisfy "forward = off": buckets span multiple nodes and are '
        'not present on the current node, try using "forward = on" instead')
SPAN_RO = ('sbroad: invalid option: cannot satisfy "forward = ro_to_rw": buckets span multiple nodes, '
           'try using "forward = on" instead')


class ForwardTest(unittest.TestCase):
    """forward=off/ro_to_rw judged by the statement's bucket set, as enforce_forward_option and
    get_possible_forward_option (src/sql/router.rs, 26.2.1-rc1 and 26.3.0) judge it."""

    def verdict(self, sql, instance="m1", wanted="off", params=None, version="26.2.1-rc2"):
        import emu_route
        return emu_route.forward_verdict(STATE, instance, version, emu_route.statement_tokens(sql), wanted, params)

    def test_keyless_refused_even_when_every_row_is_local(self):
        self.assertEqual(self.verdict("SELECT * FROM t"), SPAN)
        self.assertEqual(self.verdict("SELECT * FROM t WHERE b = 'x'", "m2"), SPAN)
        self.assertEqual(self.verdict("DELETE FROM t WHERE b = 'x'"), SPAN)
        self.assertEqual(self.verdict("UPDATE t SET b = 'y'"), SPAN)
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id = 2 OR b = 'x'"), SPAN)
        self.assertEqual(self.verdict("SELECT * FROM t", wanted="ro_to_rw"), SPAN_RO)
        self.assertIsNone(self.verdict("SELECT * FROM t", wanted="on"))

    def test_keyed_at_the_owner_runs_elsewhere_refused(self):
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 2"))
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 1", "m2"))
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id = 1"), NOT_LOCAL)
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 1", wanted="ro_to_rw"))
        self.assertIsNone(self.verdict("UPDATE t SET b = 'x' WHERE id = 2 AND b = 'y'"))
        self.assertIsNone(self.verdict("DELETE FROM t WHERE \"id\" = $1", params=["2"]))
        self.assertEqual(self.verdict("DELETE FROM t WHERE t.id = $1::int8", params=["1"]), NOT_LOCAL)
        self.assertIsNone(self.verdict("SELECT * FROM k2 WHERE id = 5 AND b = 'x'",
                                       self.owner_instance([["x", 5]], "k2")))

    def owner_instance(self, keys, table="t"):
        import bucket_hash_reference as ref
        rs = {1 if ref.bucket_id(k, 3000) <= 1500 else 2 for k in keys}
        return "m%d" % rs.pop()

    def test_several_keys_by_owners(self):
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id IN (1, 3)", "m2"))
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 1 OR id = 3", "m2"))
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id IN (1, 2)", "m2"), SPAN)
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id IN (1, 3)"), NOT_LOCAL)

    def test_inserts_by_their_rows(self):
        self.assertIsNone(self.verdict("INSERT INTO t VALUES (2, 'a')"))
        self.assertIsNone(self.verdict("INSERT INTO t (b, id) VALUES ('a', 1), ('b', 3)", "m2"))
        self.assertEqual(self.verdict("INSERT INTO public.t (id, b) VALUES (1, 'a'), (2, 'b')"), SPAN)
        self.assertEqual(self.verdict("INSERT INTO t (id, b) VALUES ($1, $2)", params=["1", "x"]), NOT_LOCAL)
        self.assertEqual(self.verdict("INSERT INTO t (id, b) SELECT id, b FROM t"), SPAN)

    def test_replica_refuses_under_off(self):
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id = 2", "r1"), NOT_LOCAL)
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 2", "r1", wanted="ro_to_rw"))

    def test_no_sharded_table_runs_anywhere(self):
        for sql in ("SELECT * FROM g", "SELECT name FROM _pico_instance", "SELECT 1", "VALUES (1)",
                    "INSERT INTO g VALUES (1)"):
            self.assertIsNone(self.verdict(sql, "r1"), sql)

    def test_bucket_id_judged_by_its_owner_where_it_prunes(self):
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE bucket_id = 5"))
        self.assertEqual(self.verdict("SELECT * FROM t WHERE bucket_id = 2000"), NOT_LOCAL)
        self.assertEqual(self.verdict("SELECT * FROM t WHERE bucket_id = $1", params=["2000"]), NOT_LOCAL)
        # 26.2.1-rc1 has forward but does not prune: a bucket_id filter is a filter, all buckets
        self.assertFalse(emu_caps.has("prune_by_bucket_id", "26.2.1-rc1"))
        self.assertEqual(self.verdict("SELECT * FROM t WHERE bucket_id = 5", version="26.2.1-rc1"), SPAN)

    def test_not_judged_without_forward_or_when_not_hashable_here(self):
        self.assertIsNone(self.verdict("SELECT * FROM t", version="26.1.6"))
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 1.0"))
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = $1", params=[None]))
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = '1'"))

    def test_joins_and_subqueries_ask_everyone(self):
        self.assertEqual(self.verdict("SELECT * FROM t a JOIN t b ON a.id = b.id WHERE a.id = 2"), SPAN)
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id IN (SELECT id FROM g)"), SPAN)


class LeaderReadTest(unittest.TestCase):
    """Reads that must be leader reads (effective_read_preference, src/sql/dispatch.rs, 26.1.1+)."""
    UNLOGGED = "sbroad: invalid option: read_preference must be set to 'leader' when querying unlogged tables"
    PREEMPTION = ("sbroad: invalid option: read_preference must be set to 'leader' when sql_preemption "
                  "is enabled")

    def refusal(self, sql, **settings):
        import emu_route
        state = dict(STATE, tables=STATE["tables"] + [
            {"name": "u", "global": False, "tier": "default", "sharding_key": ["id"], "unlogged": True,
             "columns": [{"name": "id", "cls": "int"}]}], **settings)
        return emu_route.leader_read_refusal(state, emu_route.statement_tokens(sql))

    def test_unlogged_tables_then_preemption(self):
        self.assertEqual(self.refusal("SELECT * FROM u WHERE id = 1"), self.UNLOGGED)
        self.assertEqual(self.refusal("SELECT * FROM t JOIN u ON t.id = u.id"), self.UNLOGGED)
        self.assertEqual(self.refusal("SELECT * FROM u", sql_preemption=True), self.UNLOGGED)
        self.assertIsNone(self.refusal("SELECT * FROM t WHERE id = 1"))
        self.assertEqual(self.refusal("SELECT * FROM t WHERE id = 1", sql_preemption=True), self.PREEMPTION)

    def test_reads_of_global_tables_only_are_not_dispatched(self):
        for sql in ("SELECT * FROM g", "SELECT name FROM _pico_table", "SELECT 1"):
            self.assertIsNone(self.refusal(sql, sql_preemption=True), sql)


class EmptyBucketSetTest(unittest.TestCase):
    """A scalar aggregate whose key equalities contradict each other has no bucket: before 26.2.1-rc2
    Picodata answers NULL for it (test/int/sql/eliminate_motion.sql, scalar-agg-1)."""

    def empty(self, sql, params=None, version="26.2.1-rc1"):
        import emu_route
        return emu_route.empty_set_aggregate(STATE, version, emu_route.statement_tokens(sql), params)

    def test_contradicting_keys_have_no_bucket(self):
        self.assertTrue(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 2"))
        self.assertTrue(self.empty('SELECT count(*), sum("id") FROM "t" WHERE "id" = $1 AND "id" = $2',
                                   params=["1", "2"]))
        self.assertFalse(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 1"))
        self.assertFalse(self.empty("SELECT count(*) FROM t WHERE id = 1"))
        self.assertFalse(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 2 OR id = 3"))

    def test_only_scalar_aggregates_before_the_fix(self):
        self.assertFalse(self.empty("SELECT id FROM t WHERE id = 1 AND id = 2"))
        self.assertFalse(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 2 GROUP BY b"))
        for version in ("25.5.10", "26.1.6", "26.2.1-rc1"):
            self.assertTrue(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 2", version=version), version)
        self.assertFalse(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 2", version="26.2.1-rc2"))


class RouteHashRuleTest(unittest.TestCase):
    """The fronts' bucket sets (forward, empty sets) hash keys by the version's line, as the storages."""

    def test_rule_by_line(self):
        import emu_route
        self.assertEqual([emu_route.hash_rule(v) for v in ("25.5.10", "26.1.6", "26.2.1-rc2")],
                         ["25.5", "26.1", "26.1"])


class ConcatPrecedenceTest(unittest.TestCase):
    """|| binds with * / % up to 26.2.1-rc1, below + - (as in PostgreSQL) from 26.2.1-rc2: where the
    meanings differ, the front refuses a || next to an arithmetic operator."""

    def rule(self, sql, version):
        try:
            d.validate(sql, version)
        except d.Reject as rej:
            return rej.rule
        return None

    def test_mixed_without_parentheses_before_the_fix(self):
        for sql in ("SELECT a || b + c FROM t", "SELECT a || b * c FROM t", "SELECT a + b || c FROM t",
                    "SELECT * FROM t WHERE b || 'x' || id - 1 = 'y'"):
            for before in ("25.5.10", "26.1.6", "26.2.1-rc1"):
                self.assertEqual(self.rule(sql, before), "concat_precedence", (sql, before))
            for after in ("26.2.1-rc2", "26.2.1"):
                self.assertIsNone(self.rule(sql, after), (sql, after))

    def test_parenthesised_operands_mean_the_same_everywhere(self):
        for sql in ("SELECT (a || b) + c FROM t", "SELECT a || (b + c) FROM t", "SELECT a + 1, b || c FROM t",
                    'SELECT * FROM t WHERE (("b" || \'x\') || "c") = (1 + 2)', "SELECT a::text || 'x' FROM t"):
            self.assertIsNone(self.rule(sql, "26.2.1-rc1"), sql)


class ErrorTextTest(unittest.TestCase):
    """Picodata's texts and SQLSTATEs for what the fronts answer or pass on."""

    def test_limit_texts_by_version(self):
        """sbroad: before every limit text (traft's Error::Sbroad); the planner's check of INSERT ... VALUES
        says unexpected number of values before 26.2.1-rc1; from 26.2.1-rc1 the EXPLAIN (RAW) tag."""
        import emu_front
        plain = "Exceeded maximum number of rows (5000) in virtual table: 5001"
        for v in ("25.5.10", "26.1.6", "26.2.0", "26.1.1-5-gabc"):
            self.assertEqual(emu_front.row_limit_text(5000, 5001, v), "sbroad: " + plain, v)
            self.assertEqual(emu_front.row_limit_text(5000, 5001, v, values=True),
                             "sbroad: unexpected number of values: " + plain, v)
            self.assertEqual(emu_front.vdbe_limit_text(7, v),
                             "sbroad: Reached a limit on max executed vdbe opcodes. Limit: 7", v)
        for v in ("26.2.1-rc1", "26.2.1-rc2", "26.3.0"):
            for values in (False, True):
                self.assertEqual(emu_front.row_limit_text(5000, 5001, v, values),
                                 "sbroad: Query 1 from EXPLAIN (RAW): " + plain, v)
            self.assertEqual(emu_front.vdbe_limit_text(7, v),
                             "sbroad: Query 1 from EXPLAIN (RAW): Reached a limit on max executed vdbe opcodes. "
                             "Limit: 7")

    def test_read_only_refusal_by_version(self):
        import emu_front
        demoted = emu_front.error_msg("25006", "cannot execute UPDATE in a read-only transaction")
        for v in ALL:
            text = self.fields(emu_front.read_only_refusal(demoted, v))[2][1]
            self.assertTrue(text.startswith("sbroad: "), (v, text))
            self.assertIn("retry is required" if emu_caps.has("switchover_refusal", v)
                          else "Can't modify data on a read-only instance", text)

    def test_bind_texts(self):
        import emu_front
        json_oid, ts_oid = emu_front.JSON_OID, emu_front.TIMESTAMPTZ_OID

        def bind(*values):
            body = struct.pack("!hh", 1, 0) + struct.pack("!h", len(values))
            for v in values:
                body += struct.pack("!i", len(v)) + v
            return body

        self.assertEqual(emu_front.check_bind(bind(b"1", b'{"a": 1}'), 0, [20, json_oid]),
                         ("0A000", "failed to bind parameter $2: feature is not supported: cannot represent json "
                                   "in sbroad"))
        self.assertEqual(emu_front.check_bind(bind(b"01/02/2025"), 0, [ts_oid]),
                         ("22P02", "failed to bind parameter $1: decoding error: '01/02/2025' is not a valid "
                                   "timestamptz"))
        self.assertIsNone(emu_front.check_bind(bind(b"2025-01-02 00:00:00+00"), 0, [ts_oid]))

    def test_version_calls_rewritten(self):
        import emu_front
        import emu_route
        sql = "SELECT version(), \"version\", x.version() FROM t WHERE v = version ( )"
        out = emu_front.version_call_text(sql, emu_route.statement_tokens(sql))
        self.assertEqual(out, 'SELECT _picoemu.picodata_version(), "version", x.version() FROM t WHERE v = '
                              '_picoemu.picodata_version()')

    def fields(self, m):
        import emu_front
        return [(k, emu_front.error_field(m, k.encode()).decode()) for k in "SCMDH"]

    def test_storage_errors_in_picodatas_words(self):
        # Each behind traft's "sbroad: ", as every SQL-path error reaches a pgproto client (README).
        import emu_front

        def sent(code, text, detail=None, bind=False):
            body = emu_front.error_body(code, text, hint="a hint")
            if detail:
                body = body[:-1] + b"D" + emu_front.cstr(detail) + b"\0"
            m = emu_front.msg(b"E", body)
            tables = [{"name": "ty", "columns": [{"name": "id", "type": "int8"}, {"name": "name", "type": "text"},
                                                 {"name": "n", "type": "numeric(10,2)"}]}]
            return self.fields(emu_front.picodata_error(m, bind=bind, tables=tables))[1:3]

        self.assertEqual(sent("23505", 'duplicate key value violates unique constraint "ty_pkey"',
                              "Key (id)=(5) already exists."),
                         [("C", "XX000"), ("M", 'sbroad: Duplicate key exists in unique index "ty_pkey" in space '
                                                '"ty" with old tuple - [5] and new tuple - [5]')])
        self.assertEqual(sent("23502", 'null value in column "name" of relation "ty" violates not-null constraint'),
                         [("C", "XX000"), ("M", "sbroad: Tuple field 2 (name) type does not match one required by "
                                                "operation: expected string, got nil")])
        self.assertEqual(sent("23502", 'null value in column "n" of relation "ty" violates not-null constraint')[1],
                         ("M", "sbroad: Tuple field 3 (n) type does not match one required by operation: expected "
                               "decimal, got nil"))
        self.assertEqual(sent("22012", "division by zero"),
                         [("C", "XX000"), ("M", "sbroad: Failed to execute SQL statement: division by zero")])
        self.assertEqual(sent("22003", "bigint out of range"),
                         [("C", "XX000"), ("M", "sbroad: Failed to execute SQL statement: integer is overflowed")])
        self.assertEqual(sent("22P02", 'invalid input syntax for type bigint: "abc"'),
                         [("C", "XX000"), ("M", "sbroad: failed to parse 'abc' as a value of type int, consider "
                                                "using explicit type casts")])
        # at Bind, Picodata decodes the value itself and keeps 22P02 (the text is the emulator's)
        self.assertEqual(sent("22P02", 'invalid input syntax for type bigint: "abc"', bind=True)[0], ("C", "22P02"))

    def test_server_errors_as_picodata_sends_them(self):
        import emu_front
        pg = lambda code, text, sev="ERROR": emu_front.error_msg(code, text, sev, hint="a hint")  # noqa: E731
        same = [("XX000", "x"), ("42P05", 'prepared statement "s" already exists'), ("08P01", "bad message")]
        for code, text in same:
            self.assertEqual(self.fields(emu_front.picodata_error(pg(code, text))),
                             [("S", "ERROR"), ("C", code), ("M", text), ("D", ""), ("H", "")])
        for code, text in [("23505", "duplicate key value violates unique constraint"),
                           ("23502", "null value in column"), ("40001", "could not serialize"),
                           ("42601", "syntax error"), ("22P02", "invalid input syntax for type json"),
                           ("22003", "numeric field overflow"),
                           ("42501", "permission denied for table _pico_replicaset"), ("PE002", "does not own")]:
            self.assertEqual(self.fields(emu_front.picodata_error(pg(code, text)))[1:3], [("C", "XX000"), ("M", text)])
        # a parameter Picodata cannot decode at Bind keeps its code
        self.assertEqual(self.fields(emu_front.picodata_error(pg("22P02", "invalid input"), bind=True))[1],
                         ("C", "22P02"))
        self.assertEqual(self.fields(emu_front.picodata_error(pg("42P01", 'relation "nope" does not exist')))[1:3],
                         [("C", "XX000"), ("M", 'sbroad: table with name "nope" not found')])
        self.assertEqual(self.fields(emu_front.picodata_error(pg("PE001", "picoemu: forward=off: ...")))[1:3],
                         [("C", "XX000"), ("M", emu_front.STRICT_TEXT)])
        fatal = pg("57P01", "terminating connection due to administrator command", "FATAL")
        self.assertEqual(emu_front.picodata_error(fatal), fatal)


class DnfChainsTest(unittest.TestCase):
    """The OR-of-AND chains of a WHERE clause (emu_route.chains, picoroute's count: src/pg/fdw/keys.cpp)
    and what the front sends for a statement over what Picodata expands: MAX_DNF_CHAINS = 512 is checked
    after a pop, so 513 chains still expand and 514 do not (26.1.6, 26.2.1-rc1 and later)."""

    @staticmethod
    def chains(sql):
        import emu_route
        return emu_route.chains(emu_route.statement_tokens(sql))

    def test_counts(self):
        ids = ", ".join(str(i) for i in range(100))
        buckets = ", ".join(str(i) for i in range(1, 51))
        for sql, n in [("SELECT * FROM t", 1),
                       ("SELECT * FROM t WHERE id = 1 AND b = 'x'", 1),
                       ("SELECT * FROM t WHERE id = 1 OR id = 2 OR b = 'x'", 3),
                       ("SELECT * FROM t WHERE (id = 1 OR id = 2) AND (b = 'x' OR b = 'y')", 4),
                       ("SELECT * FROM t WHERE id IN (1, 2, 3) AND b IN ('x', 'y')", 6),
                       ("SELECT * FROM t WHERE id NOT IN (1, 2, 3)", 1),
                       ("SELECT * FROM t WHERE NOT (id = 1 OR id = 2)", 1),
                       ("SELECT * FROM t WHERE NOT (id = 1 AND b = 'x')", 2),
                       ("SELECT * FROM t WHERE v BETWEEN 1 AND 5 AND (id = 1 OR id = 2)", 2),
                       ("SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE v IN (1, 2))", 2),
                       ("SELECT * FROM t WHERE (v + 1) = 2 OR id = 1", 2),
                       ("SELECT * FROM t WHERE id IN (%s) AND bucket_id IN (%s)" % (ids, buckets), 5000),
                       ("UPDATE t SET v = 1 WHERE id IN (%s) ORDER BY id" % ids, 100),
                       ("DELETE FROM t WHERE id IN (1, 2) OPTION (sql_vdbe_opcode_max = 0)", 2)]:
            self.assertEqual(self.chains(sql), n, sql)

    def test_over_the_limit_is_sent_unrouted_and_unpruned(self):
        import emu_front
        import emu_route
        sql = "SELECT * FROM t WHERE t.bucket_id = 5 AND id IN (%s);" % ", ".join(str(i) for i in range(514))
        toks = emu_route.statement_tokens(sql)
        r = {"toks": toks, "chains": emu_route.chains(toks)}
        self.assertEqual(r["chains"], 514)
        out = emu_front.dnf_text(sql, r)
        self.assertTrue(out.startswith("SELECT * FROM t WHERE (t.bucket_id + 0) = 5 AND id IN (0, 1, "), out[:80])
        self.assertTrue(out.endswith(", 513) /* picoemu: 514 OR-of-AND chains, over Picodata's DNF limit: "
                                     "not routed */"), out[-120:])
        # SELECT bucket_id keeps its column name: only WHERE clauses are rewritten
        self.assertEqual(emu_route.unpruned_text("SELECT bucket_id FROM t WHERE \"bucket_id\" = 1",
                                                 emu_route.statement_tokens("SELECT bucket_id FROM t WHERE \"bucket_id\" = 1")),
                         'SELECT bucket_id FROM t WHERE ("bucket_id" + 0) = 1')

    def test_over_the_limit_all_buckets_for_forward(self):
        # key 2 only (bucket 1410, default_1): local at m1 up to 513 chains, all buckets above
        self.assertIsNone(ForwardTest().verdict("SELECT * FROM t WHERE id IN (%s)" % ", ".join(["2"] * 513)))
        self.assertEqual(ForwardTest().verdict("SELECT * FROM t WHERE id IN (%s)" % ", ".join(["2"] * 514)), SPAN)


if __name__ == "__main__":
    unittest.main(verbosity=1)
