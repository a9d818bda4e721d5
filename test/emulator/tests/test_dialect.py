"""Unit tests of the front's dialect validator (picoemu_lib.dialect): every row of the facts document's
section 1 is refused and its accepted equivalent accepted, the statements picoroute sends today
(FDW deparser, bucket filters, worker catalog queries) are accepted, OPTION names follow the version,
and `||` next to arithmetic is refused where Picodata's precedence differs from PostgreSQL's.

Run: python3 -m unittest tests.test_dialect (from test/emulator; every unit test: see tests/__init__.py)
"""

import unittest
from typing import Optional

from picoemu_lib import caps as emu_caps
from picoemu_lib import dialect as d
from picoemu_lib.dialect.grammar import TRUNCATE_GATE

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
    def refused(self, sql: str, rule: str, version: str) -> None:
        with self.assertRaises(d.Reject, msg="%s should be refused on %s" % (sql, version)) as cm:
            d.validate(sql, version)
        self.assertEqual(cm.exception.rule, rule, "%s on %s: %s" % (sql, version, cm.exception.detail))
        self.assertTrue(d.message(cm.exception).startswith("sbroad: rule parsing error: "))

    def accepted(self, sql: str, version: str) -> d.Verdict:
        try:
            return d.validate(sql, version)
        except d.Reject as rej:
            raise self.failureException("%s refused on %s: %s (%s)" % (sql, version, rej.detail, rej.rule))

    def test_section_1_rows_refused_equivalents_accepted(self) -> None:
        for sql, rule, equivalent in SECTION_1:
            versions = [v for v in ALL if v not in WITH_ARRAYS] if rule == "any_array" else ALL
            for v in versions:
                self.refused(sql, rule, v)
                if equivalent is not None:
                    self.accepted(equivalent, v)

    def test_arrays_from_26_2_1_rc1(self) -> None:
        self.assertEqual([v for v in ALL if d.has_arrays(v)], ["26.2.1-rc1", "26.2.1-rc2"])
        self.assertFalse(d.has_arrays("26.1.6"))
        self.assertTrue(d.has_arrays("26.2.1-rc1-3-gabc"))
        for v in WITH_ARRAYS:
            for sql, rule, _ in SECTION_1:
                if rule == "any_array" and "ARRAY[" not in sql:
                    self.accepted(sql, v)
            self.accepted("SELECT * FROM t WHERE id = ANY(ARRAY[1, 2])", v)

    def test_read_preference_option_by_version(self) -> None:
        for v in ALL:
            if emu_caps.has("read_preference", v):
                self.assertEqual(self.accepted(OPTION_READ_PREFERENCE, v).options, {"read_preference": "replica"})
            else:
                self.refused(OPTION_READ_PREFERENCE, "option_name", v)

    def test_forward_option_by_version(self) -> None:
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

    def test_option_is_stripped(self) -> None:
        v = self.accepted("SELECT id FROM t WHERE id < 10 OPTION (sql_motion_row_max = 0, sql_vdbe_opcode_max = 7);",
                          ALL[0])
        self.assertEqual(v.sql, "SELECT id FROM t WHERE id < 10")
        self.assertEqual(v.options, {"sql_motion_row_max": 0, "sql_vdbe_opcode_max": 7})
        self.assertTrue(v.reads)

    def test_other_refusals(self) -> None:
        for sql, rule in REFUSED:
            for v in ALL:
                self.refused(sql, rule, v)

    def test_picoroute_statements_accepted(self) -> None:
        for sql in PICOROUTE:
            for v in ALL:
                self.accepted(sql, v)

    def test_accepted_everywhere(self) -> None:
        for sql in ACCEPTED:
            for v in ALL:
                self.accepted(sql, v)

    def test_kinds_and_counts(self) -> None:
        self.assertEqual(d.validate("BEGIN").kind, "tcl")
        self.assertEqual(d.validate("end").tag, "COMMIT")
        self.assertEqual(d.validate("SET x = 1").kind, "set")
        self.assertEqual(d.validate("INSERT INTO t (a) VALUES (1), (2), ($1)").insert_rows, 3)
        self.assertEqual(d.validate("INSERT INTO t (a) SELECT a FROM u").insert_rows, None)
        self.assertEqual(d.validate("SELECT $3, $12 FROM t").params, 12)
        self.refused("SELECT $65536", "parameters", NEWEST)

    def test_explain_options_by_release(self) -> None:
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

    def test_truncate_table(self) -> None:
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
                                 ("truncate", TRUNCATE_GATE, {"truncate": name}), sql)
            for sql, rule in refused:
                self.refused(sql, rule, v)

    def test_every_rule_names_its_source(self) -> None:
        for name, source, _ in d.RULES:
            self.assertTrue(source, name)


class ConcatPrecedenceTest(unittest.TestCase):
    """|| binds with * / % up to 26.2.1-rc1, below + - (as in PostgreSQL) from 26.2.1-rc2: where the
    meanings differ, the front refuses a || next to an arithmetic operator."""

    def rule(self, sql: str, version: str) -> Optional[str]:
        try:
            d.validate(sql, version)
        except d.Reject as rej:
            return rej.rule
        return None

    def test_mixed_without_parentheses_before_the_fix(self) -> None:
        for sql in ("SELECT a || b + c FROM t", "SELECT a || b * c FROM t", "SELECT a + b || c FROM t",
                    "SELECT * FROM t WHERE b || 'x' || id - 1 = 'y'"):
            for before in ("25.5.10", "26.1.6", "26.2.1-rc1"):
                self.assertEqual(self.rule(sql, before), "concat_precedence", (sql, before))
            for after in ("26.2.1-rc2", "26.2.1"):
                self.assertIsNone(self.rule(sql, after), (sql, after))

    def test_parenthesised_operands_mean_the_same_everywhere(self) -> None:
        for sql in ("SELECT (a || b) + c FROM t", "SELECT a || (b + c) FROM t", "SELECT a + 1, b || c FROM t",
                    'SELECT * FROM t WHERE (("b" || \'x\') || "c") = (1 + 2)', "SELECT a::text || 'x' FROM t"):
            self.assertIsNone(self.rule(sql, "26.2.1-rc1"), sql)
