#!/usr/bin/env python3
"""Self-test of picoemu: exercises every command against real small clusters and checks the results.

Usage: selftest.py [--keep] [test_NAME ...]   (env PICOEMU_SELFTEST_PORT: first port, default 57400;
       PICOEMU_SELFTEST_ONLY=front,main: only those scenarios, as test_front_cluster test_main_cluster)
A unittest suite: each cluster scenario is one test case (a function below, given the test case as
`tc`) and each of its checks a subTest with real assertions, so that one failed check does not stop
the scenario. Prints an `ok`/`FAIL` line per check and ends with `N passed, M failed` (checks); exits 1
on any failure. Bounded: after 420 s the running scenario stops at its next check and the later ones
do not start (the clusters are removed in every case)."""

import decimal
import json
import os
import random
import re
import signal
import subprocess
import sys
import unittest

sys.dont_write_bytecode = True  # never leave __pycache__ in test/ (test/tools is read-only for us)
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))

import bucket_hash_reference as ref  # noqa: E402
import emu_caps  # noqa: E402
import emu_pg as pg  # noqa: E402
import pgwire as w  # noqa: E402
import selftest_concurrency  # noqa: E402
import selftest_front  # noqa: E402
import selftest_private  # noqa: E402
import test_key_route  # noqa: E402
from emu_sql import lit as sql_lit  # noqa: E402
from emu_state import compress, expand, rebalance, segments, target_counts  # noqa: E402

PICOEMU = os.path.join(HERE, "picoemu")
BASE = int(os.environ.get("PICOEMU_SELFTEST_PORT", "57400"))
# The emulated builds of the two clusters, chosen by what they can do (never by name): the main
# cluster's has every capability of the table (it prunes by bucket_id: 26.2.1-rc2), the old one's none
# (25.5.10).
FULL = [b for b in emu_caps.BUILDS if all(emu_caps.capabilities(b).values())][-1]
BARE = [b for b in emu_caps.BUILDS if not any(emu_caps.capabilities(b).values())][0]
TIME_LIMIT = 420


def emu(d, *args, expect_ok=True):
    res = subprocess.run([PICOEMU, "--dir", d] + list(args), capture_output=True, text=True, timeout=150)
    if expect_ok and res.returncode != 0:
        raise RuntimeError("picoemu %s failed: %s%s" % (" ".join(args), res.stdout, res.stderr))
    return res


def status(d):
    """The status, with each instance's "port" replaced by its private PostgreSQL port: the checks of
    this file inspect the servers with PostgreSQL SQL, which the Picodata front refuses. The advertised
    port (the front) stays as "front_port"; selftest_front.py tests the front itself."""
    s = json.loads(emu(d, "status", "--json").stdout)
    for i in s.get("instances", []):
        i["front_port"], i["port"] = i["port"], i["private_port"]
    return s


def q(port, sql, user="admin"):
    return pg.psql(port, sql, user=user, password=user)


def q1(port, sql, user="admin"):
    rows = q(port, sql, user)
    return rows[0][0] if rows else None


def qerr(port, sql, user="admin", options=None):
    """Runs sql, returns the error text ('' when it succeeded)."""
    env = dict(os.environ, PGPASSWORD=user)
    if options:
        env["PGOPTIONS"] = options
    res = subprocess.run([pg.pgbin("psql"), "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                          "-p", str(port), "-U", user, "-d", "picodata", "-c", sql],
                         capture_output=True, text=True, timeout=60, env=env)
    return res.stderr.strip() if res.returncode else ""


CATALOG_DUMP = """
SELECT 'i', name, uuid, raft_id::text, replicaset_name, replicaset_uuid, current_state::text, target_state::text,
       failure_domain::text, tier FROM _pico_instance
UNION ALL SELECT 'p', raft_id::text, address, connection_type, '', '', '', '', '', '' FROM _pico_peer_address
UNION ALL SELECT 'r', name, uuid, current_master_name, target_master_name, tier, weight::text, state,
       weight_origin, current_config_version::text FROM _pico_replicaset
UNION ALL SELECT 't', name, replication_factor::text, bucket_count::text, is_default::text,
       vshard_bootstrapped::text, current_vshard_config_version::text, '', '', '' FROM _pico_tier
UNION ALL SELECT 'x', name, distribution::text, format::text, '', '', '', '', '', '' FROM _pico_table
UNION ALL SELECT 'b', _pico_bucket(t.name)::text, '', '', '', '', '', '', '', '' FROM _pico_tier t
ORDER BY 1, 2, 3, 4"""


COUNTER_SQL = ("SELECT seq_scan + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE schemaname = "
               "'_picoemu_local' AND relname = 'users'")


def touched(ports, run, settle=1.5):
    """Runs run(), then returns the ports whose storage counters for users moved (statistics are
    published by the other sessions at most about once a second: poll, then let them settle)."""
    before = {p: int(q1(p, COUNTER_SQL)) for p in ports}
    run()
    deadline = time.time() + 5
    moved = []
    while time.time() < deadline and not moved:
        time.sleep(0.2)
        moved = [p for p in ports if int(q1(p, COUNTER_SQL)) != before[p]]
    time.sleep(settle)
    return sorted(p for p in ports if int(q1(p, COUNTER_SQL)) != before[p])


def running_ports(s):
    return [i["port"] for i in s["instances"] if i["running"]]


def catalog_consistent(tc, d, name):
    s = status(d)
    dumps = {i["name"]: q(i["port"], CATALOG_DUMP, "picoroute") for i in s["instances"] if i["running"]}
    first = next(iter(dumps.values()))
    same = all(v == first for v in dumps.values())
    with tc.subTest("%s: catalog identical on %d running instances" % (name, len(dumps))):
        tc.assertTrue(same, "" if same else json.dumps({k: v[:3] for k, v in dumps.items()})[:800])
    return s, first


def total_counts(s, table="users"):
    return {i["name"]: int(q1(i["port"], "SELECT count(*) FROM %s" % table)) for i in s["instances"] if i["running"]}


def storage_ok(s, table="users"):
    """Every running instance stores only rows of buckets its replicaset owns."""
    bad = {}
    for i in s["instances"]:
        if not i["running"]:
            continue
        n = q1(i["port"], "SELECT count(*) FROM _picoemu_local.%s x WHERE NOT EXISTS (SELECT 1 FROM "
               "_picoemu.bucket_range r WHERE x.bucket_id BETWEEN r.bucket_start AND r.bucket_end AND "
               "r.replicaset_name = %s)" % (table, "'%s'" % i["replicaset"]))
        if n != "0":
            bad[i["name"]] = n
    return bad


def master_port(s, rs):
    m = next(r["master"] for r in s["replicasets"] if r["name"] == rs)
    return next(i["port"] for i in s["instances"] if i["name"] == m)


def port_of(s, name):
    return next(i["port"] for i in s["instances"] if i["name"] == name)


def bucket_math(tc):
    owners = expand(compress(rebalance([None] * 3001, target_counts(3000, [("a", 1), ("b", 1)]))), 3000)
    with tc.subTest("math: initial split contiguous"):
        tc.assertEqual(compress(owners), [[1, 1500, "a"], [1501, 3000, "b"]])
    new = rebalance(owners, target_counts(3000, [("a", 1), ("b", 1), ("c", 1)]))
    moved = sum(e - s + 1 for _, _, s, e in segments(owners, new))
    with tc.subTest("math: adding a third replicaset moves the minimum (1000)"):
        tc.assertEqual(moved, 1000, str(moved))
    with tc.subTest("math: weights 1:2 give 1000/2000"):
        tc.assertEqual(target_counts(3000, [("a", 1), ("b", 2)]), {"a": 1000, "b": 2000})


# Doubles around every edge of 26.1.1's rule (an integral double in [-2^63, 2^64) hashes as an integer).
DOUBLE_EDGES = [1.0, -3.0, 1.5, 1e300, -1e300, -0.0, 0.0, float("nan"), float("inf"), float("-inf"), 255.0, -33.0,
                2.0 ** 53, 2.0 ** 53 + 2, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 2.0 ** 64 - 2048, -2.0 ** 63 - 2048,
                2.0 ** 63 - 1024, 4294967296.0, -2147483649.0, 5e-324] + [e[0] for e in ref.DOUBLE_EDGES]


def check_hash(tc, port, rule):
    """The PL/pgSQL encoders against the Python reference; doubles by `rule`, the emulated version's."""
    D = decimal.Decimal
    random.seed(7)
    vals = [0, 1, -1, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 63 - 1, -32, -33, -128,
            -129, -32768, -32769, -2 ** 31, -2 ** 31 - 1, -2 ** 63, "", "lol", "héllo ☃", "a" * 37, True,
            False, None, 2.0, -0.0, 1.5e300, 3.14159, D("1"), D("1.0"), D("-12.340"), D("0.00"), D("007.5"),
            D("123456789012345678901234567890.12345678"), D("-0.001"),
            uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"), uuid.uuid4()]
    vals += [random.randint(-2 ** 63, 2 ** 63 - 1) for _ in range(20)] + DOUBLE_EDGES

    def enc(v):
        if v is None:
            return "_picoemu.enc_int(NULL)"
        if isinstance(v, bool):
            return "_picoemu.enc_bool(%s)" % v
        if isinstance(v, int):
            return "_picoemu.enc_int('%d'::int8)" % v
        if isinstance(v, float):
            return "_picoemu.enc_double('%r'::float8)" % v
        if isinstance(v, str):
            return "_picoemu.enc_text('%s')" % v.replace("'", "''")
        if isinstance(v, D):
            return "_picoemu.enc_decimal('%s'::numeric)" % v
        return "_picoemu.enc_uuid('%s'::uuid)" % v
    keys = [[v] for v in vals] + [["lol", 5], [1, "x", D("2.5")], [uuid.uuid4(), -7, True]]
    sql = "SELECT " + ", ".join("encode(%s, 'hex') || ':' || _picoemu.bucket_id(%s, 3000)"
                                % (" || ".join(map(enc, k)), " || ".join(map(enc, k))) for k in keys)
    row = q(port, sql)[0]
    bad = [(k, got) for k, got in zip(keys, row)
           if got != ref.encode_key(k, rule).hex() + ":" + str(ref.bucket_id(k, 3000, rule))]
    with tc.subTest("hash: PL/pgSQL encoders + murmur3 match the Python reference on %d keys (%s)"
                    % (len(keys), rule)):
        tc.assertFalse(bad, repr(bad[:3]))
    for fn, fn_rule in (("enc_double_25_5", ref.RULE_25_5), ("enc_double_26_1", ref.RULE_26_1)):
        row = q(port, "SELECT " + ", ".join("encode(_picoemu.%s('%r'::float8), 'hex')" % (fn, v)
                                            for v in DOUBLE_EDGES))[0]
        bad = [(v, got) for v, got in zip(DOUBLE_EDGES, row) if got != ref.encode_double(v, fn_rule).hex()]
        with tc.subTest("hash: %s matches the reference's %s rule on the edges" % (fn, fn_rule)):
            tc.assertFalse(bad, repr(bad[:3]))
    with tc.subTest("hash: verified examples 1 -> 1934, ('lol',5) -> 442, decimal 1 -> 2135"):
        tc.assertEqual(q(port, "SELECT _picoemu.bucket_id(_picoemu.enc_int(1), 3000), "
                               "_picoemu.bucket_id(_picoemu.enc_text('lol') || _picoemu.enc_int(5), 3000), "
                               "_picoemu.bucket_id(_picoemu.enc_decimal(1::numeric), 3000)")[0],
                       ["1934", "442", "2135"])


def double_key(tc, d, port, version, integral):
    """A float8 sharding key: 1.0 (stored by `insert`, hashed in Python) and -3.0, 1.5 (inserted with SQL,
    hashed by the storage trigger) land in the buckets of the emulated version's rule (26.1's when
    `integral`, else 25.5's)."""
    emu(d, "create-table", "dkeys", "--columns", "id float8, v text")
    emu(d, "insert", "dkeys", "--values", '[1.0, "insert"]')
    q(port, "INSERT INTO dkeys VALUES (-3.0, 'sql'), (1.5, 'sql')")
    got = q(port, "SELECT id::text, bucket_id::text FROM dkeys ORDER BY id")
    rule = ref.RULE_26_1 if integral else ref.RULE_25_5
    want = [[text, str(ref.bucket_id([v], 3000, rule))] for text, v in (("-3", -3.0), ("1", 1.0), ("1.5", 1.5))]
    with tc.subTest("%s: float8 keys -3.0, 1.0, 1.5 stored in the buckets of the %s rule" % (version, rule)):
        tc.assertEqual(got, want)
    one, integer_one = ref.bucket_id([1.0], 3000, rule), ref.bucket_id([1], 3000)
    if integral:
        with tc.subTest("%s: the double 1.0 lands in the integer 1's bucket (1934), 1.5 in 510" % version):
            tc.assertEqual((one, integer_one, got[1][1], got[2][1]), (1934, 1934, "1934", "510"))
    else:
        with tc.subTest("%s: the double 1.0 lands in bucket 2099, not the integer 1's 1934; 1.5 in 632"
                        % version):
            tc.assertEqual((one, integer_one, got[1][1], got[2][1]), (2099, 1934, "2099", "632"))
    emu(d, "drop-table", "dkeys")


def dnf_limit(tc, d, s, ports):
    """Capability dnf_chain_limit (26.1.6, 26.2.1-rc1 and later): a WHERE clause of more than 513 OR-of-AND
    chains is not routed by its key nor pruned by bucket_id: every replicaset is asked (counted), and the
    front logs it. MAX_DNF_CHAINS = 512 is checked after a pop: 513 chains still expand, 514 do not
    (emu_caps.dnf_most_chains)."""
    p1, _, p3, _ = ports
    f3 = s["instances"][2]["front_port"]
    amounts = lambda n: ", ".join(str(i) for i in range(n))  # noqa: E731
    t = touched(ports, lambda: q(f3, "SELECT id FROM users WHERE id = 1 AND amount IN (%s)" % amounts(513), "picoroute"))
    with tc.subTest("DNF limit: 513 chains, routed by the key: the owner only"):
        tc.assertEqual(t, [p3], str(t))
    t = touched(ports, lambda: q(f3, "SELECT id FROM users WHERE bucket_id = 1934 AND amount IN (%s)" % amounts(513),
                                 "picoroute"))
    with tc.subTest("DNF limit: 513 chains with bucket_id = N, pruned: the owner only"):
        tc.assertEqual(t, [p3], str(t))
    t = touched(ports, lambda: q(f3, "SELECT id FROM users WHERE id = 1 AND amount IN (%s)" % amounts(514), "picoroute"))
    with tc.subTest("DNF limit: 514 chains, not routed: every master is asked"):
        tc.assertEqual(t, [p1, p3], str(t))
    t = touched(ports, lambda: q(f3, "SELECT id FROM users WHERE bucket_id = 1934 AND amount IN (%s)" % amounts(514),
                                 "picoroute"))
    with tc.subTest("DNF limit: 514 chains with bucket_id = N, not pruned: every master is asked"):
        tc.assertEqual(t, [p1, p3], str(t))
    with open(os.path.join(d, "default_2_1", "front.log")) as f:
        logged = [line for line in f
                  if "DNF limit: a WHERE clause of 514 chains (Picodata expands at most 513)" in line]
    with tc.subTest("DNF limit: the front logs and counts each such statement"):
        tc.assertEqual(len(logged), 2, logged)
        tc.assertIn("(2 statements so far)", logged[-1])


def main_cluster(tc, d):
    t0 = time.time()
    emu(d, "--base-port", str(BASE), "up", "--picodata", FULL)
    up_time = time.time() - t0
    s = status(d)
    with tc.subTest("up: 2x2 cluster in %.1fs" % up_time):
        tc.assertEqual(len(s["instances"]), 4)
        tc.assertTrue(all(i["running"] for i in s["instances"]))
    with tc.subTest("up: roles"):
        tc.assertEqual([i["role"] for i in s["instances"]], ["master", "replica", "master", "replica"])
    with tc.subTest("up: bucket ranges"):
        tc.assertEqual([(b["start"], b["end"], b["replicaset"]) for b in s["tiers"][0]["buckets"]],
                       [(1, 1500, "default_1"), (1501, 3000, "default_2")])
    uuids = [i["uuid"] for i in s["instances"]]
    r = emu(d, "up")
    with tc.subTest("up again: harmless"):
        tc.assertEqual(r.returncode, 0)
        tc.assertEqual([i["uuid"] for i in status(d)["instances"]], uuids)
    s, dump = catalog_consistent(tc, d, "up")
    p1, p2, p3, p4 = [i["port"] for i in s["instances"]]

    cols = {t: [r[0] for r in q(p2, "SELECT column_name FROM information_schema.columns WHERE table_name = '%s' "
                                     "ORDER BY ordinal_position" % t)]
            for t in ("_pico_instance", "_pico_peer_address", "_pico_replicaset", "_pico_tier", "_pico_table")}
    with tc.subTest("catalog: _pico_instance columns"):
        tc.assertEqual(cols["_pico_instance"][:10], [
            "name", "uuid", "raft_id", "replicaset_name", "replicaset_uuid", "current_state", "target_state",
            "failure_domain", "tier", "picodata_version"], str(cols["_pico_instance"]))
    with tc.subTest("catalog: _pico_replicaset columns"):
        tc.assertEqual(cols["_pico_replicaset"][:11], [
            "name", "uuid", "current_master_name", "target_master_name", "tier", "weight", "weight_origin", "state",
            "current_config_version", "target_config_version", "promotion_vclock"])
    with tc.subTest("catalog: _pico_tier columns"):
        tc.assertEqual(cols["_pico_tier"][:8], [
            "name", "replication_factor", "can_vote", "current_vshard_config_version", "target_vshard_config_version",
            "vshard_bootstrapped", "bucket_count", "is_default"])
    with tc.subTest("catalog: _pico_peer_address/_pico_table columns"):
        tc.assertEqual(cols["_pico_peer_address"], ["raft_id", "address", "connection_type"])
        tc.assertLessEqual({"name", "distribution", "format"}, set(cols["_pico_table"]))
    with tc.subTest("catalog: current_state json text"):
        tc.assertEqual(q1(p4, "SELECT current_state::text FROM _pico_instance WHERE name = "
                                "'default_1_1'", "picoroute"), '["Online",1]')
    peers = q(p2, "SELECT i.name, a.address FROM _pico_instance i JOIN _pico_peer_address a USING (raft_id) "
                  "WHERE connection_type = 'pgproto' ORDER BY 1", "picoroute")
    with tc.subTest("catalog: pgproto addresses are the fronts"):
        tc.assertEqual(peers, [[i["name"], "127.0.0.1:%d" % i["front_port"]]
                            for i in s["instances"]])
    with tc.subTest("catalog: one iproto row per instance"):
        tc.assertEqual(q1(p2, "SELECT count(*) FROM _pico_peer_address WHERE connection_type = 'iproto'",
                          "picoroute"), "4")
    with tc.subTest("catalog: master by name"):
        tc.assertEqual(q(p4, "SELECT name, current_master_name, target_master_name, state FROM "
                             "_pico_replicaset ORDER BY 1", "picoroute"),
                                     [["default_1", "default_1_1", "default_1_1", "ready"],
                                             ["default_2", "default_2_1", "default_2_1", "ready"]])
    bj = json.loads(q1(p4, "SELECT _pico_bucket('default')", "picoroute"))
    rsu = {r["name"]: r["uuid"] for r in s["replicasets"]}
    with tc.subTest("_pico_bucket: documented shape"):
        tc.assertEqual(bj, [
            {"bucket_id_start": 1, "bucket_id_end": 1500, "current_replicaset_uuid": rsu["default_1"],
            "target_replicaset_uuid": rsu["default_1"], "tier_name": "default", "state": "active"},
            {"bucket_id_start": 1501, "bucket_id_end": 3000, "current_replicaset_uuid": rsu["default_2"],
            "target_replicaset_uuid": rsu["default_2"], "tier_name": "default", "state": "active"}], str(bj))
    with tc.subTest("_pico_bucket: null tier error"):
        tc.assertIn("ERROR:  _pico_bucket: tier name is null", qerr(p2, "SELECT _pico_bucket(NULL)", "picoroute"))
    with tc.subTest("_pico_bucket: unknown tier error"):
        tc.assertIn("ERROR:  _pico_bucket: tier 'x' doesn't exist", qerr(p2, "SELECT _pico_bucket('x')", "picoroute"))
    with tc.subTest("replica: read-only hot standby"):
        tc.assertEqual(q1(p2, "SELECT pg_is_in_recovery()"), "t")
        tc.assertIn("read-only transaction", qerr(p2, "DELETE FROM _picoemu.setting"))
    with tc.subTest("replica: streams from its master"):
        tc.assertEqual(q1(p1, "SELECT application_name FROM pg_stat_replication"), "default_1_2")

    ci = emu(d, "conninfo").stdout.strip()
    with tc.subTest("conninfo: lists every instance"):
        tc.assertEqual(ci, "host=%s port=%s dbname=picodata user=picoroute password=picoroute"
            % (",".join(["127.0.0.1"] * 4), ",".join(str(i["front_port"]) for i in s["instances"])), ci)
    res = subprocess.run([pg.pgbin("psql"), "-X", "-At", ci, "-c", "SELECT current_user"], capture_output=True,
                         text=True, timeout=30)
    with tc.subTest("conninfo: connects (password auth over TCP)"):
        tc.assertEqual(res.stdout.strip(), "picoroute", res.stderr)
    with tc.subTest("conninfo --instance"):
        tc.assertEqual(emu(d, "conninfo", "--instance", "default_2_2", "--user", "admin").stdout.strip(),
                       "host=127.0.0.1 port=%d dbname=picodata user=admin password=admin"
                       % s["instances"][3]["front_port"])
    with tc.subTest("auth: wrong password refused"):
        tc.assertTrue("password authentication failed"
            in qerr(p1, "SELECT 1", "nosuchuser") or "authentication failed" in qerr(p1, "SELECT 1", "nosuchuser"))

    emu(d, "revoke", "_pico_replicaset")
    with tc.subTest("revoke: permission denied for table _pico_replicaset on a replica"):
        tc.assertIn("permission denied for table _pico_replicaset",
                    qerr(p4, "SELECT * FROM _pico_replicaset", "picoroute"))
    emu(d, "grant", "_pico_replicaset")
    with tc.subTest("grant: readable again"):
        tc.assertEqual(qerr(p4, "SELECT * FROM _pico_replicaset", "picoroute"), "")
    emu(d, "drop-bucket-function")
    with tc.subTest("drop-bucket-function: gone everywhere"):
        tc.assertTrue(all(
            "function _pico_bucket(unknown) does not exist" in qerr(p, "SELECT _pico_bucket('default')", "picoroute")
            for p in (p1, p2, p3, p4)))
    emu(d, "restore-bucket-function")
    with tc.subTest("restore-bucket-function"):
        tc.assertTrue(all(qerr(p, "SELECT _pico_bucket('default')", "picoroute") == ""
                          for p in (p1, p2, p3, p4)))
    with tc.subTest("head: the storage hashes by 26.1's rule (picoemu.hash_rule)"):
        tc.assertEqual(q1(p2, "SELECT current_setting('picoemu.hash_rule')"), "26.1")
    check_hash(tc, p2, ref.RULE_26_1)
    double_key(tc, d, p1, FULL, integral=True)

    # ---- sharded data --------------------------------------------------------------------------
    emu(d, "create-table", "users", "--columns", "id int8, name text, amount numeric(12,2)")
    res = json.loads(emu(d, "load", "users", "--rows", "2000").stdout)
    with tc.subTest("load: rows spread over both replicasets"):
        tc.assertEqual(sum(res.values()), 2000, str(res))
        tc.assertEqual(len(res), 2, str(res))
    emu(d, "insert", "users", "--values", '[100001, "alice", "12.5"]', "--values", '{"id": 100002, "name": "bob"}')
    s = status(d)
    counts = total_counts(s)
    with tc.subTest("query: every instance sees all 2002 rows"):
        tc.assertEqual(set(counts.values()), {2002}, str(counts))
    with tc.subTest("storage: rows only on owners"):
        tc.assertFalse(storage_ok(s), str(storage_ok(s)))
    with tc.subTest("_pico_table: distribution"):
        tc.assertEqual(q1(p4, "SELECT distribution::text FROM _pico_table WHERE name = 'users'",
                         "picoroute"), '{"ShardedImplicitly":[["id"],"murmur3","default"]}')
    loc = json.loads(emu(d, "locate", "users", "--key", "[1]").stdout)
    with tc.subTest("locate: id 1 -> bucket 1934 on default_2"):
        tc.assertEqual(loc["bucket_id"], 1934)
        tc.assertEqual(loc["replicaset"], "default_2")
    with tc.subTest("storage: trigger refuses a row of a bucket not owned"):
        tc.assertIn("does not own bucket 1934", qerr(p1, "INSERT INTO _picoemu_local.users VALUES (1, 'x', 1, 1934)"))
    with tc.subTest("storage: trigger refuses a wrong bucket_id"):
        tc.assertIn("hashes to bucket", qerr(p3, "INSERT INTO _picoemu_local.users VALUES (777777, 'x', 1, 1934)"))
    with tc.subTest("view: id 1 read on default_1_2"):
        tc.assertEqual(q(p2, "SELECT id, name, bucket_id FROM users WHERE id = 1"), [["1", "name_1", "1934"]])
    # writes through a non-owner are forwarded to the owner
    err = qerr(p1, "INSERT INTO users VALUES (424242, 'fwd', 1.5); UPDATE users SET name = 'upd' WHERE id = 1;")
    b = ref.bucket_id([424242], 3000)
    owner = "default_1" if b <= 1500 else "default_2"
    with tc.subTest("view: insert/update forwarded to the owner"):
        tc.assertEqual(err, "", err)
        tc.assertEqual(q1(
            master_port(s, owner), "SELECT count(*) FROM _picoemu_local.users WHERE id = 424242"), "1", err)
        tc.assertEqual(q1(
            p3, "SELECT name FROM _picoemu_local.users WHERE id = 1"), "upd", err)
    with tc.subTest("view: delete forwarded"):
        tc.assertEqual(qerr(p1, "DELETE FROM users WHERE id = 424242"), "")
        tc.assertEqual(q1(p4, "SELECT count(*) FROM users WHERE id = 424242"), "0")
    plan_local = "\n".join(r[0] for r in q(p1, "EXPLAIN SELECT * FROM users WHERE bucket_id = 5"))
    plan_remote = "\n".join(r[0] for r in q(p1, "EXPLAIN SELECT * FROM users WHERE bucket_id = 1934"))
    with tc.subTest("pruning: owned bucket_id = N never leaves the instance"):
        tc.assertNotIn("Foreign Scan", plan_local, plan_local)
    with tc.subTest("pruning: foreign bucket_id = N skips local storage"):
        tc.assertNotIn("_picoemu_local", plan_remote, plan_remote)
        tc.assertNotIn("users_bucket_id", plan_remote, plan_remote)
        tc.assertIn("Foreign Scan", plan_remote, plan_remote)

    # counters: a read of bucket 1934 coordinated by default_1_1 is served by default_2_1's storage
    cq = ("SELECT seq_scan + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE schemaname = '_picoemu_local' "
          "AND relname = 'users'")
    before = int(q1(p3, cq))
    q(p1, "SELECT * FROM users WHERE bucket_id = 1934")
    deadline, after = time.time() + 5, before
    while time.time() < deadline and after == before:
        time.sleep(0.2)
        after = int(q1(p3, cq))
    with tc.subTest("counters: the owner's storage scan counter moved"):
        tc.assertGreater(after, before, "%d -> %d" % (before, after))
    cj = json.loads(emu(d, "counters", "users", "--json").stdout)
    with tc.subTest("counters command"):
        tc.assertEqual(set(cj), {"default_1_1", "default_1_2", "default_2_1", "default_2_2"})
        tc.assertIn("idx_scan", cj["default_2_1"]["users"])

    # ---- a build with every capability: pruning, BETWEEN, replica reads, local execution ----------
    with tc.subTest("version: status --json shows the build and its capabilities"):
        tc.assertEqual(s["picodata_version"], FULL)
        tc.assertEqual(s["capabilities"], {c: True for c in emu_caps.table()["capabilities"]})
    with tc.subTest("version: _pico_instance.picodata_version is the build as it reports itself"):
        tc.assertEqual(q1(p2, "SELECT DISTINCT picodata_version FROM _pico_instance"), FULL)
    with tc.subTest("version: version() through a front says 'picodata <build>' (26.2.1-rc1 on)"):
        tc.assertEqual(q1(s["instances"][1]["front_port"], "SELECT version()", "picoroute"), "picodata " + FULL)
        tc.assertEqual(s["version_function"], "picodata " + FULL)
    plan_between = "\n".join(r[0] for r in q(p1, "EXPLAIN SELECT * FROM users WHERE bucket_id BETWEEN 1 AND 1500"))
    with tc.subTest("pruning build: bucket_id BETWEEN does not restrict (the other replicaset is asked too)"):
        tc.assertIn("Foreign Scan", plan_between, plan_between)
    plan_own = "\n".join(r[0] for r in q(p1, "EXPLAIN SELECT * FROM users WHERE bucket_id = 5"))
    with tc.subTest("pruning build: a read of an owned bucket at the master runs locally (no hop)"):
        tc.assertNotIn("Foreign Scan", plan_own, plan_own)
        tc.assertIn("users_bucket_id", plan_own, plan_own)
    t = touched([p1, p2, p3, p4], lambda: q(p2, "SELECT * FROM users WHERE bucket_id = 5", "picoroute"))
    with tc.subTest("pruning build: a read at a replica without read_preference is answered by its master"):
        tc.assertEqual(t, [p1], str(t))
    t = touched([p1, p2, p3, p4], lambda: pg.psql(p2, "SET picoemu.read_preference = replica; "
                                                     "SELECT * FROM users WHERE bucket_id = 5",
                                                 user="picoroute", password="picoroute"))
    with tc.subTest("pruning build: read_preference = replica: the replica serves the read itself"):
        tc.assertEqual(t, [p2], str(t))
    t = touched([p1, p2, p3, p4], lambda: pg.psql(p2, "SET picoemu.read_preference = 'any'; "
                                                     "SELECT * FROM users WHERE bucket_id = 1934",
                                                 user="picoroute", password="picoroute"))
    with tc.subTest("pruning build: bucket_id = N restricts the read to the owner's master"):
        tc.assertEqual(t, [p3], str(t))
    with tc.subTest("read_preference: a bad value is refused"):
        tc.assertIn("invalid read_preference", qerr(
            p2, "SELECT count(*) FROM users", "picoroute", options="-c picoemu.read_preference=nearest"))
    t = touched([p1, p2, p3, p4], lambda: pg.psql(p1, "SET picoemu.read_preference = replica; "
                                                     "SELECT * FROM users WHERE bucket_id = 5",
                                                 user="picoroute", password="picoroute"))
    with tc.subTest("cluster read_preference: a master asked for replica reads its part on its replica"):
        tc.assertEqual(t, [p2], str(t))
    emu(d, "set", "read_preference", "replica")
    t = touched([p1, p2, p3, p4], lambda: q(p1, "SELECT * FROM users WHERE bucket_id = 5", "picoroute"))
    with tc.subTest("cluster read_preference: a session that names no read_preference takes the cluster's (replica)"):
        tc.assertEqual(t, [p2], str(t))
    t = touched([p1, p2, p3, p4], lambda: pg.psql(p1, "SET picoemu.read_preference = leader; "
                                                     "SELECT * FROM users WHERE bucket_id = 5",
                                                 user="picoroute", password="picoroute"))
    with tc.subTest("cluster read_preference: a session that names leader reads on its master, whatever the cluster says"):
        tc.assertEqual(t, [p1], str(t))
    emu(d, "set", "read_preference", "leader")
    with tc.subTest("cluster read_preference: status --json shows it"):
        tc.assertEqual(json.loads(emu(d, "status", "--json").stdout)["settings"]["read_preference"], "leader")
    emu(d, "create-table", "scratch", "--columns", "id int8, name text", "--unlogged")
    with tc.subTest("unlogged: a table opts in _pico_table, an UNLOGGED storage"):
        tc.assertEqual(q1(p2, "SELECT opts::text FROM _pico_table WHERE name = 'scratch'"), '[{"unlogged":[true]}]')
        tc.assertEqual(q1(p2, "SELECT opts::text FROM _pico_table WHERE name = 'users'"), "[]")
        tc.assertEqual(q1(p1, "SELECT relpersistence FROM pg_class WHERE oid = '_picoemu_local.scratch'::regclass"),
                       "u")
    with tc.subTest("unlogged: a global table cannot be"):
        tc.assertIn("Global tables can't be unlogged.",
                    emu(d, "create-table", "gscratch", "--columns", "id int8", "--global", "--unlogged",
                        expect_ok=False).stderr)
    emu(d, "drop-table", "scratch")

    in_flight(tc, s, p3)

    # strict mode
    emu(d, "strict", "on")
    e1 = qerr(p1, "SELECT * FROM users WHERE bucket_id = 1934", "picoroute")
    wkey = next(k for k in range(1000001, 1000100) if ref.bucket_id([k], 3000) > 1500)
    e2 = qerr(p1, "INSERT INTO users VALUES (%d, 'x', 1)" % wkey, "picoroute")
    e3 = qerr(p1, "SELECT * FROM users WHERE id = 1", "picoroute")
    with tc.subTest("strict: foreign bucket_id read refused"):
        tc.assertIn("forward=off", e1, e1)
        tc.assertIn("belongs to replicaset default_2", e1, e1)
    with tc.subTest("strict: foreign write refused"):
        tc.assertIn("forward=off", e2, e2)
    with tc.subTest("replica: writes refused (read-only, like Picodata replicas)"):
        tc.assertIn("read-only transaction", qerr(p2, "INSERT INTO users VALUES (%d, 'x', 1)" % wkey, "picoroute"))
    with tc.subTest("strict: foreign row read by key refused"):
        tc.assertIn("forward=off", e3, e3)
    with tc.subTest("strict: owner serves its key"):
        tc.assertEqual(q(p3, "SELECT name FROM users WHERE id = 1", "picoroute"), [["upd"]])
        tc.assertEqual(q(p4, "SELECT name FROM users WHERE bucket_id = 1934", "picoroute"), [["upd"]])
    with tc.subTest("strict: full scan refused"):
        tc.assertIn("forward=off", qerr(p4, "SELECT count(*) FROM users", "picoroute"))
    # through the fronts: judged by the statement's bucket set, Picodata's text (emu_route)
    f1, f3, f4 = (s["instances"][k]["front_port"] for k in (0, 2, 3))
    k1 = next(k for k in range(2, 100) if ref.bucket_id([k], 3000) <= 1500)
    fwd = 'cannot satisfy "forward = off": '
    with tc.subTest("strict front: a read by key at another replicaset is refused before it runs"):
        e = qerr(f1, "SELECT * FROM users WHERE id = 1", "picoroute")
        tc.assertIn(fwd + "buckets are not present on the current node", e, e)
    with tc.subTest("strict front: the owner's master runs it"):
        tc.assertEqual(qerr(f3, "SELECT name FROM users WHERE id = 1", "picoroute"), "")
    with tc.subTest("strict front: a keyless read is refused at a master even if the rows it finds are local"):
        e = qerr(f3, "SELECT id FROM users WHERE name = 'upd'", "picoroute")
        tc.assertIn(fwd + "buckets span multiple nodes and are not present on the current node", e, e)
    with tc.subTest("strict front: keys of both replicasets are refused"):
        e = qerr(f1, "SELECT * FROM users WHERE id IN (1, %d)" % k1, "picoroute")
        tc.assertIn(fwd + "buckets span multiple nodes", e, e)
    with tc.subTest("strict front: a replica refuses even its own replicaset's key"):
        e = qerr(f4, "SELECT * FROM users WHERE id = 1", "picoroute")
        tc.assertIn(fwd + "buckets are not present on the current node", e, e)
    with tc.subTest("strict: session override off"):
        tc.assertEqual(qerr(p1, "SELECT count(*) FROM users", "picoroute",
                            options="-c picoemu.strict=off"), "")
    emu(d, "strict", "off")
    with tc.subTest("strict off: coordinator again"):
        tc.assertEqual(qerr(p1, "SELECT * FROM users WHERE id = 1", "picoroute"), "")
    with tc.subTest("strict: session option -c picoemu.strict=on"):
        tc.assertIn("forward=off",
                    qerr(p1, "SELECT * FROM users WHERE id = 1", "picoroute", options="-c picoemu.strict=on"))
    dnf_limit(tc, d, s, [p1, p2, p3, p4])

    # ---- topology ---------------------------------------------------------------------------------
    emu(d, "move", "default", "1901", "2000", "default_1")
    s, _ = catalog_consistent(tc, d, "move")
    loc = json.loads(emu(d, "locate", "users", "--key", "[1]").stdout)
    with tc.subTest("move: bucket 1934 now on default_1"):
        tc.assertEqual(loc["replicaset"], "default_1")
        tc.assertEqual(q1(p1, "SELECT name FROM _picoemu_local.users WHERE id = 1"), "upd")
        tc.assertEqual(q1(p3, "SELECT count(*) FROM _picoemu_local.users WHERE id = 1"), "0")
    with tc.subTest("move: _pico_bucket ranges"):
        tc.assertEqual([(x["bucket_id_start"], x["bucket_id_end"]) for x in json.loads(
            q1(p4, "SELECT _pico_bucket('default')", "picoroute"))],
                    [(1, 1500), (1501, 1900), (1901, 2000), (2001, 3000)])
    with tc.subTest("move: rows intact"):
        tc.assertEqual(set(total_counts(s).values()), {2002})
        tc.assertFalse(storage_ok(s))

    emu(d, "add-replicaset")
    s, _ = catalog_consistent(tc, d, "add-replicaset")
    with tc.subTest("add-replicaset: 3 replicasets, 6 running instances"):
        tc.assertEqual(len(s["replicasets"]), 3)
        tc.assertEqual(sum(i["running"] for i in s["instances"]), 6)
    with tc.subTest("add-replicaset: rebalanced 1000 each"):
        tc.assertEqual([r["bucket_count"] for r in s["replicasets"]], [1000, 1000, 1000])
    with tc.subTest("add-replicaset: rows intact"):
        tc.assertEqual(set(total_counts(s).values()), {2002})
        tc.assertFalse(storage_ok(s))

    emu(d, "rebalance", "--weights", "default_1=1,default_2=2,default_3=1")
    s, _ = catalog_consistent(tc, d, "rebalance --weights")
    with tc.subTest("rebalance --weights: 750/1500/750"):
        tc.assertEqual([r["bucket_count"] for r in s["replicasets"]], [750, 1500, 750])
    with tc.subTest("rebalance --weights: weight column"):
        tc.assertEqual(q(p2, "SELECT weight, weight_origin FROM _pico_replicaset WHERE "
                             "name = 'default_2'", "picoroute"), [["2", "user"]])
    emu(d, "rebalance")
    s = status(d)
    with tc.subTest("rebalance: even again"):
        tc.assertEqual([r["bucket_count"] for r in s["replicasets"]], [1000, 1000, 1000])

    emu(d, "expel", "default_3")
    s, _ = catalog_consistent(tc, d, "expel")
    with tc.subTest("expel: state expelled, instances Expelled and stopped"):
        tc.assertEqual(q1(p1, "SELECT state FROM _pico_replicaset WHERE name = 'default_3'"), "expelled")
        tc.assertEqual(q(p1, "SELECT DISTINCT current_state::text FROM _pico_instance "
                             "WHERE replicaset_name = 'default_3'"), [['["Expelled",1]']])
        tc.assertFalse(any(i["running"] for i in s["instances"] if i["replicaset"] == "default_3"))
    with tc.subTest("expel: its buckets moved away"):
        tc.assertEqual({b["replicaset"] for b in s["tiers"][0]["buckets"]}, {"default_1", "default_2"})
        tc.assertEqual([r["bucket_count"] for r in s["replicasets"][:2]], [1500, 1500])
    with tc.subTest("expel: rows intact"):
        tc.assertEqual(set(total_counts(s).values()), {2002})
        tc.assertFalse(storage_ok(s))
    with tc.subTest("expel: conninfo skips expelled"):
        tc.assertEqual(len(emu(d, "conninfo").stdout.split()[1].split(",")), 4)

    emu(d, "switch-master", "default_1")
    s, _ = catalog_consistent(tc, d, "switch-master")
    with tc.subTest("switch-master: new master in catalog"):
        tc.assertEqual(q(p4, "SELECT current_master_name, target_master_name FROM "
                             "_pico_replicaset WHERE name = 'default_1'", "picoroute"),
                                     [["default_1_2", "default_1_2"]])
    with tc.subTest("switch-master: old master is a standby of the new one"):
        tc.assertEqual(q1(p1, "SELECT pg_is_in_recovery()"), "t")
        tc.assertEqual(q1(p2, "SELECT pg_is_in_recovery()"), "f")
        tc.assertEqual(q1(p2, "SELECT application_name FROM pg_stat_replication"), "default_1_1")
    with tc.subTest("switch-master: writes reach the new master"):
        tc.assertRegex(qerr(p3, "INSERT INTO users VALUES (1, 'again', 1)"), "(?i)duplicate key")
        tc.assertEqual(qerr(p3, "UPDATE users SET name = 'after-switch' WHERE id = 1"), "")
        tc.assertEqual(q1(json.loads(emu(d, "locate", "users", "--key", "[1]").stdout)["private_port"],
                          "SELECT name FROM _picoemu_local.users WHERE id = 1"), "after-switch")
    own1 = [(b["start"], b["end"]) for b in s["tiers"][0]["buckets"] if b["replicaset"] == "default_1"]
    k1 = next(k for k in range(1, 2000) if any(a <= ref.bucket_id([k], 3000) <= e for a, e in own1))
    with tc.subTest("switch-master: new master default_1_2 takes writes of default_1's buckets"):
        tc.assertEqual(qerr(p3, "UPDATE users SET name = 'via-new-master' WHERE id = %d" % k1), "")
        tc.assertEqual(q1(p2, "SELECT name FROM _picoemu_local.users WHERE id = %d" % k1), "via-new-master")
    with tc.subTest("switch-master: rows intact"):
        tc.assertEqual(set(total_counts(s).values()), {2002})

    emu(d, "stop", "default_2_2")
    s, _ = catalog_consistent(tc, d, "stop replica")
    with tc.subTest("stop: replica down, Offline in catalog"):
        tc.assertFalse(next(i for i in s["instances"] if i["name"] == "default_2_2")["running"])
        tc.assertEqual(q1(p1, "SELECT current_state::text FROM _pico_instance WHERE name = 'default_2_2'"),
                       '["Offline",1]')
    emu(d, "start", "default_2_2")
    s, _ = catalog_consistent(tc, d, "start replica")
    with tc.subTest("start: Online with incarnation + 1"):
        tc.assertEqual(q1(p4, "SELECT current_state::text FROM _pico_instance WHERE name = "
                              "'default_2_2'"), '["Online",2]')
    emu(d, "stop", "default_2_1")
    s, _ = catalog_consistent(tc, d, "stop master")
    with tc.subTest("stop master: Offline on other masters"):
        tc.assertEqual(q1(p2, "SELECT current_state::text FROM _pico_instance WHERE "
                              "name = 'default_2_1'"), '["Offline",1]')
    with tc.subTest("stop master: its own replica shows it Offline too"):
        tc.assertEqual(q1(p4, "SELECT current_state::text FROM "
                            "_pico_instance WHERE name = 'default_2_1'",
                            "picoroute"), '["Offline",1]')
    emu(d, "revoke", "_pico_tier")
    with tc.subTest("stop master: its replica applies a later catalog change (revoke)"):
        tc.assertIn("permission denied for table _pico_tier", qerr(p4, "SELECT * FROM _pico_tier", "picoroute"))
    emu(d, "grant", "_pico_tier")
    with tc.subTest("stop master: a keyless read fails, its replicaset is not read from a replica"):
        tc.assertIn("could not connect to server", qerr(p1, "SELECT count(*) FROM users"))
    emu(d, "start", "default_2_1")
    s, _ = catalog_consistent(tc, d, "start master")
    with tc.subTest("start master: Online,2"):
        tc.assertEqual(q1(p4, "SELECT current_state::text FROM _pico_instance WHERE name = 'default_2_1'"),
                       '["Online",2]')

    emu(d, "create-table", "regions", "--columns", "code text, title text", "--global")
    emu(d, "insert", "regions", "--values", '["eu", "Europe"]')
    err = qerr(p3, "INSERT INTO regions VALUES ('us', 'America')", "picoroute")
    with tc.subTest("global table: on every instance"):
        tc.assertEqual(err, "", err)
        tc.assertTrue(all(
            q1(p, "SELECT string_agg(code, ',' ORDER BY code) FROM regions") == "eu,us" for p in running_ports(s)), err)
    with tc.subTest("global table: _pico_table"):
        tc.assertEqual(q1(p1, "SELECT distribution::text FROM _pico_table WHERE name = 'regions'"), '{"Global":null}')
    emu(d, "drop-table", "regions")
    with tc.subTest("drop-table"):
        tc.assertIn("does not exist", qerr(p1, "SELECT * FROM regions"))


def in_flight(tc, s, p3):
    """A bucket in flight (the move's mark, written by hand): writes to it through the fronts wait,
    locally and forwarded, single- and multi-row, and run once the mark is gone, with no error; a
    lock the move needs is not held up by them; other buckets stay writable."""
    import threading
    front = {i["name"]: i["front_port"] for i in s["instances"]}
    f1, f3 = front["default_1_1"], front["default_2_1"]
    tdir = next(i["datadir"] for i in s["instances"] if i["name"] == "default_2_1")
    b1 = ref.bucket_id([1], 3000)
    k1 = next(k for k in range(2000000, 2200000) if ref.bucket_id([k], 3000) == b1)
    k2 = next(k for k in range(2000000, 2000100) if ref.bucket_id([k], 3000) <= 1500)
    mark = os.path.join(tdir, "picoemu_transfer.json")
    amount = q1(p3, "SELECT amount FROM _picoemu_local.users WHERE id = 1")
    got = {}

    def run(key, port, sql, extended=False):
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

    def private(key, sql):
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


def old_version_cluster(tc, d):
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
    check_hash(tc, p3, ref.RULE_25_5)
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
    t = touched(ports, lambda: pg.psql(p2, "SET picoemu.read_preference = replica; SELECT count(*) FROM users",
                                       user="picoroute", password="picoroute"))
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


def key_as_parameter(tc, ports, front, p1, p3):
    """A sharding key given as a bound parameter ("id" = $1) is routed by its value, as Picodata routes
    after Bind: sent through p1's front, only the owner's (p3) storage is read, the rows are right, and
    a named statement executed with keys of both owners in one session reaches each owner (no plan
    folded for another key)."""
    def rows(answers):
        errors = [a[1] for a in answers if a[0] == "E"]
        tc.assertEqual(errors, [], str(errors))
        return [a[1] for a in answers if a[0] == "D"]

    def once(sql, params):
        c = w.Conn(front, "picoroute", "picoroute")
        try:
            return rows(w.extended(c, sql, params))
        finally:
            c.close()
    got = {}
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
    seen = []
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


def move_counts(d):
    """[writes that waited for a bucket in flight, their runs again] over every front, from the last
    such line of each front.log (emu_front.py hold_move)."""
    out = [0, 0]
    for i in status(d)["instances"]:
        try:
            with open(os.path.join(os.path.dirname(i["datadir"]), "front.log"), errors="replace") as f:
                lines = [x for x in f if "bucket move: a write waits" in x]
        except OSError:
            continue
        if lines:
            m = re.search(r"\((\d+) statements so far, (\d+) runs again\)", lines[-1])
            out[0] += int(m.group(1))
            out[1] += int(m.group(2))
    return out


def move_race(tc, d, fronts, reader_port, seconds=30):
    """Clients write through the masters' fronts while buckets move back and forth: INSERTs (one
    connection per statement, simple protocol), multi-row INSERTs whose rows lie on both replicasets
    (one connection per client, both protocols: the front runs them one part per replicaset),
    keyless increments of rows spread over the tier (parts again), and increments of one counter
    row (one connection per client, extended protocol). A write that meets a bucket in flight waits
    for the move and runs on the new owner: no error reaches a client, and every acknowledged row
    is stored exactly once (a split write whose parts named replicasets lost a row now and then: a
    bucket that moved from a replicaset whose part had not run to one whose part had). A reader
    checks that no row is ever seen twice."""
    import threading
    stop = threading.Event()
    acked, other = set(), {}
    incs = {}  # counter row -> increments acknowledged
    spread = list(range(9_100_001, 9_100_041))  # keyless increments: rows all over the tier
    keyless = [0]
    reads = {"n": 0, "dup": 0, "err": 0}
    slowest = [0.0]  # the longest write, in seconds
    lock = threading.Lock()

    def run_psql(port, sql):
        env = dict(os.environ, PGPASSWORD="picoroute")
        return subprocess.run([pg.pgbin("psql"), "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1",
                               "-p", str(port), "-U", "picoroute", "-d", "picodata", "-c", sql],
                              capture_output=True, text=True, timeout=90, env=env)

    def writer(k, port):
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

    def counter(k, port):
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

    def batch_writer(k, port, extended):
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

    def keyless_incrementer(port):
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

    def reader():
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
    stored = {}
    for i in s["instances"]:
        if i["role"] == "master":
            for (rid,) in q(i["port"], "SELECT id FROM _picoemu_local.users WHERE id >= 10000000"):
                stored[int(rid)] = stored.get(int(rid), 0) + 1
    spread_v = {int(r): int(v) for r, v in q(reader_port, "SELECT id, v FROM users WHERE name = 'spread'")}
    lost = sorted(acked - set(stored))
    dup = sorted(r for r, n in stored.items() if n > 1)
    phantom = sorted(set(stored) - acked)
    counted = {rid: int(q1(reader_port, "SELECT v FROM users WHERE id = %d" % rid)) for rid in incs}
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


def small_cluster(tc, d):
    emu(d, "--base-port", str(BASE + 40), "up", "--tier", "hot:1:1:10", "--tier", "cold:1:1:0",
        "--advertise-wildcard", "--auth", "md5")
    s = status(d)
    p = s["instances"][0]["port"]
    with tc.subTest("tiers: two tiers, one instance each"):
        tc.assertEqual([i["tier"] for i in s["instances"]], ["hot", "cold"])
    with tc.subTest("tiers: _pico_tier rows"):
        tc.assertEqual(q(p, "SELECT name, bucket_count, is_default, replication_factor FROM _pico_tier "
                            "ORDER BY name", "picoroute"), [["cold", "0", "f", "1"], ["hot", "10", "t", "1"]])
    with tc.subTest("tiers: empty tier has no buckets"):
        tc.assertEqual(q1(p, "SELECT _pico_bucket('cold')::text", "picoroute"), "[]")
    with tc.subTest("wildcard: pgproto advertised as 0.0.0.0"):
        tc.assertEqual(q1(p, "SELECT address FROM _pico_peer_address WHERE raft_id = 1 "
                            "AND connection_type = 'pgproto'", "picoroute"),
                                    "0.0.0.0:%d" % s["instances"][0]["front_port"])
    with tc.subTest("auth md5: passwords stored as md5"):
        tc.assertEqual(q1(p, "SELECT rolpassword LIKE 'md5%' FROM pg_authid WHERE rolname = 'picoroute'"), "t")
    r = subprocess.run([PICOEMU, "--dir", d, "psql", "hot_1_1", "--user", "picoroute", "--", "-Atc",
                        "SELECT current_user || ' ' || current_setting('picoemu.instance')"],
                       capture_output=True, text=True, timeout=30)
    with tc.subTest("psql command"):
        tc.assertEqual(r.stdout.strip(), "picoroute hot_1_1", r.stdout + r.stderr)
    emu(d, "create-table", "kv", "--columns", "k text, n int4, v text", "--primary-key", "k,n",
        "--sharding-key", "k,n")
    emu(d, "insert", "kv", "--values", '["lol", 5, "x"]')
    with tc.subTest("composite key: ('lol', 5) stored in bucket %d" % ref.bucket_id(["lol", 5], 10)):
        tc.assertEqual(q1(p, "SELECT bucket_id FROM kv"), str(ref.bucket_id(["lol", 5], 10)))
    n, fast, routed, problems = test_key_route.compare(p)
    with tc.subTest("routing by key: the fast path answers %d of %d statements, as the full parser (%d routed)"
                    % (fast, n, routed)):
        tc.assertEqual(problems, [])
        tc.assertGreater(fast, 1000)
    # A bucket list prunes a view's branches only as a conjunct of the whole WHERE clause, with no
    # OR before it (_picoemu.bucket_list): None is "not sure", every replicaset asked.
    for text, want in [
            ('SELECT "id" FROM "users" WHERE "bucket_id" IN (1, 2, 3)', "{1,2,3}"),
            ('SELECT "id" FROM "users" WHERE ("v" > 10) AND "bucket_id" IN (1, 2, 3)', "{1,2,3}"),
            ('SELECT "id" FROM "users" WHERE "bucket_id" IN (1, 2) OPTION (sql_motion_row_max = 10)',
             "{1,2}"),
            ("SELECT id FROM users WHERE name = 'a) or (x' AND bucket_id IN (7);", "{7}"),
            ('SELECT "id" FROM "users" WHERE (("id" < 5) OR ("id" > 9)) AND "bucket_id" IN (1)', None),
            ('SELECT "id" FROM "users" WHERE ("v" > 10) OR "bucket_id" IN (1, 2, 3)', None),
            ('SELECT "id" FROM "users" WHERE NOT "bucket_id" IN (1)', None),
            ('SELECT "id" FROM "users" WHERE "bucket_id" IN (1) AND "v" > 1', None),
            ('SELECT "id" FROM "users" WHERE "bucket_id" IN (SELECT 1)', None),
            ('SELECT "id" FROM "other" WHERE "bucket_id" IN (1)', None),
            # 513 buckets: 513 chains, which Picodata still expands (emu_caps.dnf_most_chains); 514: not
            ('SELECT "id" FROM "users" WHERE "bucket_id" IN (%s)' % ", ".join(map(str, range(1, 514))),
             "{%s}" % ",".join(map(str, range(1, 514)))),
            ('SELECT "id" FROM "users" WHERE "bucket_id" IN (%s)' % ", ".join(map(str, range(1, 515))), None)]:
        with tc.subTest("bucket list of %s" % text[:90]):
            tc.assertEqual(q1(p, "SELECT _picoemu.bucket_list(%s, 'users')" % sql_lit(text)), want)


def partial_write_cluster(tc, d):
    """A write that spans both replicasets is applied per replicaset, each part committed on its
    own, as Picodata's coordinator sends each master its part (emu_parts.py): with both masters
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

    def stored(port):  # (rows, sum of v) in a master's storage, on its private port
        return tuple(int(x) for x in q(port, "SELECT count(*), coalesce(sum(v), 0) FROM _picoemu_local.pw")[0])

    def run(sql, params=None):
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
    owner = {k: json.loads(emu(d, "locate", "pw", "--key", "[%d]" % k).stdout)["replicaset"] for k in range(1, 200)}
    dup = next(k for k in range(1, 41) if owner[k] == "default_2")
    new1 = [k for k in range(100, 200) if owner[k] == "default_1"][:2]
    new2 = next(k for k in range(100, 200) if owner[k] == "default_2")
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
    # keyless increments from both fronts at once: a part that fails to serialize (40001) runs again
    # on its own, a committed part never runs again, so every row counts every acknowledged statement
    emu(d, "create-table", "inc", "--columns", "id int8, n int8")
    emu(d, "load", "inc", "--rows", "8")
    for port in (p1, p2):
        q(port, "UPDATE _picoemu_local.inc SET n = 0")
    res = {}

    def side(name, port):
        res[name] = selftest_concurrency.hammer(port, "UPDATE inc SET n = n + 1", clients=3, count=30, seconds=60)
    import threading
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


class Scenario(unittest.TestCase):
    """The cluster scenarios, in their own state directories under one temporary root."""
    maxDiff = 4000
    root = None
    timed_out = False

    def subTest(self, msg=None, **params):
        if Scenario.timed_out:  # stop the scenario here (not only this check)
            raise TimeoutError("self-test exceeded %d s" % TIME_LIMIT)
        return super().subTest(msg, **params)

    @classmethod
    def dir(cls, name):
        return os.path.join(cls.root, name)

    def test_bucket_math(self):
        bucket_math(self)

    def test_main_cluster(self):
        main_cluster(self, self.dir("main"))

    def test_small_cluster(self):
        small_cluster(self, self.dir("small"))

    def test_old_version_cluster(self):
        old_version_cluster(self, self.dir("v25"))

    def test_front_cluster(self):
        selftest_front.front_cluster(self, self.dir("front"), BASE + 60, emu, status)

    def test_partial_write_cluster(self):
        partial_write_cluster(self, self.dir("partial"))

    def test_concurrency_cluster(self):
        selftest_concurrency.concurrency_cluster(self, self.dir("conc"), BASE + 80, emu, status)

    def test_private_cluster(self):
        selftest_private.private_cluster(self, self.dir("private"), BASE + 120, emu, status, touched)


DIRS = ("main", "small", "v25", "front", "conc", "partial", "private")


class CleanUp(unittest.TestCase):
    """Runs last (not with --keep): every cluster is removed and no process is left behind."""

    def test_down(self):
        root = Scenario.root
        for name in DIRS:
            d = os.path.join(root, name)
            if os.path.isdir(d):
                t0 = time.time()
                r = subprocess.run([PICOEMU, "--dir", d, "down"], capture_output=True, text=True, timeout=120)
                print("     down %s: %.1fs" % (name, time.time() - t0), flush=True)
                with self.subTest("down %s" % name):
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertFalse(os.path.exists(d), r.stderr)
        leftovers = subprocess.run(["pgrep", "-f", "postgres -D %s" % root], capture_output=True, text=True).stdout
        with self.subTest("down: no server left running"):
            self.assertEqual(leftovers.strip(), "", leftovers)
        fronts = subprocess.run(["pgrep", "-f", "emu_front.py --dir %s" % root], capture_output=True,
                                text=True).stdout
        with self.subTest("down: no front left running"):
            self.assertEqual(fronts.strip(), "", fronts)
        r = subprocess.run([PICOEMU, "--dir", os.path.join(root, DIRS[0]), "down"], capture_output=True, text=True,
                           timeout=60)
        with self.subTest("down again: harmless"):
            self.assertEqual(r.returncode, 0, r.stderr)
        if os.path.isdir(root) and not os.listdir(root):
            os.rmdir(root)


class CheckResult(unittest.TextTestResult):
    """Prints `ok   <check>` / `FAIL <check> <why>` as each check ends and counts the checks. An
    error outside any check (a scenario that did not run to the end) counts as a failed check."""
    passed = failed = 0

    def _line(self, ok, name, err=None):
        if ok:
            CheckResult.passed += 1
            self.stream.writeln("ok   %s" % name)
        else:
            CheckResult.failed += 1
            why = "%s: %s" % (err[0].__name__, err[1]) if err[0] is not AssertionError else str(err[1])
            self.stream.writeln("FAIL %s %s" % (name, " ".join(why.split())[:1500]))
        self.stream.flush()

    def addSubTest(self, test, subtest, err):
        super().addSubTest(test, subtest, err)
        self._line(err is None, getattr(subtest, "_message", None) or str(subtest), err)

    def addError(self, test, err):
        super().addError(test, err)
        self._line(False, "%s: ran to the end" % test._testMethodName, err)

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._line(False, test._testMethodName, err)


def main():
    keep = "--keep" in sys.argv
    Scenario.root = tempfile.mkdtemp(prefix="picoemu-selftest-", dir="/tmp")
    os.chmod(Scenario.root, 0o755)

    def on_alarm(signum, frame):
        Scenario.timed_out = True
        raise TimeoutError("self-test exceeded %d s" % TIME_LIMIT)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TIME_LIMIT)
    t0 = time.time()
    names = ("test_bucket_math", "test_main_cluster", "test_small_cluster", "test_old_version_cluster",
             "test_front_cluster", "test_concurrency_cluster", "test_partial_write_cluster",
             "test_private_cluster")
    # A targeted run: selftest.py test_front_cluster, or PICOEMU_SELFTEST_ONLY=front,main
    only = [a for a in sys.argv[1:] if a in names]
    only += ["test_%s_" % x for x in os.environ.get("PICOEMU_SELFTEST_ONLY", "").split(",") if x]
    suite = unittest.TestSuite(Scenario(n) for n in names
                               if not only or any(n == o or n.startswith(o) for o in only))
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=0, resultclass=CheckResult)
    try:
        runner.run(suite)
    finally:
        signal.alarm(0)
    if not keep:
        runner.run(CleanUp("test_down"))
    print("self-test took %.1fs" % (time.time() - t0))
    print("%d passed, %d failed" % (CheckResult.passed, CheckResult.failed))
    return 1 if CheckResult.failed else 0


if __name__ == "__main__":
    sys.exit(main())
