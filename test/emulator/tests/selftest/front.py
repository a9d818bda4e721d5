"""Self-test of the Picodata fronts (picoemu_lib.front), on a cluster of its own (one replicaset, a
master and a replica): the advertised and private ports, the dialect (simple and extended protocol,
skipping to Sync), BEGIN / COMMIT answered by the front, OPTION and startup options with their
precedence and the GUCs they set, sql_motion_row_max (returned rows and INSERT ... VALUES),
sql_vdbe_opcode_max, Bind rules, the audit, CancelRequest, SSLRequest, stop/start, and a plain
EXPLAIN answered by the front. The emulated version is switched under the fronts as the checks need."""

import socket
import struct
import subprocess
import unittest

from picoemu_lib import hashing, pg
from picoemu_lib import pgwire as w
from picoemu_lib.paths import PICOEMU
from picoemu_lib.state import Doc

from ..support.cluster import emu, psql, status
from .front_checks import (FORWARD, NO_READ_PREFERENCE, PLAIN, PROBE, ROW_LIMIT_6000, VALUES_LIMIT, audit, codes,
                           forward_by_bucket_set, leader_only_reads, set_setting, set_version, startup_refusals, unset)


def front_cluster(tc: unittest.TestCase, d: str, base: int) -> None:
    emu(d, "--base-port", str(base), "up", "--replicasets", "1", "--replication-factor", "2",
        "--bucket-count", "10")
    s = status(d)
    m, r = s["instances"][0], s["instances"][1]
    fport, pport = m["front_port"], m["port"]
    with tc.subTest("front: advertised port != private port, both listening, front running"):
        tc.assertNotEqual(fport, pport)
        tc.assertFalse(pg.port_is_free(fport))
        tc.assertFalse(pg.port_is_free(pport))
        tc.assertTrue(m["front_running"])
    with tc.subTest("front: pgproto_address is the front"):
        tc.assertEqual(m["pgproto_address"], "127.0.0.1:%d" % fport)
    with tc.subTest("front: conninfo gives the fronts"):
        tc.assertIn("port=%d,%d" % (fport, r["front_port"]), emu(d, "conninfo").stdout)
    emu(d, "create-table", "users", "--columns", "id int8, name text, v int8, ts timestamptz")
    emu(d, "load", "users", "--rows", "6000")
    # one replicaset stores all 6000 rows: reading them all would also exceed the approximated
    # sql_vdbe_opcode_max; it is tested on its own below
    set_setting(d, "sql_vdbe_opcode_max", "0")
    # a probe of the GUCs the front sets, created on the private port (a PostgreSQL view)
    psql(pport, "CREATE VIEW public.guc_probe AS SELECT current_setting('picoemu.read_preference', true) AS rp, "
                   "current_setting('picoemu.strict', true) AS strict, "
                   "current_setting('picoemu.vdbe_opcode_max', true) AS vdbe; GRANT SELECT ON guc_probe TO PUBLIC")

    set_version(d, PLAIN)
    c = w.Conn(fport, "picoroute", "picoroute", application_name="selftest-front")
    row_limit(tc, d, c, fport)
    dialect(tc, d, c, m)
    tcl_and_explain(tc, c)
    options(tc, d, c, fport, r)
    vdbe(tc, d, fport)
    bind_rules(tc, c)
    audit_cancel_ssl(tc, d, c, fport)
    c.close()
    emu(d, "audit", "--clear")
    stop_start(tc, d, r)


def row_limit(tc: unittest.TestCase, d: str, c: w.Conn, fport: int) -> None:
    # ---- the row limit ---------------------------------------------------------------------------
    a = c.query("SELECT id FROM users")
    with tc.subTest("limit: keyless SELECT of 6000 rows fails with Picodata's text, no rows"):
        tc.assertEqual(["%s %s" % (e.get("C"), e.get("M")) for e in w.errors(a)], ["XX000 " + ROW_LIMIT_6000], a[:3])
        tc.assertFalse(w.rows(a), a[:3])
    a = c.query("SELECT id FROM users OPTION (sql_motion_row_max = 0)")
    with tc.subTest("limit: OPTION (sql_motion_row_max = 0) returns the 6000 rows"):
        tc.assertEqual(len(w.rows(a)), 6000)
        tc.assertFalse(w.errors(a))
    a = w.extended(c, "SELECT id FROM users WHERE id > $1", [0])
    with tc.subTest("limit: extended protocol too"):
        tc.assertEqual([e["M"] for e in w.errors(a)], [ROW_LIMIT_6000])
        tc.assertFalse(w.rows(a))
    a = c.query("SELECT id FROM users WHERE id <= 5000")
    with tc.subTest("limit: exactly 5000 rows pass"):
        tc.assertEqual(len(w.rows(a)), 5000)
    values = ", ".join("(%d, 'x', 1, '2025-01-01 00:00:00+00')" % i for i in range(100001, 105002))
    a = c.query("INSERT INTO users (id, name, v, ts) VALUES " + values)
    with tc.subTest("limit: INSERT of 5001 VALUES rows fails, nothing stored"):
        tc.assertEqual([e["M"] for e in w.errors(a)], [VALUES_LIMIT])
        tc.assertEqual(w.rows(c.query("SELECT count(*) FROM users WHERE id > 100000")), [["0"]])
    a = c.query("INSERT INTO users (id, name, v, ts) VALUES " + values + " OPTION (sql_motion_row_max = 6000)")
    with tc.subTest("limit: the same INSERT with OPTION (sql_motion_row_max = 6000) is stored"):
        tc.assertFalse(w.errors(a))
        tc.assertEqual(w.rows(c.query("SELECT count(*) FROM users WHERE id > 100000")), [["5001"]])
    c.query("DELETE FROM users WHERE id > 100000")
    set_setting(d, "sql_motion_row_max", "0")
    with tc.subTest("limit: picoemu set sql_motion_row_max 0 turns it off"):
        tc.assertEqual(len(w.rows(c.query("SELECT id FROM users"))), 6000)
    set_setting(d, "sql_motion_row_max", "100")
    a = c.query("SELECT id FROM users WHERE id <= 150")
    with tc.subTest("limit: picoemu set sql_motion_row_max 100"):
        tc.assertEqual([e["M"] for e in w.errors(a)],
                       ["sbroad: Exceeded maximum number of rows (100) in virtual table: 101"])
    set_setting(d, "sql_motion_row_max", "5000")
    c2 = w.Conn(fport, "picoroute", "picoroute", options="sql_motion_row_max=0")
    with tc.subTest("limit: startup option sql_motion_row_max=0"):
        tc.assertEqual(len(w.rows(c2.query("SELECT id FROM users"))), 6000)
    a = c2.query("SELECT id FROM users OPTION (sql_motion_row_max = 10)")
    with tc.subTest("limit: statement OPTION wins over the startup option"):
        tc.assertEqual([e["M"] for e in w.errors(a)],
                       ["sbroad: Exceeded maximum number of rows (10) in virtual table: 11"])
    c2.close()


def dialect(tc: unittest.TestCase, d: str, c: w.Conn, m: Doc) -> None:
    # ---- dialect -----------------------------------------------------------------------------------
    a = c.query("SELECT * FROM users WHERE name NOT LIKE 'x'")
    e = w.errors(a)
    with tc.subTest("dialect: NOT LIKE fails with XX000 sbroad: rule parsing error"):
        tc.assertEqual(len(e), 1)
        tc.assertEqual(e[0]["C"], "XX000")
        tc.assertTrue(e[0]["M"].startswith("sbroad: rule parsing error: "), e)
        tc.assertEqual(w.kinds(a), "EZ")
    c.send(w.parse("INSERT INTO users (id, name, v) VALUES (200001, 'a', 1)") + w.bind() + w.execute()
           + w.parse("SELECT id FROM users WHERE name NOT ILIKE 'x'") + w.bind() + w.execute()
           + w.parse("INSERT INTO users (id, name, v) VALUES (200002, 'b', 1)") + w.bind() + w.execute() + w.sync())
    a = c.until_ready()
    got = w.rows(c.query("SELECT id FROM users WHERE id > 200000 ORDER BY id"))
    with tc.subTest("dialect: extended protocol: the refused Parse answers an error, the front skips to Sync"):
        tc.assertEqual(w.kinds(a), "12CEZ", (w.kinds(a), got))
        tc.assertEqual(got, [["200001"]], (w.kinds(a), got))
    c.query("DELETE FROM users WHERE id > 200000")
    a = c.query("SELECT pg_is_in_recovery()")
    with tc.subTest("dialect: PostgreSQL-only functions are refused"):
        tc.assertEqual(w.kinds(a), "EZ")
    r2 = subprocess.run([PICOEMU, "--dir", d, "psql", m["name"], "--", "-Atc",
                         "SELECT pg_is_in_recovery()"], capture_output=True, text=True, timeout=30)
    with tc.subTest("private port: picoemu psql bypasses the front"):
        tc.assertEqual(r2.stdout.strip(), "f", r2.stderr)


def tcl_and_explain(tc: unittest.TestCase, c: w.Conn) -> None:
    # ---- BEGIN/COMMIT/ROLLBACK: autocommit only ------------------------------------------------------
    a = c.query("BEGIN")
    c.query("INSERT INTO users (id, name, v) VALUES (300001, 'tx', 1)")
    b = c.query("ROLLBACK")
    with tc.subTest("tcl: BEGIN/ROLLBACK answered by the front, the INSERT stays (autocommit)"):
        tc.assertEqual(a[0], ("C", "BEGIN"))
        tc.assertEqual(a[-1], ("Z", "I"))
        tc.assertEqual(b[0], ("C", "ROLLBACK"))
        tc.assertEqual(w.rows(c.query("SELECT count(*) FROM users WHERE id = 300001")), [["1"]])
    a = w.extended(c, "COMMIT")
    with tc.subTest("tcl: COMMIT in the extended protocol"):
        tc.assertEqual(w.kinds(a), "12nCZ", a)
        tc.assertEqual(a[3], ("C", "COMMIT"), a)
    c.query("DELETE FROM users WHERE id = 300001")
    # ---- a plain EXPLAIN, answered by the front as Picodata answers it (explain/) ---------------------
    line = "buckets = [%d]" % hashing.bucket_id([1], 10)  # --bucket-count 10, above
    a = c.query("EXPLAIN SELECT id FROM users WHERE id = 1")
    with tc.subTest("explain: a simple Query gets Picodata's plan, its buckets line last"):
        tc.assertEqual(w.kinds(a)[0], "T", a)
        tc.assertEqual(w.rows(a)[-1], [line], a)
        tc.assertEqual(a[-2], ("C", "EXPLAIN %d" % len(w.rows(a))), a)
    a = w.extended(c, 'EXPLAIN SELECT "id" FROM "users" WHERE ("id" = $1)', [1])
    with tc.subTest("explain: in the extended protocol the parameter is bound first"):
        tc.assertEqual(w.kinds(a)[:3], "12T", a)
        tc.assertEqual(w.rows(a)[-1], [line], a)
        tc.assertEqual(w.kinds(a)[-1], "Z", a)
    with tc.subTest("explain: a table that does not exist fails as in Picodata"):
        tc.assertEqual(codes(c.query("EXPLAIN SELECT * FROM nope WHERE id = 1")),
                       ['XX000 sbroad: table with name "nope" not found'])
    # EXPLAIN (RAW) parses in Picodata (it used to be refused by the function rule) and is refused as
    # not emulated, never sent to the server behind the front; (FMT) alone is a plain EXPLAIN on 26.1.
    a = c.query("EXPLAIN (RAW, FMT) SELECT id FROM users WHERE id = 1")
    with tc.subTest("explain: (RAW) is refused as not emulated, XX000, audited"):
        tc.assertEqual([x.split(" (")[0] for x in codes(a)], ["XX000 picoemu: EXPLAIN"], a)
        tc.assertIn("EXPLAIN (RAW) is not emulated", codes(a)[0])
        tc.assertEqual(w.kinds(a)[-1], "Z", a)
    a = c.query("EXPLAIN (FMT) SELECT id FROM users WHERE id = 1")
    with tc.subTest("explain: (FMT) alone answers as a plain EXPLAIN"):
        tc.assertEqual(w.rows(a)[-1], [line], a)


def options(tc: unittest.TestCase, d: str, c: w.Conn, fport: int, r: Doc) -> None:
    # ---- OPTION, startup options, precedence, GUCs ---------------------------------------------------
    cp = w.Conn(fport, "picoroute", "picoroute", options="read_preference=replica,sql_vdbe_opcode_max=123,nonsense=1")
    with tc.subTest("options: startup options become the connection's GUCs (unknown names ignored)"):
        tc.assertEqual(w.rows(cp.query(PROBE)), [["replica", None, "123"]])
    with tc.subTest("options: statement OPTION overrides them for that statement only"):
        tc.assertEqual(w.rows(cp.query(PROBE + " OPTION (read_preference = any, sql_vdbe_opcode_max = 9)")),
                       [["any", None, "9"]])
        tc.assertEqual(w.rows(w.extended(cp, PROBE + " OPTION (read_preference = leader)")), [["leader", None, "123"]])
        tc.assertEqual(w.rows(cp.query(PROBE)), [["replica", None, "123"]])
        tc.assertEqual(w.rows(w.extended(cp, PROBE)), [["replica", None, "123"]])
    cp.send(w.parse(PROBE + " OPTION (read_preference = leader)") + w.bind() + w.execute()
            + w.parse("SELECT 1/0 OPTION (read_preference = any)") + w.bind() + w.execute() + w.sync())
    cp.until_ready()
    with tc.subTest("options: a failed statement with OPTION does not leak its values"):
        tc.assertEqual(w.rows(w.extended(cp, PROBE)), [["replica", None, "123"]])
    cp.close()
    # (unset: NULL, or "" once a statement's value was restored; the storage reads both as unset)
    with tc.subTest("options: cluster sql_vdbe_opcode_max when nothing overrides it"):
        tc.assertEqual(unset(w.rows(c.query(PROBE))), [[None, None, "0"]])
    startup_refusals(tc, fport)
    set_version(d, NO_READ_PREFERENCE)
    a = c.query(PROBE + " OPTION (read_preference = replica)")
    with tc.subTest("version %s: OPTION (read_preference) is a parse error" % NO_READ_PREFERENCE):
        tc.assertEqual(w.kinds(a), "EZ")
    set_version(d, FORWARD)
    with tc.subTest("version with forward: OPTION (forward = off) sets picoemu.strict"):
        tc.assertEqual(unset(w.rows(c.query(PROBE + " OPTION (forward = off)"))), [[None, "on", "0"]])
    ch = w.Conn(fport, "picoroute", "picoroute", options="forward=off")
    with tc.subTest("version with forward: startup forward=off"):
        tc.assertEqual(w.rows(ch.query(PROBE)), [[None, "on", "0"]])
    forward_by_bucket_set(tc, c, ch, r["front_port"])
    tag = "sbroad: Query 1 from EXPLAIN (RAW): "
    with tc.subTest("version with forward (26.2.1-rc1 on): the row limits carry the EXPLAIN (RAW) query tag"):
        tc.assertEqual(codes(c.query("SELECT id FROM users WHERE id <= 10 OPTION (sql_motion_row_max = 3)")),
                       ["XX000 " + tag + "Exceeded maximum number of rows (3) in virtual table: 4"])
        a = w.extended(c, "INSERT INTO users (id, name, v, ts) VALUES ($1, 'x', 1, NULL), ($2, 'y', 1, NULL) "
                          "OPTION (sql_motion_row_max = 1)", [200001, 200002])
        tc.assertEqual(codes(a), ["XX000 " + tag + "Exceeded maximum number of rows (1) in virtual table: 2"])
    with tc.subTest("version with forward (26.2.1-rc1 on): the opcode limit carries the EXPLAIN (RAW) query tag"):
        a = c.query("SELECT id FROM users WHERE v >= 0 OPTION (sql_vdbe_opcode_max = 10, sql_motion_row_max = 0)")
        tc.assertEqual(codes(a), ["XX000 " + tag + "Reached a limit on max executed vdbe opcodes. Limit: 10"])
    ch.close()
    leader_only_reads(tc, d, c, fport)  # at FORWARD, which has unlogged tables
    set_version(d, PLAIN)


def vdbe(tc: unittest.TestCase, d: str, fport: int) -> None:
    # ---- sql_vdbe_opcode_max, approximated by rows examined in the receiving instance's storage ------
    set_setting(d, "sql_vdbe_opcode_max", "45000")
    vd = w.Conn(fport, "picoroute", "picoroute", application_name="selftest-front")
    vdbe_45000 = "sbroad: Reached a limit on max executed vdbe opcodes. Limit: 45000"
    with tc.subTest("vdbe: the connection gets the cluster value"):
        tc.assertEqual(w.rows(vd.query(PROBE)), [[None, None, "45000"]])
    a = vd.query("SELECT count(*) FROM users WHERE name = 'nobody'")
    with tc.subTest("vdbe: an unindexed scan of 6000 rows in one storage fails (simple protocol)"):
        tc.assertEqual([(x["C"], x["M"]) for x in w.errors(a)], [("XX000", vdbe_45000)], a)
        tc.assertFalse(w.rows(a), a)
    a = w.extended(vd, "SELECT count(*) FROM users WHERE name = $1", ["nobody"])
    with tc.subTest("vdbe: ... and in the extended protocol"):
        tc.assertEqual([x["M"] for x in w.errors(a)], [vdbe_45000], a)
    with tc.subTest("vdbe: a point read passes"):
        tc.assertEqual(w.rows(vd.query("SELECT name FROM users WHERE id = 7")), [["name_7"]])
        tc.assertEqual(w.rows(w.extended(vd, "SELECT name FROM users WHERE id = $1", [7])), [["name_7"]])
    with tc.subTest("vdbe: OPTION (sql_vdbe_opcode_max = 0) lifts it"):
        tc.assertEqual(w.rows(vd.query("SELECT count(*) FROM users WHERE name = 'nobody' "
                                       "OPTION (sql_vdbe_opcode_max = 0)")), [["0"]])
    v2 = w.Conn(fport, "picoroute", "picoroute", options="sql_vdbe_opcode_max=100000")
    with tc.subTest("vdbe: startup option sql_vdbe_opcode_max=100000 lifts it"):
        tc.assertEqual(w.rows(w.extended(v2, "SELECT count(*) FROM users WHERE name = $1", ["nobody"])), [["0"]])
    v2.close()
    set_setting(d, "sql_vdbe_opcode_max", "1000")
    a = vd.query("UPDATE users SET name = 'changed' WHERE id <= 200")
    b = w.extended(vd, "DELETE FROM users WHERE id <= $1", [200])
    left = w.rows(vd.query("SELECT count(*) FROM users WHERE id <= 200 AND name <> 'changed' "
                           "OPTION (sql_vdbe_opcode_max = 0)"))
    with tc.subTest("vdbe: a write that examines too many rows fails and is rolled back"):
        tc.assertEqual([x["M"] for x in w.errors(a) + w.errors(b)],
                       ["sbroad: Reached a limit on max executed vdbe opcodes. Limit: 1000"] * 2, (a, b, left))
        tc.assertEqual(left, [["200"]], (a, b, left))
    set_setting(d, "sql_vdbe_opcode_max", "0")
    vd.close()


def bind_rules(tc: unittest.TestCase, c: w.Conn) -> None:
    # ---- Bind rules ------------------------------------------------------------------------------------
    a = w.extended(c, "SELECT count(*) FROM users WHERE ts < $1", ["01/02/2025 10:00:00"])
    with tc.subTest("bind: non-ISO timestamptz text fails with 22P02"):
        tc.assertEqual([x["C"] for x in w.errors(a)], ["22P02"], a)
    a = w.extended(c, "SELECT count(*) FROM users WHERE ts < $1", ["2025-01-01 00:10:00+00"])
    with tc.subTest("bind: ISO timestamptz text accepted"):
        tc.assertEqual(w.rows(a), [["599"]], a)
    a = w.extended(c, "SELECT CAST($1 AS json)", ['{"a": 1}'])
    with tc.subTest("bind: a json parameter fails with 0A000 cannot represent json in sbroad"):
        tc.assertEqual([(x["C"], x["M"]) for x in w.errors(a)],
                       [("0A000", "failed to bind parameter $1: feature is not supported: cannot represent json "
                                  "in sbroad")], a)
    with tc.subTest("bind: a NULL json parameter is fine"):
        tc.assertEqual(w.rows(w.extended(c, "SELECT CAST($1 AS json)", [None])), [[None]])


def audit_cancel_ssl(tc: unittest.TestCase, d: str, c: w.Conn, fport: int) -> None:
    # ---- the audit --------------------------------------------------------------------------------------
    rc, entries = audit(d)
    kinds = sorted({e["kind"] for e in entries})  # the vdbe refusals are of kind "limit"
    with tc.subTest("audit: refused statements recorded with their client, exit 1"):
        tc.assertEqual(rc, 1, (rc, kinds))
        tc.assertEqual(kinds, ["bind", "dialect", "explain", "limit", "startup"], (rc, kinds))
        tc.assertTrue(all(e["application_name"] == "selftest-front" and e["user"] == "picoroute" and e["peer"]
                          for e in entries if e["kind"] == "dialect"), (rc, kinds))
        tc.assertTrue(any("NOT LIKE" in e["statement"] for e in entries), (rc, kinds))
    emu(d, "audit", "--clear")
    rc, entries = audit(d)
    with tc.subTest("audit: --clear empties it, exit 0"):
        tc.assertEqual(rc, 0)
        tc.assertEqual(entries, [])

    # ---- CancelRequest, SSLRequest -----------------------------------------------------------------------
    # Picodata has no cancel: no BackendKeyData at startup, a CancelRequest closes the connection
    # unanswered; the front records it as refused, so a client that sends one fails its audit.
    cc = w.Conn(fport, "picoroute", "picoroute")
    with tc.subTest("cancel: no BackendKeyData at startup (Picodata sends none)"):
        tc.assertIsNone(cc.key)
    ck = socket.create_connection(("127.0.0.1", fport), timeout=10)
    ck.sendall(struct.pack("!II", 16, 80877102) + b"\0" * 8)
    with tc.subTest("cancel: a CancelRequest is closed unanswered"):
        tc.assertEqual(ck.recv(1), b"")
    ck.close()
    with tc.subTest("cancel: the statements of the session go on"):
        tc.assertEqual(w.rows(cc.query("SELECT count(*) FROM users WHERE id = 1")), [["1"]])
    rc, entries = audit(d)
    with tc.subTest("cancel: recorded in the audit as refused (kind cancel)"):
        tc.assertEqual([e["kind"] for e in entries], ["cancel"], entries)
    cc.close()
    sk = socket.create_connection(("127.0.0.1", fport), timeout=10)
    sk.sendall(struct.pack("!II", 8, 80877103))
    with tc.subTest("ssl: SSLRequest answered N"):
        tc.assertEqual(sk.recv(1), b"N")
    sk.close()


def stop_start(tc: unittest.TestCase, d: str, r: Doc) -> None:
    # ---- stop/start ---------------------------------------------------------------------------------------
    emu(d, "stop", r["name"])
    s = status(d)
    with tc.subTest("stop: the front stops with its instance"):
        tc.assertTrue(pg.port_is_free(r["front_port"]))
        tc.assertFalse(s["instances"][1]["front_running"])
    emu(d, "start", r["name"])
    rr = w.Conn(r["front_port"], "picoroute", "picoroute")
    with tc.subTest("start: the front is back"):
        tc.assertEqual(w.rows(rr.query("SELECT count(*) FROM users WHERE id = 1")), [["1"]])
    rr.close()
