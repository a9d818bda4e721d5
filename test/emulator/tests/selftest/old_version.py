"""A cluster of the emulated build without any capability (25.5.10): no bucket_id pruning, no local
execution, replicas never serve reads, no strict mode, no DNF limit, doubles by 25.5's rule; a key
given as a parameter is routed by its value. Then a bounded concurrent load during moves and
rebalances (move_race)."""

import unittest
from typing import Dict, List, Optional, Sequence

from picoemu_lib import caps as emu_caps
from picoemu_lib import hashing
from picoemu_lib import pgwire as w

from ..support.cluster import BARE, BASE, emu, psql, q, q1, qerr, status, touched
from .hashes import check_hash, double_key
from .move_race import move_race


def old_version_cluster(tc: unittest.TestCase, d: str) -> None:
    """A build without any capability (25.5.10): no bucket_id pruning, no local execution, replicas never
    serve reads, no strict mode. Then a bounded concurrent writer during moves and rebalances: nothing
    acknowledged is lost."""
    emu(d, "--base-port", str(BASE + 60), "up", "--picodata", BARE)
    s = status(d)
    p1, p2, p3, p4 = [i["port"] for i in s["instances"]]
    with tc.subTest("25.5: status --json"):
        tc.assertEqual(s["picodata_version"], BARE, str(s.get("capabilities")))
        tc.assertEqual(s["capabilities"], {c: False for c in emu_caps.table()["capabilities"]},
                       str(s.get("capabilities")))
    with tc.subTest("25.5: _pico_instance.picodata_version"):
        tc.assertEqual(q1(p4, "SELECT DISTINCT picodata_version FROM _pico_instance",
                           "picoroute"), BARE)
    with tc.subTest("25.5: version() through a front is the bare build, no 'picodata ' (before 26.2.1-rc1)"):
        tc.assertEqual(q1(s["instances"][3]["front_port"], "SELECT version()", "picoroute"), BARE)
    r = emu(d, "strict", "on", expect_ok=False)
    with tc.subTest("25.5: `strict on` fails: forward=off does not exist"):
        tc.assertEqual(r.returncode, 1, r.stderr)
        tc.assertIn("does not exist in Picodata %s" % BARE, r.stderr, r.stderr)
        tc.assertFalse(status(d)["strict"], r.stderr)
    with tc.subTest("25.5: a session cannot turn strict mode on either"):
        tc.assertNotIn("forward=off", qerr(p1, "SELECT count(*) FROM users", options="-c picoemu.strict=on"))
    with tc.subTest("25.5: the storage hashes by 25.5's rule (picoemu.hash_rule)"):
        tc.assertEqual(q1(p3, "SELECT current_setting('picoemu.hash_rule')"), "25.5")
    check_hash(tc, p3, hashing.RULE_25_5)
    double_key(tc, d, p1, BARE, integral=False)
    emu(d, "create-table", "users", "--columns", "id int8, name text, v int8")
    emu(d, "load", "users", "--rows", "500")
    ports = [p1, p2, p3, p4]
    t = touched(ports, lambda: q(p1, "SELECT * FROM users WHERE bucket_id = 1934", "picoroute"))
    with tc.subTest("25.5: bucket_id = N is only a filter: every replicaset's master is asked"):
        tc.assertEqual(t, [p1, p3], str(t))
    t = touched(ports, lambda: q(p1, "SELECT * FROM users WHERE id = 1 AND bucket_id = 1934", "picoroute"))
    with tc.subTest("25.5: a read that fixes the sharding key is routed to the owner only"):
        tc.assertEqual(t, [p3], str(t))
    key_as_parameter(tc, ports, s["instances"][0]["front_port"], p1, p3)
    vs = ", ".join(str(i) for i in range(600))
    t = touched(ports, lambda: q(s["instances"][0]["front_port"],
                                 "SELECT id FROM users WHERE id = 1 AND v IN (%s)" % vs, "picoroute"))
    with tc.subTest("25.5: no DNF limit: 600 chains through a front, still routed by the key"):
        tc.assertEqual(t, [p3], str(t))
    t = touched(ports, lambda: q(p1, "SELECT * FROM users WHERE id = 1 OR id = 2", "picoroute"))
    with tc.subTest("25.5: a key the emulator cannot read (OR) asks every master"):
        tc.assertEqual(t, [p1, p3], str(t))
    t = touched(ports, lambda: q(p1, "SELECT * FROM users WHERE bucket_id BETWEEN 1501 AND 3000", "picoroute"))
    with tc.subTest("25.5: bucket_id BETWEEN is only a filter too"):
        tc.assertEqual(t, [p1, p3], str(t))
    plan = "\n".join(r[0] for r in q(p1, "EXPLAIN SELECT * FROM users WHERE bucket_id = 5"))
    with tc.subTest("25.5: a read of an owned bucket at its master costs a hop (to itself, no local execution)"):
        tc.assertIn("users__self", plan, plan)
        tc.assertNotIn("users_bucket_id", plan, plan)
    t = touched(ports, lambda: psql(p2, "SET picoemu.read_preference = replica; SELECT count(*) FROM users", "picoroute"))
    with tc.subTest("25.5: a replica never serves reads, even with read_preference = replica"):
        tc.assertEqual(t, [p1, p3], str(t))
    with tc.subTest("25.5: rows read through the hops"):
        tc.assertEqual(q1(p2, "SELECT count(*) FROM users", "picoroute"), "500")
    with tc.subTest("25.5: read_preference is no cluster setting, there are no unlogged tables nor opts"):
        tc.assertIn("not a cluster setting", emu(d, "set", "read_preference", "replica", expect_ok=False).stderr)
        tc.assertIn("do not exist", emu(d, "create-table", "scratch", "--columns", "id int8", "--unlogged",
                                        expect_ok=False).stderr)
        tc.assertIn("opts", qerr(p1, "SELECT opts FROM _pico_table"))
    move_race(tc, d, [s["instances"][0]["front_port"], s["instances"][2]["front_port"]], p2)


def key_as_parameter(tc: unittest.TestCase, ports: List[int], front: int, p1: int, p3: int) -> None:
    """A sharding key given as a bound parameter ("id" = $1) is routed by its value, as Picodata routes
    after Bind: sent through p1's front, only the owner's (p3) storage is read, the rows are right, and
    a named statement executed with keys of both owners in one session reaches each owner (no plan
    folded for another key)."""
    def rows(answers: List[w.Answer]) -> List[List[Optional[str]]]:
        errors = [a[1] for a in answers if a[0] == "E"]
        tc.assertEqual(errors, [], str(errors))
        return [a[1] for a in answers if a[0] == "D"]

    def once(sql: str, params: Sequence[object]) -> List[List[Optional[str]]]:
        c = w.Conn(front, "picoroute", "picoroute")
        try:
            return rows(w.extended(c, sql, params))
        finally:
            c.close()
    got: Dict[str, List[List[Optional[str]]]] = {}
    t = touched(ports, lambda: got.update(r=once('SELECT "name" FROM "users" WHERE ("id" = $1)', [1])))
    with tc.subTest("25.5: a key given as a parameter reaches only its owner"):
        tc.assertEqual(t, [p3], str(t))
        tc.assertEqual(got["r"], [["name_1"]])
    t = touched(ports, lambda: once('UPDATE "users" SET "v" = "v" WHERE ("id" = $1) AND ("v" >= $2)', [1, 0]))
    with tc.subTest("25.5: an UPDATE by a key given as a parameter reaches only its owner"):
        tc.assertEqual(t, [p3], str(t))
    t = touched(ports, lambda: once('SELECT "name" FROM "users" WHERE ("id" = $1) OR ("v" = $2)', [1, -1]))
    with tc.subTest("25.5: a parameter key under OR is not routed: every master is asked"):
        tc.assertEqual(t, [p1, p3], str(t))
    seen: List[List[List[Optional[str]]]] = []
    c = w.Conn(front, "picoroute", "picoroute")
    try:
        c.send(w.parse('SELECT "name" FROM "users" WHERE "id" = $1', name="s") + w.sync())
        c.until_ready()
        for key in [1] * 7 + [5, 1, 5]:  # id 1: bucket 1934 (p3), id 5: bucket 219 (p1)
            c.send(w.bind([key], stmt="s") + w.execute() + w.sync())
            seen.append(rows(c.until_ready()))
    finally:
        c.close()
    with tc.subTest("25.5: a named statement routes every execution by its own key"):
        tc.assertEqual(seen, [[["name_1"]]] * 7 + [[["name_5"]], [["name_1"]], [["name_5"]]], str(seen))
