"""Clients write through the masters' fronts while buckets move back and forth (on the 25.5 cluster):
no error reaches a client, every acknowledged row is stored exactly once, every acknowledged increment
is applied once, and no reader sees a row twice."""

import json
import os
import re
import subprocess
import threading
import time
import unittest
from typing import Dict, List, Set

from picoemu_lib import pg
from picoemu_lib import pgwire as w

from ..support.cluster import emu, q, q1, qv, status, storage_ok


def move_counts(d: str) -> List[int]:
    """[writes that waited for a bucket in flight, their runs again] over every front, from the last
    such line of each front.log (front.rerun hold_move)."""
    out = [0, 0]
    for i in status(d)["instances"]:
        try:
            with open(os.path.join(os.path.dirname(i["datadir"]), "front.log"), errors="replace") as f:
                lines = [x for x in f if "bucket move: a write waits" in x]
        except OSError:
            continue
        if lines:
            m = re.search(r"\((\d+) statements so far, (\d+) runs again\)", lines[-1])
            assert m is not None, lines[-1]
            out[0] += int(m.group(1))
            out[1] += int(m.group(2))
    return out


def move_race(tc: unittest.TestCase, d: str, fronts: List[int], reader_port: int, seconds: float = 30) -> None:
    """Clients write through the masters' fronts while buckets move back and forth: INSERTs (one
    connection per statement, simple protocol), multi-row INSERTs whose rows lie on both replicasets
    (one connection per client, both protocols: the front runs them one part per replicaset),
    keyless increments of rows spread over the tier (parts again), and increments of one counter
    row (one connection per client, extended protocol). A write that meets a bucket in flight waits
    for the move and runs on the new owner: no error reaches a client, and every acknowledged row
    is stored exactly once (a split write whose parts named replicasets lost a row now and then: a
    bucket that moved from a replicaset whose part had not run to one whose part had). A reader
    checks that no row is ever seen twice."""
    stop = threading.Event()
    acked: Set[int] = set()
    other: Dict[object, str] = {}
    incs: Dict[int, int] = {}  # counter row -> increments acknowledged
    spread = list(range(9_100_001, 9_100_041))  # keyless increments: rows all over the tier
    keyless = [0]
    reads = {"n": 0, "dup": 0, "err": 0}
    slowest = [0.0]  # the longest write, in seconds
    lock = threading.Lock()

    def run_psql(port: int, sql: str) -> "subprocess.CompletedProcess[str]":
        env = dict(os.environ, PGPASSWORD="picoroute")
        return subprocess.run([pg.pgbin("psql"), "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                               "-p", str(port), "-U", "picoroute", "-d", "picodata", "-c", sql],
                              capture_output=True, text=True, timeout=90, env=env)

    def writer(k: int, port: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            rid = 10_000_000 * (k + 1) + i
            t = time.time()
            res = run_psql(port, "INSERT INTO users VALUES (%d, 'race', %d)" % (rid, k))
            with lock:
                slowest[0] = max(slowest[0], time.time() - t)
                if res.returncode == 0:
                    acked.add(rid)
                else:
                    other[rid] = res.stderr.strip()

    def counter(k: int, port: int) -> None:
        rid = 9_000_003  # one row for every client (its bucket, 2545, moves in about half of the steps below)
        incs.setdefault(rid, 0)
        c = w.Conn(port, "picoroute", "picoroute", timeout=90)
        try:
            while not stop.is_set():
                t0 = time.time()
                ans = w.extended(c, 'UPDATE "users" SET "v" = "v" + 1 WHERE "id" = $1', [rid])
                errs = w.errors(ans)
                tags = [v for t, v in ans if t == "C"]
                with lock:
                    slowest[0] = max(slowest[0], time.time() - t0)
                    if errs:
                        other["inc %d %d" % (k, incs[rid])] = "%s %s" % (errs[0].get("C"), errs[0].get("M"))
                    elif tags != ["UPDATE 1"]:
                        other["inc %d %d" % (k, incs[rid])] = "answer %r" % (ans,)
                    else:
                        incs[rid] += 1
        finally:
            c.close()

    def batch_writer(k: int, port: int, extended: bool) -> None:
        """Multi-row INSERTs of 5 rows (their buckets spread over the tier) on one connection."""
        c = w.Conn(port, "picoroute", "picoroute", timeout=90)
        i = 0
        try:
            while not stop.is_set():
                i += 1
                ids = [100_000_000 * (k + 1) + i * 10 + j for j in range(5)]
                if extended:
                    ans = w.extended(c, "INSERT INTO users VALUES " + ", ".join(
                        "($%d, 'batch', %d)" % (n + 1, k) for n in range(5)), [str(x) for x in ids])
                else:
                    ans = c.query("INSERT INTO users VALUES " + ", ".join("(%d, 'batch', %d)" % (x, k) for x in ids))
                errs, tags = w.errors(ans), [v for t, v in ans if t == "C"]
                with lock:
                    if errs:
                        other["batch %d" % ids[0]] = "%s %s" % (errs[0].get("C"), errs[0].get("M"))
                    else:
                        acked.update(ids)
                        if tags != ["INSERT 0 5"]:
                            other["batch %d" % ids[0]] = "answer %r" % (tags,)
                time.sleep(0.01)
        finally:
            c.close()

    def keyless_incrementer(port: int) -> None:
        """UPDATE without the key: one part per replicaset, each row incremented exactly once."""
        c = w.Conn(port, "picoroute", "picoroute", timeout=90)
        try:
            while not stop.is_set():
                # no key equality: one part per replicaset (an index range, not a scan of the
                # growing table, which would hold the moves' locks up)
                ans = w.extended(c, "UPDATE users SET v = v + 1 WHERE id BETWEEN %d AND %d "
                                    "OPTION (sql_vdbe_opcode_max = 0)" % (spread[0], spread[-1]))
                errs, tags = w.errors(ans), [v for t, v in ans if t == "C"]
                with lock:
                    if errs:
                        other["keyless %d" % keyless[0]] = "%s %s" % (errs[0].get("C"), errs[0].get("M"))
                    elif tags != ["UPDATE %d" % len(spread)]:
                        other["keyless %d" % keyless[0]] = "answer %r" % (tags,)
                    else:
                        keyless[0] += 1
                time.sleep(0.02)
        finally:
            c.close()

    def reader() -> None:
        while not stop.is_set():
            res = run_psql(reader_port, "SELECT count(*) - count(DISTINCT id) FROM users WHERE id >= 10000000")
            with lock:
                reads["n"] += 1
                if res.returncode != 0:
                    reads["err"] += 1
                elif res.stdout.strip() != "0":
                    reads["dup"] += 1
            time.sleep(0.1)

    emu(d, "insert", "users", "--values", json.dumps([9_000_003, "counter", 0]),
        *[x for rid in spread for x in ("--values", json.dumps([rid, "spread", 0]))])
    moves_before = move_counts(d)
    threads = [threading.Thread(target=writer, args=(k, p)) for k, p in enumerate(fronts)]
    threads += [threading.Thread(target=counter, args=(k, p)) for k, p in enumerate(fronts)]
    threads += [threading.Thread(target=batch_writer, args=(k, fronts[k % 2], k == 1)) for k in range(2)]
    threads.append(threading.Thread(target=keyless_incrementer, args=(fronts[1],)))
    threads.append(threading.Thread(target=reader))
    for th in threads:
        th.start()
    moves = 0
    steps = [("move", "default", "1", "700", "default_2"), ("rebalance",),
             ("move", "default", "1400", "2600", "default_1"), ("rebalance", "--weights", "default_1=1,default_2=3"),
             ("rebalance",)]
    t0 = time.time()
    try:
        while time.time() - t0 < seconds:
            emu(d, *steps[moves % len(steps)])
            moves += 1
    finally:
        time.sleep(1)
        stop.set()
        for th in threads:
            th.join(timeout=90)
    s = status(d)
    stored: Dict[int, int] = {}
    for i in s["instances"]:
        if i["role"] == "master":
            for (rid,) in q(i["port"], "SELECT id FROM _picoemu_local.users WHERE id >= 10000000"):
                stored[int(rid)] = stored.get(int(rid), 0) + 1
    spread_v = {int(r): int(v) for r, v in q(reader_port, "SELECT id, v FROM users WHERE name = 'spread'")}
    lost = sorted(acked - set(stored))
    dup = sorted(r for r, n in stored.items() if n > 1)
    phantom = sorted(set(stored) - acked)
    counted = {rid: int(qv(reader_port, "SELECT v FROM users WHERE id = %d" % rid)) for rid in incs}
    waited = [a - b for a, b in zip(move_counts(d), moves_before)]
    detail = ("%d moves/rebalances in %.0fs; writes: %d rows inserted, %d increments and %d keyless "
              "updates acknowledged, %d errors; %d statements waited for a bucket in flight, %d runs again; "
              "slowest write %.2fs; reads: %d, %d failed" % (
                  moves, time.time() - t0, len(acked), sum(incs.values()), keyless[0], len(other), waited[0],
                  waited[1], slowest[0], reads["n"], reads["err"]))
    print("     " + detail, flush=True)
    for msg in sorted(set(other.values()))[:5]:
        print("     write error: " + msg[:300], flush=True)
    with tc.subTest("move race: writes were acknowledged during the moves"):
        tc.assertGreater(len(acked), 20, detail)
        tc.assertGreater(sum(incs.values()), 20, detail)
        tc.assertGreaterEqual(moves, 4, detail)
    with tc.subTest("move race: no write failed (a move is a delay, not an error)"):
        tc.assertEqual(other, {}, detail)
    with tc.subTest("move race: writes met buckets in flight and waited"):
        tc.assertGreater(waited[0], 0, detail)
    with tc.subTest("move race: 0 acknowledged rows lost"):
        tc.assertFalse(lost, "lost %s" % lost[:10])
    with tc.subTest("move race: 0 rows stored twice"):
        tc.assertFalse(dup, "doubled %s" % dup[:10])
    with tc.subTest("move race: 0 failed writes applied"):
        tc.assertFalse(phantom, "phantom %s" % phantom[:10])
    with tc.subTest("move race: every acknowledged increment applied once"):
        tc.assertEqual(counted, incs, detail)
    with tc.subTest("move race: multi-row INSERTs and keyless UPDATEs (split into parts) were acknowledged"):
        tc.assertGreater(sum(1 for r in acked if r >= 100_000_000), 100, detail)
        tc.assertGreater(keyless[0], 5, detail)
    with tc.subTest("move race: every keyless UPDATE changed each of its rows exactly once"):
        tc.assertEqual(spread_v, {rid: keyless[0] for rid in spread}, detail)
    with tc.subTest("move race: no reader ever saw a row twice"):
        tc.assertEqual(reads["dup"], 0, str(reads))
        tc.assertGreater(reads["n"], 10, str(reads))
    with tc.subTest("move race: the view shows exactly the acknowledged rows"):
        tc.assertEqual(q1(reader_port, "SELECT count(*) FROM users WHERE id >= 10000000"), str(len(acked)))
    with tc.subTest("move race: rows only on owners"):
        tc.assertFalse(storage_ok(s), str(storage_ok(s)))
