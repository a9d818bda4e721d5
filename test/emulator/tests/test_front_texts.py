"""Picodata's answers where the fronts answer for it (picoemu_lib.front.texts, options, rewrite): the
startup options as strictly as Picodata reads them, the texts and SQLSTATEs of the limits, of the
storage's errors, of a demoted master and of Bind, and the text sent for version()."""

import struct
import unittest
from typing import Dict, List, Optional, Tuple

from picoemu_lib import caps as emu_caps
from picoemu_lib import route as emu_route
from picoemu_lib.front import rewrite, texts, wire
from picoemu_lib.front.options import parse_startup_options

ALL = emu_caps.BUILDS
NEWEST = emu_caps.DEFAULT_BUILD


class StartupOptionsTest(unittest.TestCase):
    """The `options` startup parameter, read as strictly as Picodata reads it (ClientParams::new,
    src/pgproto/client/startup.rs at 25.5.10 to 26.2.1-rc2). Picodata closes the connection on an error
    (the front: no ErrorResponse)."""

    def test_what_picoroute_sends(self) -> None:
        for v in ALL:
            expected: Dict[str, object] = {}
            if emu_caps.has("read_preference", v):
                expected["read_preference"] = "replica"
            if emu_caps.has("stmt_invalidation", v):
                expected["pico_stmt_invalidation"] = True
            self.assertEqual(parse_startup_options("read_preference=replica,pico_stmt_invalidation=true", v),
                             expected, v)  # older: warnings only
            self.assertEqual(parse_startup_options(None, v), {})

    def test_names_exact_values_strict(self) -> None:
        parse = parse_startup_options
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


class ErrorTextTest(unittest.TestCase):
    """Picodata's texts and SQLSTATEs for what the fronts answer or pass on."""

    def test_limit_texts_by_version(self) -> None:
        """sbroad: before every limit text (traft's Error::Sbroad); the planner's check of INSERT ... VALUES
        says unexpected number of values before 26.2.1-rc1; from 26.2.1-rc1 the EXPLAIN (RAW) tag."""
        plain = "Exceeded maximum number of rows (5000) in virtual table: 5001"
        for v in ("25.5.10", "26.1.6", "26.2.0", "26.1.1-5-gabc"):
            self.assertEqual(texts.row_limit_text(5000, 5001, v), "sbroad: " + plain, v)
            self.assertEqual(texts.row_limit_text(5000, 5001, v, values=True),
                             "sbroad: unexpected number of values: " + plain, v)
            self.assertEqual(texts.vdbe_limit_text(7, v),
                             "sbroad: Reached a limit on max executed vdbe opcodes. Limit: 7", v)
        for v in ("26.2.1-rc1", "26.2.1-rc2", "26.3.0"):
            for values in (False, True):
                self.assertEqual(texts.row_limit_text(5000, 5001, v, values),
                                 "sbroad: Query 1 from EXPLAIN (RAW): " + plain, v)
            self.assertEqual(texts.vdbe_limit_text(7, v),
                             "sbroad: Query 1 from EXPLAIN (RAW): Reached a limit on max executed vdbe opcodes. "
                             "Limit: 7")

    def test_read_only_refusal_by_version(self) -> None:
        demoted = wire.error_msg("25006", "cannot execute UPDATE in a read-only transaction")
        for v in ALL:
            text = self.fields(texts.read_only_refusal(demoted, v))[2][1]
            self.assertTrue(text.startswith("sbroad: "), (v, text))
            self.assertIn("retry is required" if emu_caps.has("switchover_refusal", v)
                          else "Can't modify data on a read-only instance", text)

    def test_bind_texts(self) -> None:
        json_oid, ts_oid = texts.JSON_OID, texts.TIMESTAMPTZ_OID

        def bind(*values: bytes) -> bytes:
            body = struct.pack("!hh", 1, 0) + struct.pack("!h", len(values))
            for v in values:
                body += struct.pack("!i", len(v)) + v
            return body

        self.assertEqual(texts.check_bind(bind(b"1", b'{"a": 1}'), 0, [20, json_oid]),
                         ("0A000", "failed to bind parameter $2: feature is not supported: cannot represent json "
                                   "in sbroad"))
        self.assertEqual(texts.check_bind(bind(b"01/02/2025"), 0, [ts_oid]),
                         ("22P02", "failed to bind parameter $1: decoding error: '01/02/2025' is not a valid "
                                   "timestamptz"))
        self.assertIsNone(texts.check_bind(bind(b"2025-01-02 00:00:00+00"), 0, [ts_oid]))

    def test_version_calls_rewritten(self) -> None:
        sql = "SELECT version(), \"version\", x.version() FROM t WHERE v = version ( )"
        out = rewrite.version_call_text(sql, emu_route.statement_tokens(sql))
        self.assertEqual(out, 'SELECT _picoemu.picodata_version(), "version", x.version() FROM t WHERE v = '
                              '_picoemu.picodata_version()')

    def fields(self, m: bytes) -> List[Tuple[str, str]]:
        return [(k, wire.error_field(m, k.encode()).decode()) for k in "SCMDH"]

    def test_storage_errors_in_picodatas_words(self) -> None:
        # Each behind traft's "sbroad: ", as every SQL-path error reaches a pgproto client (README).

        def sent(code: str, text: str, detail: Optional[str] = None, bind: bool = False) -> List[Tuple[str, str]]:
            body = wire.error_body(code, text, hint="a hint")
            if detail:
                body = body[:-1] + b"D" + wire.cstr(detail) + b"\0"
            m = wire.msg(b"E", body)
            tables = [{"name": "ty", "columns": [{"name": "id", "type": "int8"}, {"name": "name", "type": "text"},
                                                 {"name": "n", "type": "numeric(10,2)"}]}]
            return self.fields(texts.picodata_error(m, bind=bind, tables=tables))[1:3]

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

    def test_server_errors_as_picodata_sends_them(self) -> None:
        def pg(code: str, text: str, sev: str = "ERROR") -> bytes:
            return wire.error_msg(code, text, sev, hint="a hint")
        same = [("XX000", "x"), ("42P05", 'prepared statement "s" already exists'), ("08P01", "bad message")]
        for code, text in same:
            self.assertEqual(self.fields(texts.picodata_error(pg(code, text))),
                             [("S", "ERROR"), ("C", code), ("M", text), ("D", ""), ("H", "")])
        for code, text in [("23505", "duplicate key value violates unique constraint"),
                           ("23502", "null value in column"), ("40001", "could not serialize"),
                           ("42601", "syntax error"), ("22P02", "invalid input syntax for type json"),
                           ("22003", "numeric field overflow"),
                           ("42501", "permission denied for table _pico_replicaset"), ("PE002", "does not own")]:
            self.assertEqual(self.fields(texts.picodata_error(pg(code, text)))[1:3], [("C", "XX000"), ("M", text)])
        # a parameter Picodata cannot decode at Bind keeps its code
        self.assertEqual(self.fields(texts.picodata_error(pg("22P02", "invalid input"), bind=True))[1],
                         ("C", "22P02"))
        self.assertEqual(self.fields(texts.picodata_error(pg("42P01", 'relation "nope" does not exist')))[1:3],
                         [("C", "XX000"), ("M", 'sbroad: table with name "nope" not found')])
        self.assertEqual(self.fields(texts.picodata_error(pg("PE001", "picoemu: forward=off: ...")))[1:3],
                         [("C", "XX000"), ("M", texts.STRICT_TEXT)])
        fatal = pg("57P01", "terminating connection due to administrator command", "FATAL")
        self.assertEqual(texts.picodata_error(fatal), fatal)
