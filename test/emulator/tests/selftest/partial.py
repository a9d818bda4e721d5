"""A write that spans both replicasets of a cluster, applied per replicaset as Picodata applies it
(picoemu_lib.parts, front.writeparts): every row and the full count with both masters running; with
a master stopped or a part that fails, the client gets the error and the other part stays applied;
concurrent keyless increments, each applied once."""

import json
import os
import threading
import unittest
from typing import Any, Dict, List, Optional, Sequence, Tuple

from picoemu_lib import pgwire as w
from picoemu_lib.state import Doc

from ..support.cluster import BASE, emu, owner, q, status
from ..support.load import hammer


def partial_write_cluster(tc: unittest.TestCase, d: str) -> None:
    """A write that spans both replicasets is applied per replicaset, each part committed on its
    own, as Picodata's coordinator sends each master its part (picoemu_lib.parts): with both masters
    running it changes every row and reports the full count; with one master stopped, or a part
    that fails, the client gets the error and the other part stays applied. Simple and extended
    protocol, through a front."""
    os.environ["PICOEMU_QUERY_TIMEOUT"] = "1"  # a dead master stalls a statement this long
    try:
        emu(d, "--base-port", str(BASE + 100), "up", "--replicasets", "2", "--replication-factor", "1",
            "--bucket-count", "30")
    finally:
        del os.environ["PICOEMU_QUERY_TIMEOUT"]
    s = status(d)
    inst = {i["name"]: i for i in s["instances"]}
    front, p1, p2 = inst["default_1_1"]["front_port"], inst["default_1_1"]["port"], inst["default_2_1"]["port"]
    emu(d, "create-table", "pw", "--columns", "id int8, v int8")
    emu(d, "load", "pw", "--rows", "40")

    def stored(port: int) -> Tuple[int, int]:  # (rows, sum of v) in a master's storage, on its private port
        n, v = q(port, "SELECT count(*), coalesce(sum(v), 0) FROM _picoemu_local.pw")[0]
        return int(n), int(v)

    def run(sql: str, params: Optional[Sequence[object]] = None) -> Tuple[List[str], List[str]]:
        c = w.Conn(front, "picoroute", "picoroute", timeout=30)
        try:
            ans = w.extended(c, sql, params=params) if params is not None else c.query(sql)
        finally:
            c.close()
        return [v for t, v in ans if t == "C"], ["%s %s" % (e.get("C"), e.get("M")) for e in w.errors(ans)]

    (n1, v1), (n2, v2) = stored(p1), stored(p2)
    with tc.subTest("partial writes: the 40 rows lie on both replicasets"):
        tc.assertEqual(n1 + n2, 40)
        tc.assertTrue(n1 > 0 and n2 > 0, (n1, n2))
    with tc.subTest("partial writes: a keyless UPDATE with both masters running changes all 40 rows"):
        tc.assertEqual(run("UPDATE pw SET v = v + 1"), (["UPDATE 40"], []))
        tc.assertEqual((stored(p1), stored(p2)), ((n1, v1 + n1), (n2, v2 + n2)))
    with tc.subTest("partial writes: the same in the extended protocol, with a parameter"):
        tc.assertEqual(run("UPDATE pw SET v = v + $1 WHERE id > $2", ["10", "0"]), (["UPDATE 40"], []))
        tc.assertEqual((stored(p1), stored(p2)), ((n1, v1 + 11 * n1), (n2, v2 + 11 * n2)))
    (n1, v1), (n2, v2) = stored(p1), stored(p2)
    # a multi-row INSERT whose default_2 part fails (a key it already stores): default_1's rows stay
    owners = {k: owner(s, [k]) for k in range(1, 200)}
    dup = next(k for k in range(1, 41) if owners[k][1] == "default_2")
    loc = json.loads(emu(d, "locate", "pw", "--key", "[%d]" % dup).stdout)
    with tc.subTest("partial writes: `picoemu locate` gives the owner the status gives"):
        tc.assertEqual((loc["bucket_id"], loc["replicaset"]), owners[dup])
    owner_of = {k: rs for k, (_, rs) in owners.items()}
    new1 = [k for k in range(100, 200) if owner_of[k] == "default_1"][:2]
    new2 = next(k for k in range(100, 200) if owner_of[k] == "default_2")
    cmd, errs = run("INSERT INTO pw VALUES (%d, 1), (%d, 1), (%d, 1), (%d, 1)" % (new1[0], new2, dup, new1[1]))
    with tc.subTest("partial writes: a multi-row INSERT that fails on default_2 keeps default_1's rows"):
        tc.assertEqual(cmd, [])
        tc.assertEqual(len(errs), 1, errs)
        tc.assertRegex(errs[0], "(?i)duplicate key")
        tc.assertEqual((stored(p1), stored(p2)), ((n1 + 2, v1 + 2), (n2, v2)))
        tc.assertEqual(q(p1, "SELECT id FROM _picoemu_local.pw WHERE id >= 100 ORDER BY id"),
                       [[str(k)] for k in sorted(new1)])
    # INSERT ... SELECT of the table into itself, split into parts: every part reads every row (the
    # part restricts only the rows it inserts), so each row is copied once, to its new key's owner
    before = sum(n for n, _ in (stored(p1), stored(p2)))
    cmd, errs = run("INSERT INTO pw SELECT id + 1000, v FROM pw WHERE id < 1000")
    with tc.subTest("partial writes: INSERT ... SELECT copies each row once, whichever replicaset holds it"):
        tc.assertEqual((cmd, errs), (["INSERT 0 %d" % before], []))
        tc.assertEqual(sum(n for n, _ in (stored(p1), stored(p2))), 2 * before)
    q(p1, "DELETE FROM _picoemu_local.pw WHERE id >= 1000")
    q(p2, "DELETE FROM _picoemu_local.pw WHERE id >= 1000")
    (n1, v1), (n2, v2) = stored(p1), stored(p2)
    emu(d, "stop", "default_2_1")
    try:
        simple = run("UPDATE pw SET v = v + 100")
        a1 = stored(p1)
        extended = run("UPDATE pw SET v = v + $1", ["1000"])
        b1 = stored(p1)
        # a named statement without parameters, executed twice (its plan is cached at its first Bind)
        c = w.Conn(front, "picoroute", "picoroute", timeout=30)
        try:
            c.send(w.parse("UPDATE pw SET v = v + 10000", name="pw_named") + w.sync())
            named = w.errors(c.until_ready())
            for _ in range(2):
                c.send(w.bind(stmt="pw_named") + w.execute() + w.sync())
                named += w.errors(c.until_ready())
        finally:
            c.close()
        b2 = stored(p1)
        deleted = run("DELETE FROM pw WHERE v > 0")
        c1 = stored(p1)
    finally:
        emu(d, "start", "default_2_1")
    for what, (cmd, errs) in (("simple", simple), ("extended", extended), ("DELETE", deleted)):
        with tc.subTest("partial writes: default_2_1 stopped: a keyless %s write waits for it, then fails "
                        "with Picodata's dql timeout" % what):
            tc.assertEqual(cmd, [], errs)
            tc.assertEqual(len(errs), 1, errs)
            tc.assertIn("Error on replicaset %s: dql timeout exceeded" % next(
                r["uuid"] for r in s["replicasets"] if r["name"] == "default_1"), errs[0])
    with tc.subTest("partial writes: default_2_1 stopped: a named statement fails at each of its 2 runs, with XX000 as every Picodata error"):
        tc.assertEqual([e.get("C") for e in named], ["XX000", "XX000"], named)
    with tc.subTest("partial writes: default_2_1 stopped: default_1's part of each write is applied"):
        tc.assertEqual((a1, b1, b2, c1), ((n1, v1 + 100 * n1), (n1, v1 + 1100 * n1), (n1, v1 + 21100 * n1), (0, 0)))
    with tc.subTest("partial writes: default_2_1 stopped: default_2's rows are untouched"):
        tc.assertEqual(stored(p2), (n2, v2))
    with tc.subTest("partial writes: both running again, a keyed UPDATE changes its one row"):
        tc.assertEqual(run("UPDATE pw SET v = v + 1 WHERE id = %d" % dup), (["UPDATE 1"], []))
        tc.assertEqual(stored(p2), (n2, v2 + 1))
    concurrent_increments(tc, d, s, p1, p2)


def concurrent_increments(tc: unittest.TestCase, d: str, s: Doc, p1: int, p2: int) -> None:
    """Keyless increments from both fronts at once: a part that fails to serialize (40001) runs
    again on its own, a committed part never runs again, so every row counts every acknowledged
    statement."""
    inst = {i["name"]: i for i in s["instances"]}
    emu(d, "create-table", "inc", "--columns", "id int8, n int8")
    emu(d, "load", "inc", "--rows", "8")
    for port in (p1, p2):
        q(port, "UPDATE _picoemu_local.inc SET n = 0")
    res: Dict[str, Dict[str, Any]] = {}

    def side(name: str, port: int) -> None:
        res[name] = hammer(port, "UPDATE inc SET n = n + 1", clients=3, count=30, seconds=60)
    ths = [threading.Thread(target=side, args=(nm, inst[i]["front_port"]))
           for nm, i in (("a", "default_1_1"), ("b", "default_2_1"))]
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    ok = sum(r["ok"] for r in res.values())
    counts = sorted(set(r[0] for port in (p1, p2) for r in q(port, "SELECT n FROM _picoemu_local.inc")))
    with tc.subTest("partial writes: concurrent keyless increments from both fronts, each applied once"):
        tc.assertEqual([e for r in res.values() for e in r["errors"]], [])
        tc.assertEqual(ok, 180, res)
        tc.assertEqual(counts, [str(ok)])
