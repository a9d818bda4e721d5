"""Which writes the front runs once per replicaset, and the one answer it gives (picoemu_lib.parts)."""

import struct
import unittest
from typing import List, Optional, Tuple

from picoemu_lib import parts as emu_parts
from picoemu_lib.buckets import multirange


class WritePartsTest(unittest.TestCase):
    """parts: which writes the front runs once per replicaset, and the one answer it gives."""
    STATE = {"tables": [{"name": "users", "global": False, "tier": "default", "sharding_key": ["id"]},
                        {"name": "kv", "global": False, "tier": "default", "sharding_key": ["k", "n"]},
                        {"name": "g", "global": True, "tier": None, "sharding_key": []},
                        {"name": "solo", "global": False, "tier": "one", "sharding_key": ["id"]}],
             "buckets": {"default": [[1, 10, "default_1"], [11, 20, "default_2"], [21, 30, "default_1"]],
                         "one": [[1, 30, "one_1"]]}}
    BOTH = [("default_1", "{[1,10],[21,30]}"), ("default_2", "{[11,20]}")]

    def parts(self, sql: str, insert_rows: Optional[int] = None) -> Optional[List[Tuple[str, str]]]:
        parts = emu_parts.write_parts(sql, insert_rows, self.STATE)
        return None if parts is None else [(p.rs, multirange(p.ranges)) for p in parts]

    def test_part_settings(self) -> None:
        """A part is the set of buckets its replicaset owned when the statement arrived; an UPDATE
        or DELETE restricts its reads to them, an INSERT only the rows it writes."""
        upd = emu_parts.write_parts("UPDATE users SET v = 1", None, self.STATE)
        assert upd is not None
        self.assertEqual(upd[0].settings(), [("picoemu.part_table", "users"),
                                             ("picoemu.part_buckets", "{[1,10],[21,30]}"),
                                             ("picoemu.part_reads", "on")])
        ins = emu_parts.write_parts("INSERT INTO users VALUES (1, 'a'), (2, 'b')", 2, self.STATE)
        assert ins is not None
        self.assertEqual(ins[1].settings()[2], ("picoemu.part_reads", "off"))
        self.assertEqual([v for _, v in emu_parts.NO_PART], ["", "", ""])

    def test_split(self) -> None:
        for sql in ("UPDATE users SET v = 1", 'UPDATE "users" SET "v" = 1 OPTION (sql_vdbe_opcode_max = 0)',
                    "DELETE FROM public.users WHERE v > 3", "UPDATE users SET v = 1 WHERE id = 1 OR id = 2",
                    "DELETE FROM users WHERE id IN (1, 2)", "UPDATE users SET v = 1 WHERE id > 5",
                    "UPDATE users SET v = (SELECT 1 WHERE id = 5)", "DELETE FROM users WHERE NOT (id = 1)",
                    "UPDATE kv SET v = 'x' WHERE k = 'a'", "INSERT INTO users SELECT * FROM users"):
            self.assertEqual(self.parts(sql), self.BOTH, sql)
        self.assertEqual(self.parts("INSERT INTO users VALUES (1, 'a'), (2, 'b')", 2), self.BOTH)

    def test_not_split(self) -> None:
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

    def test_merge(self) -> None:
        def m(typ: bytes, body: bytes) -> bytes:
            return typ + struct.pack("!I", len(body) + 4) + body
        ok1 = m(b"C", b"UPDATE 3\0") + m(b"Z", b"I")
        ok2 = m(b"N", b"Mnote\0\0") + m(b"C", b"UPDATE 4\0") + m(b"Z", b"I")
        err = m(b"E", b"SERROR\0C08001\0Mdown\0\0") + m(b"Z", b"I")
        self.assertEqual(emu_parts.merge_answers([ok1, ok2]), m(b"N", b"Mnote\0\0") + m(b"C", b"UPDATE 7\0"))
        self.assertEqual(emu_parts.merge_answers([ok1, err]), m(b"E", b"SERROR\0C08001\0Mdown\0\0"))
        self.assertEqual(emu_parts.merge_answers([m(b"C", b"INSERT 0 2\0"), m(b"C", b"INSERT 0 0\0")]),
                         m(b"C", b"INSERT 0 2\0"))
