"""Unit tests of the fronts' EXPLAIN (picoemu_lib.explain): Picodata's format at each version (the old one up
to 26.2.0, sections from 26.2.1-rc1), the buckets line of keyed statements with literals and bound
parameters (hashed by the literal's own type, a parameter by its column's), key lists, statements
without a key, INSERT by version, and the wrong-hash test device.

Run: python3 -m unittest tests.test_explain (from test/emulator; every unit test: see tests/__init__.py)
"""

import decimal
import struct
import unittest
from typing import Any, Dict, Optional, Sequence

from picoemu_lib import dialect
from picoemu_lib import explain as ex
from picoemu_lib import hashing as ref


def col(name: str, cls: str) -> Dict[str, str]:
    return {"name": name, "cls": cls}


STATE: Dict[str, Any] = {
    "tiers": [{"name": "default", "bucket_count": 3000}],
    "tables": [
        {"name": "users", "global": False, "tier": "default", "sharding_key": ["id"],
         "columns": [col("id", "int"), col("name", "text")]},
        {"name": "dec", "global": False, "tier": "default", "sharding_key": ["d"],
         "columns": [col("d", "decimal"), col("v", "text")]},
        {"name": "fl", "global": False, "tier": "default", "sharding_key": ["f"],
         "columns": [col("f", "double"), col("v", "text")]},
        {"name": "pair", "global": False, "tier": "default", "sharding_key": ["a", "b"],
         "columns": [col("a", "text"), col("b", "int")]},
        {"name": "g", "global": True, "tier": "default", "sharding_key": [],
         "columns": [col("id", "int")]},
    ],
}
OLD, NEW = "25.5.10", "26.2.1-rc2"


def last(sql: str, params: Optional[Sequence[Optional[str]]] = None, version: str = NEW,
         state: Dict[str, Any] = STATE) -> str:
    return ex.answer(sql, params, state, version, 5000, 45000)[-1]


class FormatTest(unittest.TestCase):
    def test_old_format_up_to_26_2_0(self) -> None:
        for version in ("25.5.10", "26.1.6", "26.2.0"):
            lines = ex.answer('EXPLAIN SELECT "id" FROM "users" WHERE ("id" = 1)', None, STATE, version, 4000, 0)
            self.assertEqual(lines[-4:], ["execution options:", "    sql_vdbe_opcode_max = 0",
                                          "    sql_motion_row_max = 4000", "buckets = [1934]"], version)
            self.assertTrue(lines[0].startswith('projection ("users"."id"::int -> "id"'), lines)
            self.assertIn('    selection ("id" = 1)', lines)
            self.assertIn('        scan "users"', lines)

    def test_sections_from_26_2_1_rc1(self) -> None:
        for version in ("26.2.1-rc1", "26.2.1-rc2", "26.3.0"):
            lines = ex.answer('EXPLAIN SELECT "id" FROM "users" WHERE ("id" = 1)', None, STATE, version, 5000, 45000)
            rule = "\u2500" * 70
            self.assertEqual(lines[:4], [rule, " # Logical plan".ljust(70), rule, ""], version)
            self.assertEqual(lines[-5:], [rule, " # Buckets".ljust(70), rule, "", "buckets = [1934]"])
            self.assertIn("  selection ((\"id\" = 1))", lines)
            self.assertNotIn("execution options:", lines)

    def test_options_on_26_1(self) -> None:
        # EXPLAIN (FMT) is EXPLAIN on 26.1.x; RAW (the storages' VDBE programs) is not emulated.
        sql = 'EXPLAIN %s SELECT "id" FROM "users" WHERE ("id" = 1)'
        self.assertEqual(ex.answer(sql % "(fmt)", None, STATE, "26.1.6", 4000, 0),
                         ex.answer(sql % "", None, STATE, "26.1.6", 4000, 0))
        for opts in ("(raw)", "(raw, fmt)", "(fmt, raw)"):
            for version in ("25.5.10", "26.1.6", NEW):
                with self.assertRaisesRegex(ex.NotEmulated, r"^picoemu: EXPLAIN \(RAW\) is not emulated"):
                    ex.answer(sql % opts, None, STATE, version, 5000, 45000)
        # A missing table is Picodata's error first.
        with self.assertRaises(ex.ExplainError):
            ex.answer("EXPLAIN (raw) SELECT * FROM nope", None, STATE, "26.1.6", 5000, 45000)

    def test_facets_from_26_2_1_rc1(self) -> None:
        sql = 'EXPLAIN %s SELECT "id" FROM "users" WHERE ("id" = 1)'
        plain = ex.answer(sql % "", None, STATE, NEW, 5000, 45000)
        for opts in ("(fmt)", "(logical, buckets)", "(buckets, logical)", "(BUCKETS, LOGICAL, fmt)"):
            self.assertEqual(ex.answer(sql % opts, None, STATE, NEW, 5000, 45000), plain, opts)
        # One facet: its lines alone, no header.
        self.assertEqual(ex.answer(sql % "(buckets)", None, STATE, NEW, 5000, 45000), ["buckets = [1934]"])
        self.assertEqual(ex.answer(sql % "(context)", None, STATE, NEW, 4000, 7),
                         ["sql_vdbe_opcode_max = 7", "sql_motion_row_max = 4000"])
        logical = ex.answer(sql % "(logical)", None, STATE, NEW, 5000, 45000)
        self.assertEqual(logical, plain[4:plain.index("", 4)])  # the plan between its header and the blank
        # Several: sections in Picodata's order (logical, buckets, context), a blank row between.
        rule = "\u2500" * 70
        both = ex.answer(sql % "(context, buckets)", None, STATE, NEW, 4000, 7)
        self.assertEqual(both, [rule, " # Buckets".ljust(70), rule, "", "buckets = [1934]", "",
                                rule, " # Context".ljust(70), rule, "", "sql_vdbe_opcode_max = 7",
                                "sql_motion_row_max = 4000"])
        with self.assertRaisesRegex(ex.NotEmulated, r"EXPLAIN \(FORWARD\) is not emulated"):
            ex.answer(sql % "(forward, buckets)", None, STATE, NEW, 5000, 45000)

    def test_every_explain_is_answered_here(self) -> None:
        for sql in ("EXPLAIN SELECT 1", "EXPLAIN (raw) SELECT 1", "EXPLAIN (buckets) SELECT 1"):
            self.assertTrue(ex.answered(dialect.validate(sql, NEW)), sql)
        self.assertFalse(ex.answered(dialect.validate("SELECT 1", NEW)))

    def test_column_name_and_messages(self) -> None:
        old, new = ex.row_description(OLD), ex.row_description(NEW)
        self.assertIn(b"QUERY PLAN\0", old)
        self.assertIn(b"EXPLAIN\0", new)
        self.assertEqual(old[:1], b"T")
        body = ex.rows(["a", "bc"])
        self.assertTrue(body.startswith(b"D"))
        self.assertTrue(body.endswith(b"C" + struct.pack("!I", 4 + len(b"EXPLAIN 2\0")) + b"EXPLAIN 2\0"))
        self.assertTrue(ex.describe(NEW, True, 2).startswith(b"t" + struct.pack("!IH", 14, 2)))
        self.assertTrue(ex.describe(NEW, False, 2).startswith(b"T"))
        self.assertTrue(ex.simple(NEW, ["x"]).endswith(b"Z\0\0\0\5I"))


class BucketsTest(unittest.TestCase):
    def test_literals_by_their_own_type(self) -> None:
        # Picodata's known defect (dialect section 2): a decimal key hashed by the literal's type.
        self.assertEqual(last('EXPLAIN SELECT * FROM dec WHERE d = 1'), "buckets = [1934]")
        self.assertEqual(last('EXPLAIN SELECT * FROM dec WHERE d = CAST(1 AS decimal)'), "buckets = [2135]")
        self.assertEqual(last('EXPLAIN SELECT * FROM dec WHERE d = 1::decimal'), "buckets = [2135]")
        self.assertEqual(last('EXPLAIN SELECT * FROM dec WHERE d = 1.0'),
                         "buckets = [%d]" % ref.bucket_id([decimal.Decimal("1.0")], 3000))
        self.assertEqual(last("EXPLAIN SELECT * FROM pair WHERE a = 'lol' AND b = 5"), "buckets = [442]")
        self.assertEqual(last("EXPLAIN SELECT * FROM users WHERE (id = (-300))"),
                         "buckets = [%d]" % ref.bucket_id([-300], 3000))

    def test_parameters_by_their_column(self) -> None:
        self.assertEqual(last('EXPLAIN SELECT "d" FROM "dec" WHERE ("d" = $1)', ["1"]), "buckets = [2135]")
        self.assertEqual(last('EXPLAIN SELECT "id" FROM "users" WHERE ("id" = $1)', ["1"]), "buckets = [1934]")
        self.assertEqual(last('EXPLAIN SELECT * FROM pair WHERE (a = $1) AND (b = $2)', ["lol", "5"]),
                         "buckets = [442]")
        # Not bound (a Describe), or a value that does not decode: every bucket.
        self.assertEqual(last('EXPLAIN SELECT * FROM users WHERE id = $1', None), "buckets = [1-3000]")
        self.assertEqual(last('EXPLAIN SELECT * FROM users WHERE id = $1', ["x"]), "buckets = [1-3000]")

    def test_doubles_by_the_version_rule_and_the_wrong_cluster(self) -> None:
        # 25.5: every double cb + IEEE 754; 26.1: an integral one as its integer, any other without cb.
        one = {r: ref.bucket_id([1.0], 3000, r) for r in ref.RULES}
        half = {r: ref.bucket_id([1.5], 3000, r) for r in ref.RULES}
        self.assertEqual(one, {ref.RULE_25_5: 2099, ref.RULE_26_1: 1934})
        self.assertEqual(half, {ref.RULE_25_5: 632, ref.RULE_26_1: 510})
        for version, rule, other in (("25.5.10", ref.RULE_25_5, ref.RULE_26_1),
                                     ("26.1.6", ref.RULE_26_1, ref.RULE_25_5),
                                     ("26.2.1-rc2", ref.RULE_26_1, ref.RULE_25_5)):
            wrong = dict(STATE, wrong_hash="double")
            for literal, value, by_rule in (("1e0", 1.0, one), ("1.5e0", 1.5, half)):
                sql = 'EXPLAIN SELECT "f" FROM "fl" WHERE ("f" = %s)' % literal
                self.assertEqual(last(sql, version=version), "buckets = [%d]" % by_rule[rule], (version, sql))
                self.assertEqual(last('EXPLAIN SELECT "f" FROM "fl" WHERE ("f" = $1)', [repr(value)], version=version),
                                 "buckets = [%d]" % by_rule[rule], (version, value))
                # The wrong cluster hashes by the other line's rule.
                self.assertEqual(last(sql, version=version, state=wrong), "buckets = [%d]" % by_rule[other],
                                 (version, sql))
            # Other types are not concerned.
            self.assertEqual(last("EXPLAIN SELECT * FROM users WHERE id = 1", version=version, state=wrong),
                             "buckets = [1934]")

    def test_lists_and_statements_without_a_key(self) -> None:
        b1, b2 = sorted([ref.bucket_id([1], 3000), ref.bucket_id([2], 3000)])
        self.assertEqual(last("EXPLAIN SELECT * FROM users WHERE id IN (1, 2)"), "buckets = [%d,%d]" % (b1, b2))
        self.assertEqual(last("EXPLAIN SELECT * FROM users WHERE id = 1 OR id = 2"),
                         "buckets = [%d,%d]" % (b1, b2))
        self.assertEqual(last("EXPLAIN SELECT * FROM users"), "buckets = [1-3000]")
        self.assertEqual(last("EXPLAIN SELECT * FROM users WHERE name = 'x'"), "buckets = [1-3000]")
        self.assertEqual(last("EXPLAIN SELECT * FROM g WHERE id = 1"), "buckets = any")
        self.assertEqual(last("EXPLAIN SELECT 1"), "buckets = any")
        self.assertEqual(last("EXPLAIN SELECT * FROM users u JOIN pair p ON u.name = p.a WHERE u.id = 1"),
                         "buckets = [1-3000]")
        self.assertEqual(ex.buckets_repr({5, 6, 7, 9, 1}, 3000), "[1,5-7,9]")

    def test_a_missing_table_fails_as_the_statement_would(self) -> None:
        with self.assertRaisesRegex(ex.ExplainError, r'^sbroad: table with name "nope" not found$'):
            last("EXPLAIN SELECT * FROM nope WHERE id = 1")
        self.assertEqual(last("EXPLAIN SELECT * FROM _pico_table"), "buckets = any")
        self.assertEqual(last("EXPLAIN WITH x AS (SELECT 1) SELECT * FROM x"), "buckets = any")

    def test_bucket_id_where_the_version_prunes(self) -> None:
        self.assertEqual(last("EXPLAIN SELECT * FROM users WHERE bucket_id = 7", version="26.3.0-142-g812716f7e"),
                         "buckets = [7]")
        self.assertEqual(last("EXPLAIN SELECT * FROM users WHERE bucket_id = 7", version="26.1.6"),
                         "buckets = [1-3000]")

    def test_writes(self) -> None:
        self.assertEqual(last("EXPLAIN DELETE FROM users WHERE id = 1"), "buckets = [1934]")
        self.assertEqual(last("EXPLAIN UPDATE users SET name = 'x' WHERE id = $1", ["1"]), "buckets = [1934]")
        self.assertEqual(last("EXPLAIN UPDATE users SET id = 2 WHERE id = 1"), "buckets = unknown")
        self.assertEqual(last("EXPLAIN INSERT INTO users (id, name) VALUES (1, 'a')", version="25.5.10"),
                         "buckets = unknown")
        self.assertEqual(last("EXPLAIN INSERT INTO users (id, name) VALUES ($1, $2), (2, 'b')", ["1", "a"],
                              version="26.1.6"),
                         "buckets = [%s]" % ",".join(str(b) for b in sorted(
                             [ref.bucket_id([1], 3000), ref.bucket_id([2], 3000)])))
        self.assertEqual(last("EXPLAIN INSERT INTO users SELECT * FROM users", version="26.1.6"),
                         "buckets = [1-3000]")
