"""Self-test of the emulator under concurrency, run by the self-test on a cluster of its own (two
replicasets, one instance each): clients through the fronts (pgwire connections, one thread each,
bounded in statements and in time) check what Picodata's storage guarantees:

* lost update: `UPDATE t SET n = n + 1` sent by 4 clients to the owner's instance loses no increment;
* serialization: the same sent to the other instance (forwarded through postgres_fdw) fails with no
  `could not serialize access`, which Picodata never says;
* global writes: `UPDATE g SET n = n + 1` of a global table from both instances at once neither hangs
  (a deadlock across servers) nor fails, and every copy ends equal;
* bucket in flight: a write held by a move past the front's bound (1 s in this cluster) gets
  Picodata's XX000 for a storage reference that timed out, and is applied nowhere;
* stopped master: while one master is stopped, statements fixing the key of a row of the other
  replicaset, sent to that replicaset's master, run at once (Picodata's local path), and the others
  wait for the stopped master until the deadline (1 s in this cluster, 360 s on Picodata) and fail
  with Picodata's `dql timeout exceeded`: a dead master stalls the tier's coordinators."""

import json
import os
import threading
import time
import unittest
from typing import Any, Dict, Optional

from picoemu_lib import pgwire as w

from ..support.cluster import emu, owner, psql, q1, qv, status
from ..support.load import CLIENT, hammer, summary


def value(port: int, sql: str) -> Optional[str]:
    return q1(port, sql)


def concurrency_cluster(tc: unittest.TestCase, d: str, base: int) -> None:
    os.environ["PICOEMU_MOVE_SECONDS"] = "1"  # the fronts' bound for a write held by a move (check 4)
    os.environ["PICOEMU_QUERY_TIMEOUT"] = "1"  # a statement's deadline (check 5)
    try:
        emu(d, "--base-port", str(base), "up", "--replicasets", "2", "--replication-factor", "1")
    finally:
        del os.environ["PICOEMU_MOVE_SECONDS"]
        del os.environ["PICOEMU_QUERY_TIMEOUT"]
    s = status(d)
    inst = {i["name"]: i for i in s["instances"]}
    m1, m2 = inst["default_1_1"], inst["default_2_1"]
    emu(d, "create-table", "acc", "--columns", "id int8, n int8")
    emu(d, "create-table", "g", "--columns", "id int8, n int8", "--global")
    emu(d, "load", "acc", "--rows", "40")
    emu(d, "insert", "g", "--values", "[1, 0]")
    # a row of each replicaset
    keys: Dict[str, int] = {}
    for k in range(1, 41):
        keys.setdefault(owner(s, [k])[1], k)
    k1, k2 = keys["default_1"], keys["default_2"]

    # 1. lost update: every client at the owner's instance (the view's trigger writes locally)
    psql(m1["private_port"], "UPDATE _picoemu_local.acc SET n = 0 WHERE id = %d" % k1)
    res = hammer(m1["front_port"], "UPDATE acc SET n = n + 1 WHERE id = %d" % k1)
    n = int(qv(m1["private_port"], "SELECT n FROM _picoemu_local.acc WHERE id = %d" % k1))
    detail = "%s; n = %d" % (summary(res), n)
    print("     lost update: " + detail, flush=True)
    with tc.subTest("concurrency: n = n + 1 at the owner loses no update (4 clients)"):
        tc.assertGreater(res["ok"], 20, detail)
        tc.assertEqual(n, res["ok"], detail)

    # 1b. the same with the key as a bound parameter, alternating between the two replicasets' rows:
    # a statement run again after a conflict must be routed by its own key, not by the previous one's
    for k in (k1, k2):
        psql(inst["default_1_1" if k == k1 else "default_2_1"]["private_port"],
                "UPDATE _picoemu_local.acc SET n = 0 WHERE id = %d" % k)
    res = hammer(m1["front_port"], "UPDATE acc SET n = n + 1 WHERE id = $1", params=[(str(k1),), (str(k2),)])
    n1 = int(qv(m1["private_port"], "SELECT n FROM _picoemu_local.acc WHERE id = %d" % k1))
    n2 = int(qv(m2["private_port"], "SELECT n FROM _picoemu_local.acc WHERE id = %d" % k2))
    detail = "%s; n = %d + %d" % (summary(res), n1, n2)
    print("     lost update, bound key: " + detail, flush=True)
    with tc.subTest("concurrency: n = n + 1 with the key bound, two rows, loses no update (4 clients)"):
        tc.assertGreater(res["ok"], 20, detail)
        tc.assertEqual(n1 + n2, res["ok"], detail)
        tc.assertEqual(res["errors"], [], detail)

    # 2. serialization: every client at the other instance (forwarded through postgres_fdw)
    psql(m2["private_port"], "UPDATE _picoemu_local.acc SET n = 0 WHERE id = %d" % k2)
    res = hammer(m1["front_port"], "UPDATE acc SET n = n + 1 WHERE id = %d" % k2)
    n = int(qv(m2["private_port"], "SELECT n FROM _picoemu_local.acc WHERE id = %d" % k2))
    detail = "%s; n = %d" % (summary(res), n)
    print("     forwarded: " + detail, flush=True)
    with tc.subTest("concurrency: forwarded n = n + 1 never fails to serialize, loses nothing"):
        tc.assertGreater(res["ok"], 20, detail)
        tc.assertFalse([e for e in res["errors"] if "serialize" in e], detail)
        tc.assertEqual(res["errors"], [], detail)
        tc.assertEqual(n, res["ok"], detail)

    # 3. global table: writers at both instances at once
    out: Dict[str, Dict[str, Any]] = {}

    def side(name: str, port: int) -> None:
        out[name] = hammer(port, "UPDATE g SET n = n + 1 WHERE id = 1", clients=2, count=30, seconds=25)
    ths = [threading.Thread(target=side, args=(nm, i["front_port"])) for nm, i in (("a", m1), ("b", m2))]
    for th in ths:
        th.start()
    for th in ths:
        th.join(timeout=60)
    ok = sum(r["ok"] for r in out.values())
    errors = [e for r in out.values() for e in r["errors"]]
    hung = sum(r["hung"] for r in out.values())
    copies = [value(i["private_port"], "SELECT n FROM _picoemu_local.g WHERE id = 1") for i in (m1, m2)]
    detail = "%d acknowledged, %d hung, errors %s, copies %s" % (ok, hung, sorted(set(errors))[:3], copies)
    print("     global: " + detail, flush=True)
    with tc.subTest("concurrency: global writes from two instances neither hang nor fail"):
        tc.assertEqual(hung, 0, detail)
        tc.assertEqual(errors, [], detail)
        tc.assertGreater(ok, 10, detail)
    with tc.subTest("concurrency: every copy of the global row counts every acknowledged write"):
        tc.assertEqual(copies, [str(ok), str(ok)], detail)

    # 4. a write held by a bucket in flight past the front's bound (1 s here, 60 s by default): the
    # client gets Picodata's error for a storage reference that timed out, and nothing is applied.
    # The mark says the move publishes, so each held run gives up after 50 ms and runs again.
    mark = os.path.join(m2["datadir"], "picoemu_transfer.json")
    b2 = owner(s, [k2])[0]
    before = value(m2["private_port"], "SELECT n FROM _picoemu_local.acc WHERE id = %d" % k2)
    with open(mark, "w") as f:
        json.dump([{"tier": "default", "bucket_start": b2, "bucket_end": b2, "dst": "default_1",
                    "phase": "publish"}], f)
    try:
        c = w.Conn(m1["front_port"], CLIENT, CLIENT, timeout=30)
        try:
            t0 = time.time()
            errs = w.errors(c.query("UPDATE acc SET n = n + 1 WHERE id = %d" % k2))
            took = time.time() - t0
        finally:
            c.close()
    finally:
        os.unlink(mark)
    after = value(m2["private_port"], "SELECT n FROM _picoemu_local.acc WHERE id = %d" % k2)
    with tc.subTest("move: a write held past the front's bound gets Picodata's XX000, applied nowhere"):
        tc.assertEqual([(e.get("C"), e.get("M")) for e in errs],
                       [("XX000", "sbroad: Failed to add a storage reference: box error: ProcLua: vshard error: "
                                  "Timeout exceeded (type: ClientError, code: 78, name: TIMEOUT)")], str(errs))
        tc.assertTrue(1.0 <= took < 10.0, "%.2fs" % took)
        tc.assertEqual(after, before)

    # 5. a stopped master: the local path at the owner's master runs at once; every statement the
    # coordinator dispatches through Lua waits for the stopped master until the deadline (1 s here),
    # then fails with Picodata's text (a write is first sent to the live masters)
    emu(d, "stop", "default_2_1")
    try:
        c = w.Conn(m1["front_port"], CLIENT, CLIENT, timeout=30)
        try:
            checks = [
                ("SELECT n FROM acc WHERE id = %d" % k1, True),
                ("UPDATE acc SET n = n + 1 WHERE id = %d" % k1, True),
                ("DELETE FROM acc WHERE id = %d" % k1, True),
                ("INSERT INTO acc VALUES (%d, 7)" % k1, True),
                ("SELECT n FROM acc WHERE id = %d" % k2, False),
                ("UPDATE acc SET n = n + 1 WHERE id = %d" % k2, False),
                ("SELECT count(*) FROM acc", False),
            ]
            for proto in ("simple", "extended"):
                for sql, works in checks:
                    t0 = time.time()
                    ans = c.query(sql) if proto == "simple" else w.extended(c, sql)
                    took = time.time() - t0
                    errs = w.errors(ans)
                    with tc.subTest("stopped master default_2_1: %s (%s) %s" % (
                            sql, proto, "runs at once" if works else "waits 1 s, then fails")):
                        if works:
                            tc.assertEqual(errs, [], str(errs))
                            tc.assertLess(took, 0.9, "%.2fs" % took)
                        else:
                            tc.assertEqual([(e.get("C"), "dql timeout exceeded" in e.get("M", "")) for e in errs],
                                           [("XX000", True)], str(ans))
                            tc.assertGreaterEqual(took, 0.95, "%.2fs" % took)
        finally:
            c.close()
    finally:
        emu(d, "start", "default_2_1")
