"""The SQL the emulator installs, generated without a server (picoemu_lib.sqlgen, picoemu_lib.rows): the
columns of `create-table`, the SQL files and their placeholders, the objects of a topology (the
views' branches over the bucket ranges, pruning by version), and the values of stored rows."""

import decimal
import unittest
import uuid

from picoemu_lib import rows
from picoemu_lib import state as emu_state
from picoemu_lib.errors import EmuError
from picoemu_lib.sqlgen import catalog, columns, text, topology


def cluster(version: str) -> emu_state.State:
    """Two replicasets of one instance, 30 buckets, a sharded and a global table."""
    st = emu_state.new_state("/nonexistent/state.json", 20000, [("default", 2, 1, 30)], False, "scram-sha-256",
                             picodata_version=version)
    tier = st.tier("default")
    for _ in range(2):
        rs = st.new_replicaset(tier)
        rs["master"] = st.new_instance(rs, tier, 1)["name"]
    st.d["buckets"]["default"] = [[1, 15, "default_1"], [16, 30, "default_2"]]
    cols = columns.parse_columns("id int8, name text")
    st.tables.append({"name": "users", "id": 1025, "columns": cols, "primary_key": ["id"], "sharding_key": ["id"],
                      "global": False, "tier": "default", "schema_version": 2, "unlogged": False})
    st.tables.append({"name": "g", "id": 1026, "columns": cols, "primary_key": ["id"], "sharding_key": [],
                      "global": True, "tier": None, "schema_version": 3, "unlogged": False})
    return st


class ColumnsTest(unittest.TestCase):
    def test_types_classes_and_scales(self) -> None:
        cols = columns.parse_columns("id int8, Name varchar(20) not null, n numeric(12, 2), d decimal, "
                                     "f double precision, t timestamptz, u uuid, b bool, s smallint")
        self.assertEqual([(c["name"], c["type"], c["cls"], c["pico"], c["not_null"], c["scale"]) for c in cols], [
            ("id", "int8", "int", "integer", False, None), ("name", "varchar(20)", "text", "string", True, None),
            ("n", "numeric(12,2)", "decimal", "decimal", False, 2), ("d", "numeric", "decimal", "decimal", False, None),
            ("f", "float8", "double", "double", False, None), ("t", "timestamptz", "datetime", "datetime", False, None),
            ("u", "uuid", "uuid", "uuid", False, None), ("b", "boolean", "bool", "boolean", False, None),
            ("s", "int2", "int", "integer", False, None)])

    def test_refusals(self) -> None:
        for spec, why in (("id json", "unsupported column type"), ("bucket_id int8", "bad column name"),
                          ("id int8, id text", "duplicate"), ("", "no column"), ("id", "cannot parse")):
            with self.assertRaisesRegex(EmuError, why, msg=spec):
                columns.parse_columns(spec)

    def test_the_storage_hash_of_a_row(self) -> None:
        t = {"columns": columns.parse_columns("k text, n int4"), "sharding_key": ["k", "n"]}
        self.assertEqual(columns.hash_expr(t, 3000), '_picoemu.bucket_id(_picoemu.enc_text((NEW."k")::text) || '
                                                     '_picoemu.enc_int((NEW."n")::int8), 3000)')


class SqlFileTest(unittest.TestCase):
    def test_quoting(self) -> None:
        self.assertEqual(text.ident('a"b'), '"a""b"')
        self.assertEqual([text.lit(v) for v in (None, True, 3, 1.5, "it's")], ["NULL", "true", "3", "1.5", "'it''s'"])

    def test_placeholders_must_match(self) -> None:
        out = text.sql_file("store_trigger.sql", fn="f", hash="h", tname="'t'", tier="'d'", local="l")
        self.assertNotIn("{{", out)
        self.assertFalse(out.startswith("--"), out[:80])  # the documentation header is not sent
        with self.assertRaisesRegex(EmuError, "placeholders"):
            text.sql_file("store_trigger.sql", fn="f")
        with self.assertRaisesRegex(EmuError, "cannot read"):
            text.sql_file("no_such_file.sql")


class TopologyTest(unittest.TestCase):
    def test_bucket_predicates(self) -> None:
        self.assertEqual(topology.bucket_pred([]), "false")
        self.assertEqual(topology.bucket_pred([(1, 10), (21, 30)]),
                         "(bucket_id BETWEEN 1::int8 AND 10::int8 OR bucket_id BETWEEN 21::int8 AND 30::int8)")

    def test_views_prune_by_bucket_id_where_the_build_does(self) -> None:
        for version, prunes in (("26.2.1-rc2", True), ("26.2.1-rc1", False), ("25.5.10", False)):
            st = cluster(version)
            ddl = topology.ddl_sql(st, "default_1", {"default_1": 20200, "default_2": 20201})
            self.assertEqual("bucket_id = _bucket AND (_bucket BETWEEN 16::int8 AND 30::int8)" in ddl, prunes, version)
            self.assertIn("(_bucket BETWEEN 1::int8 AND 15::int8)", ddl)
            self.assertIn('CREATE FOREIGN TABLE _picoemu_remote."users__default_2"', ddl)
            self.assertNotIn('"users__replica"', ddl)  # no replica: no foreign table on picoemu_replica
            self.assertEqual(ddl, topology.ddl_sql(st, "default_1", {"default_1": 20200, "default_2": 20201}))
            self.assertEqual(len(topology.ddl_hash(ddl)), 16)

    def test_a_move_changes_the_objects(self) -> None:
        st = cluster("26.2.1-rc2")
        ports = {"default_1": 20200, "default_2": 20201}
        before = topology.ddl_sql(st, "default_1", ports)
        st.d["buckets"]["default"] = [[1, 20, "default_1"], [21, 30, "default_2"]]
        after = topology.ddl_sql(st, "default_1", ports)
        self.assertNotEqual(topology.ddl_hash(before), topology.ddl_hash(after))
        self.assertIn("WHEN %s BETWEEN 1 AND 20 THEN 'default_1'", after.replace("OLD.bucket_id", "%s"))

    def test_catalog_rows(self) -> None:
        st = cluster("26.2.1-rc2")
        sql = catalog.catalog_sql(st)
        self.assertIn("('default', 1, 15, 'default_1', ", sql)
        self.assertIn("('strict', 'off')", sql)
        self.assertEqual(catalog.distribution_json(st.tables[1]), '{"Global":null}')
        self.assertEqual(catalog.opts_json(dict(st.tables[0], unlogged=True)), [{"unlogged": [True]}])


class RowsTest(unittest.TestCase):
    COLS = {c["name"]: c for c in columns.parse_columns("i int8, t text, b bool, f float8, n numeric(8,2), "
                                                         "d numeric, u uuid, ts timestamptz")}

    def test_values_converted_for_their_column(self) -> None:
        c = self.COLS
        self.assertEqual(rows.convert(c["i"], decimal.Decimal("7")), 7)
        self.assertEqual(rows.convert(c["n"], "1.5"), decimal.Decimal("1.50"))
        self.assertEqual(rows.convert(c["d"], decimal.Decimal("1E+2")), decimal.Decimal("100"))
        self.assertEqual(rows.convert(c["f"], 2), 2.0)
        self.assertIsInstance(rows.convert(c["f"], 2), float)
        self.assertEqual(rows.convert(c["u"], "00112233-4455-6677-8899-aabbccddeeff"),
                         uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"))
        self.assertIsNone(rows.convert(c["t"], None))
        for col, bad in (("i", 1.5), ("i", True), ("i", decimal.Decimal("1.5")), ("t", 5), ("b", "true"),
                         ("f", False), ("n", 1.5), ("d", "NaN"), ("u", "x")):
            with self.assertRaises(EmuError, msg=(col, bad)):
                rows.convert(c[col], bad)

    def test_copy_text(self) -> None:
        self.assertEqual([rows.copy_text(v) for v in (None, True, 0.5, "a\tb\\c\nd")],
                         ["\\N", "t", "0.5", "a\\tb\\\\c\\nd"])

    def test_generated_and_given_rows(self) -> None:
        table = {"name": "x", "columns": list(self.COLS.values()), "primary_key": ["i"]}
        first = rows.generate_rows(table, 3, 2)
        self.assertEqual(first, rows.generate_rows(table, 3, 2))
        self.assertEqual(first[0][:5], [3, "t_3", False, 1.5, "0.03"])
        self.assertEqual(rows.parse_values(table, ['{"i": 1, "t": "a"}'])[0][:3], [1, "a", None])
        for bad in ('{"nope": 1}', "[1, 2]", "not json"):
            with self.assertRaises(EmuError, msg=bad):
                rows.parse_values(table, [bad])
