"""Checks of the front scenario (front.py) on the fronts of its cluster: helpers (the audit, settings,
the emulated version switched under the fronts), forward judged by the bucket set, reads that must be
leader reads, and startup options Picodata cannot read."""

import json
import os
import socket
import struct
import time
import unittest
from typing import Any, Dict, List, Optional, Tuple

from picoemu_lib import caps as emu_caps
from picoemu_lib import pgwire as w
from picoemu_lib.front.texts import TAGGED_FROM

from ..support.cluster import emu

# one whose errors carry no EXPLAIN (RAW) tag and whose sessions have read_preference (26.1.6), one
# without read_preference (25.5.10), one with forward (26.2.1-rc1 and later).
PLAIN = [b for b in emu_caps.BUILDS
         if not emu_caps.version_at_least(b, TAGGED_FROM) and emu_caps.has("read_preference", b)][-1]
NO_READ_PREFERENCE = [b for b in emu_caps.BUILDS if not emu_caps.has("read_preference", b)][0]
FORWARD = [b for b in emu_caps.BUILDS if emu_caps.has("forward", b)][-1]
# Picodata's texts at PLAIN (front.texts.row_limit_text): "sbroad: " before the coordinator's text, and
# "unexpected number of values: " before the planner's check of INSERT ... VALUES.
ROW_LIMIT_6000 = "sbroad: Exceeded maximum number of rows (5000) in virtual table: 5001"
VALUES_LIMIT = "sbroad: unexpected number of values: Exceeded maximum number of rows (5000) in virtual table: 5001"
PROBE = "SELECT rp, strict, vdbe FROM guc_probe"


def audit(d: str) -> Tuple[int, List[Dict[str, Any]]]:
    r = emu(d, "audit", "--json", expect_ok=False)
    entries: List[Dict[str, Any]] = json.loads(r.stdout or "[]")
    return r.returncode, entries


def set_setting(d: str, name: str, value: str) -> None:
    emu(d, "set", name, value)
    time.sleep(0.15)  # the fronts look at state.json at most every 0.1 s


def set_version(d: str, version: str) -> None:
    """The fronts re-read state.json: switch the emulated version of the dialect under them."""
    path = os.path.join(d, "state.json")
    with open(path) as f:
        data = json.load(f)
    data["picodata_version"] = version
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(data, f)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    time.sleep(0.25)  # the fronts look at state.json at most every 0.1 s


FWD_SPAN = ('sbroad: invalid option: cannot satisfy "forward = off": buckets span multiple nodes and are '
            'not present on the current node, try using "forward = on" instead')
FWD_NOT_LOCAL = ('sbroad: invalid option: cannot satisfy "forward = off": buckets are not present on the '
                 'current node, try using "forward = ro_to_rw" instead')


def unset(rows: List[List[Optional[str]]]) -> List[List[Optional[str]]]:
    """Rows of PROBE with "" (a setting restored to nothing) read as NULL."""
    return [[None if v == "" else v for v in r] for r in rows]


def codes(a: List[w.Answer]) -> List[str]:
    return ["%s %s" % (e.get("C"), e.get("M")) for e in w.errors(a)]


def forward_by_bucket_set(tc: unittest.TestCase, c: w.Conn, ch: w.Conn, replica_front: int) -> None:
    """forward judged by the statement's bucket set (picoemu_lib.route), on one replicaset: c a plain session
    at the master, ch one with the startup option forward=off."""
    with tc.subTest("forward=off: a keyless read is refused though every row is local (XX000, Picodata's text)"):
        tc.assertEqual(codes(c.query("SELECT count(*) FROM users OPTION (forward = off)")), ["XX000 " + FWD_SPAN])
        tc.assertEqual(codes(ch.query("DELETE FROM users WHERE v = -1")), ["XX000 " + FWD_SPAN])
    with tc.subTest("forward=off: a statement by key at its owner's master runs (simple and extended)"):
        tc.assertEqual(w.rows(c.query("SELECT id FROM users WHERE id = 7 OPTION (forward = off)")), [["7"]])
        tc.assertEqual(w.rows(w.extended(ch, "SELECT id FROM users WHERE id = $1", [7])), [["7"]])
        tc.assertFalse(w.errors(ch.query("UPDATE users SET v = v WHERE id IN (7, 8)")))
    with tc.subTest("forward=off: refused at Execute in the extended protocol, the batch skipped to Sync"):
        a = w.extended(ch, "SELECT id FROM users WHERE v = $1", [7])
        tc.assertEqual(codes(a), ["XX000 " + FWD_SPAN])
        tc.assertEqual(w.kinds(a)[-1:], "Z")
        tc.assertEqual(w.rows(ch.query("SELECT id FROM users WHERE id = 8")), [["8"]])
    with tc.subTest("forward=off: OPTION (forward = on) overrides the startup option"):
        tc.assertEqual(w.rows(ch.query("SELECT count(*) FROM users WHERE id < 3 OPTION (forward = on)")), [["2"]])
    rc = w.Conn(replica_front, "picoroute", "picoroute", options="forward=off")
    with tc.subTest("forward=off: a replica (read-only) refuses even its own buckets; ro_to_rw runs"):
        tc.assertEqual(codes(rc.query("SELECT id FROM users WHERE id = 7")), ["XX000 " + FWD_NOT_LOCAL])
        tc.assertEqual(w.rows(rc.query("SELECT id FROM users WHERE id = 7 OPTION (forward = ro_to_rw)")), [["7"]])
        tc.assertEqual(w.rows(rc.query("SELECT count(*) FROM _pico_tier")), [["1"]])
    rc.close()


def leader_only_reads(tc: unittest.TestCase, d: str, c: w.Conn, fport: int) -> None:
    """26.1+: reads of an unlogged table, and every read of a sharded table while sql_preemption is on,
    must be leader reads (src/sql/dispatch.rs, effective_read_preference); OPTION (read_preference)
    is for reads only (validate_options_usage)."""
    unlogged = "XX000 sbroad: invalid option: read_preference must be set to 'leader' when querying unlogged tables"
    preemption = ("XX000 sbroad: invalid option: read_preference must be set to 'leader' when sql_preemption "
                  "is enabled")
    emu(d, "create-table", "scratch", "--columns", "id int8, name text", "--unlogged")
    emu(d, "insert", "scratch", "--values", "[1, \"one\"]")
    cr = w.Conn(fport, "picoroute", "picoroute", options="read_preference=replica")
    with tc.subTest("leader-only: a read of an unlogged table that is not a leader read is refused"):
        tc.assertEqual(codes(cr.query("SELECT * FROM scratch")), [unlogged])
        tc.assertEqual(codes(w.extended(cr, "SELECT name FROM scratch WHERE id = $1", [1])), [unlogged])
        tc.assertEqual(codes(c.query("SELECT * FROM scratch OPTION (read_preference = any)")), [unlogged])
    with tc.subTest("leader-only: a leader read of it is answered"):
        tc.assertEqual(w.rows(c.query("SELECT name FROM scratch")), [["one"]])
        tc.assertEqual(w.rows(cr.query("SELECT name FROM scratch OPTION (read_preference = leader)")), [["one"]])
    set_setting(d, "sql_preemption", "true")
    with tc.subTest("leader-only: with sql_preemption on, a read of a sharded table that is not a leader read"):
        tc.assertEqual(codes(cr.query("SELECT count(*) FROM users WHERE id = 7")), [preemption])
        tc.assertEqual(w.rows(cr.query("SELECT count(*) FROM _pico_tier")), [["1"]])  # runs on the instance
        tc.assertEqual(w.rows(c.query("SELECT count(*) FROM users WHERE id = 7")), [["1"]])
    set_setting(d, "sql_preemption", "false")
    with tc.subTest("leader-only: OPTION (read_preference) on a write is refused"):
        tc.assertEqual(codes(c.query("DELETE FROM scratch WHERE id = 2 OPTION (read_preference = leader)")),
                       ["XX000 sbroad: invalid OptionSpec: read_preference option is supported only for DQL "
                        "queries"])
    cr.close()
    emu(d, "drop-table", "scratch")


def startup_refusals(tc: unittest.TestCase, fport: int) -> None:
    """Startup options Picodata cannot read close the connection with no ErrorResponse (ClientParams::new,
    src/pgproto/client/startup.rs; PgClient::accept, src/pgproto/client.rs:40, every tag)."""
    for options in ("sql_motion_row_max", "sql_motion_row_max=-1", "read_preference=primary", ""):
        with tc.subTest("startup: options %r: the connection is closed, no answer" % options):
            sock = socket.create_connection(("127.0.0.1", fport), timeout=10)
            params = {"user": "picoroute", "database": "picodata", "options": options,
                      "application_name": "selftest-front"}
            body = struct.pack("!I", 196608) + b"".join(k.encode() + b"\0" + v.encode() + b"\0"
                                                        for k, v in params.items()) + b"\0"
            sock.sendall(struct.pack("!I", len(body) + 4) + body)
            tc.assertEqual(sock.recv(1), b"")
            sock.close()
    with tc.subTest("startup: an unknown option name is only a warning: the session opens"):
        ok = w.Conn(fport, "picoroute", "picoroute", options="no_such_option=1")
        tc.assertEqual(w.rows(ok.query("SELECT 1")), [["1"]])
        ok.close()
