"""A small cluster: two tiers (one without buckets), wildcard pgproto addresses, md5 authentication,
picoemu psql, a composite sharding key; routing by key (the fast path against the full parser) and
the bucket lists that prune a view's branches."""

import subprocess
import unittest

from picoemu_lib import hashing
from picoemu_lib.paths import PICOEMU
from picoemu_lib.sqlgen.text import lit

from ..support.cluster import BASE, emu, q, q1, status
from ..support.key_route import compare


def small_cluster(tc: unittest.TestCase, d: str) -> None:
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
    with tc.subTest("composite key: ('lol', 5) stored in bucket %d" % hashing.bucket_id(["lol", 5], 10)):
        tc.assertEqual(q1(p, "SELECT bucket_id FROM kv"), str(hashing.bucket_id(["lol", 5], 10)))
    n, fast, routed, problems = compare(p)
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
            tc.assertEqual(q1(p, "SELECT _picoemu.bucket_list(%s, 'users')" % lit(text)), want)
