"""A bucket in flight (the move's mark, written by hand) on the main cluster: writes to it wait and
run once the mark is gone, with no error; a lock the move needs is not held up by them."""

import json
import os
import threading
import time
import unittest
from typing import Dict, List, Tuple

from picoemu_lib import hashing
from picoemu_lib import pgwire as w
from picoemu_lib.state import Doc

from ..support.cluster import q, q1, qerr


def in_flight(tc: unittest.TestCase, s: Doc, p3: int) -> None:
    """A bucket in flight (the move's mark, written by hand): writes to it through the fronts wait,
    locally and forwarded, single- and multi-row, and run once the mark is gone, with no error; a
    lock the move needs is not held up by them; other buckets stay writable."""
    front = {i["name"]: i["front_port"] for i in s["instances"]}
    f1, f3 = front["default_1_1"], front["default_2_1"]
    tdir = next(i["datadir"] for i in s["instances"] if i["name"] == "default_2_1")
    b1 = hashing.bucket_id([1], 3000)
    k1 = next(k for k in range(2000000, 2200000) if hashing.bucket_id([k], 3000) == b1)
    k2 = next(k for k in range(2000000, 2000100) if hashing.bucket_id([k], 3000) <= 1500)
    mark = os.path.join(tdir, "picoemu_transfer.json")
    amount = q1(p3, "SELECT amount FROM _picoemu_local.users WHERE id = 1")
    got: Dict[str, Tuple[List[str], float]] = {}

    def run(key: str, port: int, sql: str, extended: bool = False) -> None:
        t0 = time.time()
        try:
            c = w.Conn(port, "picoroute", "picoroute", timeout=40)
            try:
                ans = w.extended(c, sql) if extended else c.query(sql)
            finally:
                c.close()
            got[key] = (["%s %s" % (e.get("C"), e.get("M")) for e in w.errors(ans)], time.time() - t0)
        except Exception as exc:  # noqa: BLE001 (reported by the checks)
            got[key] = (["%r" % exc], time.time() - t0)

    def private(key: str, sql: str) -> None:
        got[key] = ([qerr(p3, sql)], 0)
    with open(mark, "w") as f:
        json.dump([{"tier": "default", "bucket_start": b1, "bucket_end": b1, "dst": "default_1",
                    "phase": "copy"}], f)
    jobs = [("local", f3, "UPDATE users SET amount = amount + 1 WHERE id = 1", False),
            ("peer", f1, "UPDATE users SET amount = amount + 1 WHERE id = 1", True),
            ("insert", f1, "INSERT INTO users VALUES (%d, 'moving', 1), (%d, 'still', 1)" % (k1, k2), False)]
    threads = [threading.Thread(target=run, args=j) for j in jobs]
    threads.append(threading.Thread(target=private, args=("private", "UPDATE users SET name = name WHERE id = 1")))
    try:
        for th in threads:
            th.start()
        time.sleep(1.0)
        waiting = sorted(k for k, _, _, _ in jobs if k not in got)
        run("other", f1, "UPDATE users SET name = name WHERE id = 2")
        t0 = time.time()
        # the move's copy: a SHARE lock, which the waiting writes must not hold up
        q(p3, "BEGIN; LOCK TABLE _picoemu_local.users IN SHARE MODE; COMMIT;")
        lock_time = time.time() - t0
        time.sleep(0.5)
        still = sorted(k for k, _, _, _ in jobs if k not in got)
    finally:
        os.unlink(mark)
        t0 = time.time()
        for th in threads:
            th.join(timeout=70)
        done_time = time.time() - t0
    with tc.subTest("move: writes to a bucket in flight wait (at the owner, forwarded, multi-row)"):
        tc.assertEqual(waiting, ["insert", "local", "peer"], str(got))
        tc.assertEqual(still, ["insert", "local", "peer"], str(got))
    with tc.subTest("move: other buckets stay writable during a move"):
        tc.assertEqual(got["other"][0], [], str(got["other"]))
        # well under the 5 s a held write waits per attempt (a loaded machine is slow, not blocked)
        tc.assertLess(got["other"][1], 3.0, str(got["other"]))
    with tc.subTest("move: a lock the move needs is not held up by the waiting writes"):
        tc.assertLess(lock_time, 3.0, "%.2fs" % lock_time)
    with tc.subTest("move: on a private port (no front) the write gives up with PE004, Picodata's text"):
        tc.assertIn("Failed to add a storage reference: box error: ProcLua: vshard error: Timeout exceeded",
                    got["private"][0][0],
                    str(got["private"]))
    with tc.subTest("move: once the move is done the writes run, with no error reaching the client"):
        tc.assertEqual({k: v[0] for k, v in got.items() if k in ("local", "peer", "insert")},
                       {"local": [], "peer": [], "insert": []}, str(got))
        tc.assertLess(done_time, 5.0, "%.2fs" % done_time)
    with tc.subTest("move: each write applied once"):
        tc.assertEqual(q1(p3, "SELECT amount - %s FROM _picoemu_local.users WHERE id = 1" % amount), "2.00")
        tc.assertEqual(q1(p3, "SELECT count(*) FROM users WHERE id IN (%d, %d)" % (k1, k2)), "2")
    q(p3, "DELETE FROM users WHERE id IN (%d, %d)" % (k1, k2))
    with open(os.path.join(os.path.dirname(tdir), "front.log")) as f:
        log = f.read()
    with tc.subTest("move: the front logs the writes that waited for a move"):
        tc.assertIn("bucket move: a write waits for a bucket in flight", log)
