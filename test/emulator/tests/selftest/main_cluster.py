"""The self-test's main cluster (2 replicasets x 2 instances, the emulated build with every capability):
the commands, the catalog on every instance, sharded data and its routing, the capabilities of the
build (pruning, replica reads, local execution, unlogged tables), writes to a bucket in flight, strict
mode, the DNF limit; its topology changes are in main_topology.py."""

import json
import os
import subprocess
import time
import unittest
from typing import List, Tuple

from picoemu_lib import caps as emu_caps
from picoemu_lib import hashing, pg
from picoemu_lib.state import Doc

from ..support.cluster import (BASE, FULL, catalog_consistent, emu, master_port, psql, q, q1, qerr, qv, status, storage_ok,
                               total_counts, touched)
from .hashes import check_hash, double_key
from .in_flight import in_flight
from .main_topology import topology


def main_cluster(tc: unittest.TestCase, d: str) -> None:
    s, ports = up_and_catalog(tc, d)
    s = sharded_data(tc, d, ports)
    full_build(tc, d, s, ports)
    in_flight(tc, s, ports[2])
    strict_mode(tc, d, s, ports)
    dnf_limit(tc, d, s, ports)
    topology(tc, d, ports)


def up_and_catalog(tc: unittest.TestCase, d: str) -> Tuple[Doc, List[int]]:
    """up, the catalog on every instance, conninfo, grants, the bucket function, the hashing."""
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
    s, _ = catalog_consistent(tc, d, "up")
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
    bj = json.loads(qv(p4, "SELECT _pico_bucket('default')", "picoroute"))
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
    check_hash(tc, p2, hashing.RULE_26_1)
    double_key(tc, d, p1, FULL, integral=True)
    return s, [p1, p2, p3, p4]


def sharded_data(tc: unittest.TestCase, d: str, ports: List[int]) -> Doc:
    """A sharded table: loaded on the owners, read everywhere, written through any master, pruned."""
    p1, p2, p3, p4 = ports
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
    with tc.subTest("locate: --key repeated answers a list, each as locate of its key alone"):
        many = json.loads(emu(d, "locate", "users", "--key", "[2]", "--key", "[1]", "--key", "[2]").stdout)
        two = json.loads(emu(d, "locate", "users", "--key", "[2]").stdout)
        tc.assertEqual(many, [two, loc, two])
    with tc.subTest("storage: trigger refuses a row of a bucket not owned"):
        tc.assertIn("does not own bucket 1934", qerr(p1, "INSERT INTO _picoemu_local.users VALUES (1, 'x', 1, 1934)"))
    with tc.subTest("storage: trigger refuses a wrong bucket_id"):
        tc.assertIn("hashes to bucket", qerr(p3, "INSERT INTO _picoemu_local.users VALUES (777777, 'x', 1, 1934)"))
    with tc.subTest("view: id 1 read on default_1_2"):
        tc.assertEqual(q(p2, "SELECT id, name, bucket_id FROM users WHERE id = 1"), [["1", "name_1", "1934"]])
    # writes through a non-owner are forwarded to the owner
    err = qerr(p1, "INSERT INTO users VALUES (424242, 'fwd', 1.5); UPDATE users SET name = 'upd' WHERE id = 1;")
    b = hashing.bucket_id([424242], 3000)
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
    before = int(qv(p3, cq))
    q(p1, "SELECT * FROM users WHERE bucket_id = 1934")
    deadline, after = time.time() + 5, before
    while time.time() < deadline and after == before:
        time.sleep(0.2)
        after = int(qv(p3, cq))
    with tc.subTest("counters: the owner's storage scan counter moved"):
        tc.assertGreater(after, before, "%d -> %d" % (before, after))
    cj = json.loads(emu(d, "counters", "users", "--json").stdout)
    with tc.subTest("counters command"):
        tc.assertEqual(set(cj), {"default_1_1", "default_1_2", "default_2_1", "default_2_2"})
        tc.assertIn("idx_scan", cj["default_2_1"]["users"])
    return s


def full_build(tc: unittest.TestCase, d: str, s: Doc, ports: List[int]) -> None:
    """A build with every capability: pruning, BETWEEN, replica reads, local execution, unlogged tables."""
    p1, p2, p3, p4 = ports
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
    t = touched([p1, p2, p3, p4], lambda: psql(p2, "SET picoemu.read_preference = replica; "
                                                     "SELECT * FROM users WHERE bucket_id = 5", "picoroute"))
    with tc.subTest("pruning build: read_preference = replica: the replica serves the read itself"):
        tc.assertEqual(t, [p2], str(t))
    t = touched([p1, p2, p3, p4], lambda: psql(p2, "SET picoemu.read_preference = 'any'; "
                                                     "SELECT * FROM users WHERE bucket_id = 1934", "picoroute"))
    with tc.subTest("pruning build: bucket_id = N restricts the read to the owner's master"):
        tc.assertEqual(t, [p3], str(t))
    with tc.subTest("read_preference: a bad value is refused"):
        tc.assertIn("invalid read_preference", qerr(
            p2, "SELECT count(*) FROM users", "picoroute", options="-c picoemu.read_preference=nearest"))
    t = touched([p1, p2, p3, p4], lambda: psql(p1, "SET picoemu.read_preference = replica; "
                                                     "SELECT * FROM users WHERE bucket_id = 5", "picoroute"))
    with tc.subTest("cluster read_preference: a master asked for replica reads its part on its replica"):
        tc.assertEqual(t, [p2], str(t))
    emu(d, "set", "read_preference", "replica")
    t = touched([p1, p2, p3, p4], lambda: q(p1, "SELECT * FROM users WHERE bucket_id = 5", "picoroute"))
    with tc.subTest("cluster read_preference: a session that names no read_preference takes the cluster's (replica)"):
        tc.assertEqual(t, [p2], str(t))
    t = touched([p1, p2, p3, p4], lambda: psql(p1, "SET picoemu.read_preference = leader; "
                                                     "SELECT * FROM users WHERE bucket_id = 5", "picoroute"))
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


def strict_mode(tc: unittest.TestCase, d: str, s: Doc, ports: List[int]) -> None:
    """Strict mode (forward=off): on the storages, and through the fronts by the bucket set."""
    p1, p2, p3, p4 = ports
    emu(d, "strict", "on")
    e1 = qerr(p1, "SELECT * FROM users WHERE bucket_id = 1934", "picoroute")
    wkey = next(k for k in range(1000001, 1000100) if hashing.bucket_id([k], 3000) > 1500)
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
    # through the fronts: judged by the statement's bucket set, Picodata's text (route/)
    f1, f3, f4 = (s["instances"][k]["front_port"] for k in (0, 2, 3))
    k1 = next(k for k in range(2, 100) if hashing.bucket_id([k], 3000) <= 1500)
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


def dnf_limit(tc: unittest.TestCase, d: str, s: Doc, ports: List[int]) -> None:
    """Capability dnf_chain_limit (26.1.6, 26.2.1-rc1 and later): a WHERE clause of more than 513 OR-of-AND
    chains is not routed by its key nor pruned by bucket_id: every replicaset is asked (counted), and the
    front logs it. MAX_DNF_CHAINS = 512 is checked after a pop: 513 chains still expand, 514 do not
    (emu_caps.dnf_most_chains)."""
    p1, _, p3, _ = ports
    f3 = s["instances"][2]["front_port"]

    def amounts(n: int) -> str:
        return ", ".join(str(i) for i in range(n))
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
