"""Self-test scenario of `picoemu up --private-pgproto` (private_pgproto.c): on a private port, a
session opened with Picodata's startup options is taken, and a sharding key bound to a parameter
(a named statement, postgres_fdw's cursor) reaches only its owner's storage, each execution with its
own key."""

import unittest
from typing import Dict, List, Optional

from picoemu_lib import pgwire as w

from ..support.cluster import emu, status, touched

Rows = List[List[Optional[str]]]


def private_cluster(tc: unittest.TestCase, d: str, base: int) -> None:
    emu(d, "--base-port", str(base), "up", "--replicasets", "2", "--replication-factor", "1",
        "--advertise-private", "--private-pgproto")
    emu(d, "create-table", "users", "--columns", "id int8, name text, v int8")
    emu(d, "load", "users", "--rows", "100")
    s = status(d)
    with tc.subTest("private-pgproto: shown by status"):
        tc.assertTrue(s["private_pgproto"])
    p1, p2 = [i["port"] for i in s["instances"]]
    # id 1: bucket 1934 of 3000, replicaset default_2 (p2); id 5: bucket 219, default_1 (p1)
    seen: List[Rows] = []

    def named() -> None:
        c = w.Conn(p1, "admin", "admin", options="read_preference=leader,pico_stmt_invalidation=true")
        try:
            c.send(w.parse('SELECT "name" FROM "users" WHERE ("id" = $1)', name="s") + w.sync())
            c.until_ready()
            for key in [5] * 7 + [1, 5, 1]:
                c.send(w.bind([key], stmt="s") + w.execute() + w.sync())
                answers = c.until_ready()
                tc.assertEqual(w.errors(answers), [])
                seen.append(w.rows(answers))
        finally:
            c.close()

    t = touched([p1, p2], named)
    with tc.subTest("private-pgproto: Picodata's startup options taken, every key at its owner only"):
        tc.assertEqual(seen, [[["name_5"]]] * 7 + [[["name_1"]], [["name_5"]], [["name_1"]]], str(seen))
        tc.assertEqual(t, [p1, p2], str(t))
    counts: Dict[str, Rows] = {}

    def one_key(key: int, sql: str, cursor: bool = False) -> None:
        c = w.Conn(p1, "admin", "admin")
        try:
            if cursor:  # as postgres_fdw runs it: in a transaction, then fetched
                c.query("BEGIN")
            answers = w.extended(c, sql, [key])
            if cursor:
                answers = c.query("FETCH ALL FROM c1") + c.query("COMMIT")
            tc.assertEqual(w.errors(answers), [])
            counts["rows"] = w.rows(answers)
        finally:
            c.close()

    t = touched([p1, p2], lambda: one_key(1, 'SELECT "name" FROM "users" WHERE ("id" = $1)'))
    with tc.subTest("private-pgproto: a bound key of another replicaset is asked of its owner only"):
        tc.assertEqual(t, [p2], str(t))
        tc.assertEqual(counts["rows"], [["name_1"]])
    t = touched([p1, p2], lambda: one_key(
        1, "DECLARE c1 CURSOR FOR SELECT name FROM public.users WHERE ((id = $1::bigint))", True))
    with tc.subTest("private-pgproto: postgres_fdw's cursor with a bound key reaches the owner only"):
        tc.assertEqual(t, [p2], str(t))
        tc.assertEqual(counts["rows"], [["name_1"]])
    t = touched([p1, p2], lambda: one_key(
        1, "DECLARE c1 CURSOR FOR SELECT name FROM public.users WHERE ((id = $1::numeric))", True))
    with tc.subTest("private-pgproto: a key cast to another type is not routed: every master is asked"):
        tc.assertEqual(t, [p1, p2], str(t))
