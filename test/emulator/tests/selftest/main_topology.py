"""The main cluster's topology changes: move, add-replicaset, rebalance (even and by weights), expel,
switch-master, stop and start of a replica and of a master, a global table; after each, the catalog
is the same on every running instance and every row is stored once, on its owner."""

import json
import unittest
from typing import List

from picoemu_lib import hashing

from ..support.cluster import (catalog_consistent, emu, q, q1, qerr, qv, running_ports, status, storage_ok,
                               total_counts)


def topology(tc: unittest.TestCase, d: str, ports: List[int]) -> None:
    p1, p2, p3, p4 = ports
    emu(d, "move", "default", "1901", "2000", "default_1")
    s, _ = catalog_consistent(tc, d, "move")
    loc = json.loads(emu(d, "locate", "users", "--key", "[1]").stdout)
    with tc.subTest("move: bucket 1934 now on default_1"):
        tc.assertEqual(loc["replicaset"], "default_1")
        tc.assertEqual(q1(p1, "SELECT name FROM _picoemu_local.users WHERE id = 1"), "upd")
        tc.assertEqual(q1(p3, "SELECT count(*) FROM _picoemu_local.users WHERE id = 1"), "0")
    with tc.subTest("move: _pico_bucket ranges"):
        tc.assertEqual([(x["bucket_id_start"], x["bucket_id_end"]) for x in json.loads(
            qv(p4, "SELECT _pico_bucket('default')", "picoroute"))],
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
    k1 = next(k for k in range(1, 2000) if any(a <= hashing.bucket_id([k], 3000) <= e for a, e in own1))
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
