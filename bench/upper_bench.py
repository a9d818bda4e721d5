#!/usr/bin/env python3
"""Upper-relation pushdown: aggregates, GROUP BY and ORDER BY ... LIMIT computed by the cluster
against the same queries over the fetched rows, measured in one run.

Starts, on 127.0.0.1 only, an emulated Picodata cluster (test/emulator/picoemu, 2 replicasets x 2
instances) with N rows (default 100,000) in `users`, and a PostgreSQL node with picoroute. Two
foreign tables over the same remote table: `users` (pushdown on, the default) and `users_off`
(table option pushdown_aggregates 'off': the rows are fetched and everything is computed locally,
as before the pushdown existed). The peer is postgres_fdw over async foreign partitions, one per
replicaset master's own storage (the masters' private ports: postgres_fdw cannot speak Picodata's
dialect), with partitionwise aggregation on, so that each master aggregates its own rows. Each query is timed by its server-side execution time (EXPLAIN
ANALYZE, TIMING OFF), the variants interleaved; figures are medians with min and max, and the
ratio fetched / pushed.

Usage: bench/upper_bench.py [--rows 100000] [--runs 7] [--base-port B] [--port P]
       [--out FILE] [--quick]
Run as root or as the postgres user, after `make install`.
"""

import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import peers_bench as pb  # noqa: E402  (the emulator and node helpers)

QUERIES = [
    ("count(*)", "SELECT count(*) FROM {t}"),
    ("GROUP BY with sum", "SELECT v, count(*), sum(id) FROM {t} GROUP BY v"),
    ("ORDER BY ... LIMIT 10", "SELECT id, v FROM {t} ORDER BY v DESC, id LIMIT 10"),
]
# The results compared before timing (GROUP BY in a fixed order).
CHECKS = {
    "count(*)": "SELECT count(*) FROM {t}",
    "GROUP BY with sum": "SELECT * FROM (SELECT v, count(*), sum(id) FROM {t} GROUP BY v) s ORDER BY v",
    "ORDER BY ... LIMIT 10": "SELECT id, v FROM {t} ORDER BY v DESC, id LIMIT 10",
}


def exec_ms(node, sql):
    # Each psql call is a new session: the query runs once first, so that the timed run finds its
    # connections open (the node's to the instances, the coordinator's postgres_fdw connections to
    # the other replicasets), as in a session that has run anything before. A cold session's
    # timed run would mostly measure connecting and authenticating.
    text = f"{sql}; EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) {sql}"
    if isinstance(node, str):  # an emulator instance's conninfo
        plan = pb.psql_at(node, text, timeout=600)
    else:
        plan = node.psql(text, timeout=600)
    m = re.search(r"Execution Time: ([0-9.]+) ms", plan)
    if not m:
        raise pb.BenchError(f"no execution time in:\n{plan}")
    return float(m.group(1))


def pgfdw_ddl(st):
    """postgres_fdw's best shape for these queries: a table partitioned by bucket_id whose
    partitions are async foreign tables on each master's storage table, each partition's range the
    buckets its replicaset owns."""
    tier = st["tiers"][0]
    sql = ["CREATE TABLE fdw_users (id bigint, name text, v bigint, bucket_id bigint) "
           "PARTITION BY RANGE (bucket_id);"]
    for rs in st["replicasets"]:
        port = next(i["private_port"] for i in st["instances"] if i["name"] == rs["master"])
        name = rs["name"]
        sql.append(pb.pgfdw_server_ddl(f"fdw_{name}", port,
                                       ", async_capable 'true', fetch_size '10000'"))
        for i, r in enumerate(r for r in tier["buckets"] if r["replicaset"] == name):
            sql.append(f"""
CREATE FOREIGN TABLE fdw_users_{name}_{i} PARTITION OF fdw_users
  FOR VALUES FROM ({r["start"]}) TO ({r["end"] + 1})
  SERVER fdw_{name} OPTIONS (schema_name '_picoemu_local', table_name 'users');""")
    sql.append("ALTER DATABASE postgres SET enable_partitionwise_aggregate = on;")
    return "\n".join(sql)


def fmt(samples):
    return (f"{statistics.median(samples):.1f} ms ({min(samples):.1f}-{max(samples):.1f})")


def main():
    args = pb.parse_small_args(pb.small_bench_args(__doc__))
    pb.run_small_bench(args, lambda emu, node: bench(args, emu, node))


def bench(args, emu, node):
    node.psql(f"""
CREATE EXTENSION picoroute;
CREATE EXTENSION postgres_fdw;
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname '{pb.EMU_DB}', picodata_version '{pb.PRUNING_BUILD}',
           execution_options 'off');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico
  OPTIONS (user '{pb.EMU_USER}', password '{pb.EMU_PASSWORD}');
CREATE FOREIGN TABLE users (id bigint, name text, v bigint) SERVER pico
  OPTIONS (sharding_key 'id');
CREATE FOREIGN TABLE users_off (id bigint, name text, v bigint) SERVER pico
  OPTIONS (table_name 'users', sharding_key 'id', pushdown_aggregates 'off');
""")
    st = emu.status()
    node.psql(pgfdw_ddl(st))
    # The floor: the same query run directly on one instance (the emulator's coordinator
    # reads the other replicaset's rows through postgres_fdw, without pushing the aggregate).
    # (EXPLAIN ANALYZE is PostgreSQL's, so this floor reads the instance's private port, without
    # the front's cost.)
    direct = pb.emu_conninfo(next(i["private_port"] for i in st["instances"] if i["role"] == "master"))
    # What Picodata's storages would do in the first stage of a two-stage aggregate: each master
    # runs the query over its own storage table (the stages run side by side, so the slower one
    # counts). It leaves out the coordinator's merge of the partial results.
    storages = [pb.emu_conninfo(next(i["private_port"] for i in st["instances"]
                                     if i["name"] == rs["master"])) for rs in st["replicasets"]]
    variants = ("pushed", "fetched", "direct", "pg_fdw", "storage")
    samples = {(q, v): [] for q, _ in QUERIES for v in variants}
    def checks():  # the same answers, and a warm-up of every connection
        for name, _ in QUERIES:
            a = node.psql(CHECKS[name].format(t="users"))
            b = node.psql(CHECKS[name].format(t="users_off"))
            c = node.psql(CHECKS[name].format(t="fdw_users"))
            if a != b or a != c or not a:
                raise pb.BenchError(f"{name}: pushed, fetched and postgres_fdw results differ")
    # Each query, pushed and fetched, once through the Picodata fronts (the audit must stay
    # empty), then again, and timed, on the private ports.
    audit = pb.front_pass(emu, node, checks)
    checks()
    for _ in range(args.runs):
        for name, sql in QUERIES:
            samples[(name, "pushed")].append(exec_ms(node, sql.format(t="users")))
            samples[(name, "fetched")].append(exec_ms(node, sql.format(t="users_off")))
            samples[(name, "direct")].append(exec_ms(direct, sql.format(t="users")))
            samples[(name, "pg_fdw")].append(exec_ms(node, sql.format(t="fdw_users")))
            samples[(name, "storage")].append(max(
                exec_ms(s, sql.format(t="_picoemu_local.users")) for s in storages))
    lines = [
        "## Upper-relation pushdown (bench/upper_bench.py)",
        "",
        f"{args.rows} rows in `users` on the emulator (2 replicasets x 2 instances); server-side "
        f"execution time of a query run a second time in its session (its connections open), "
        f"median (min-max) of {args.runs} interleaved runs. `fetched` is the "
        "same foreign table with `pushdown_aggregates 'off'` (all rows fetched, computed "
        "locally: picoroute before the pushdown). `direct` is the query run on one "
        "instance of the emulator, the floor of `pushed`: the emulator's coordinator reads the "
        "other replicaset's rows through postgres_fdw and aggregates them itself, where "
        "Picodata's storages would aggregate their own rows. `storage stage` is what those "
        "storages would do: the query over each master's own storage table, run directly, the "
        "slower of the two (an estimate of Picodata's first stage; the coordinator's merge of "
        "the partial results is left out). `postgres_fdw` is a table partitioned by bucket "
        "range over async foreign partitions on each master's storage (private ports, "
        "fetch_size 10000, enable_partitionwise_aggregate on). PostgreSQL 15's postgres_fdw "
        "pushes no partial aggregate: its plans compute `PARTIAL count(*)` and the partial "
        "GROUP BY on the node over every row (Remote SQL `SELECT NULL FROM ...`, "
        "`SELECT id, v FROM ...`), and ORDER BY ... LIMIT sorts at each master but fetches in "
        "batches of 10000 rows; so it is a fetching peer too. Target: fetched / pushed >= 20x.",
        "",
        "Paths: every variant reaches the instances' private PostgreSQL ports with nothing in "
        "between (the emulator advertises them, `picoemu up --advertise-private`; picoroute's "
        "server has `execution_options 'off'`, the cluster's row and opcode limits are off). "
        "Before timing, every query, pushed and fetched, ran once through the instances' "
        f"Picodata fronts and was refused nothing (`picoemu audit`: {audit}).",
        "",
        "| query | pushed | fetched | postgres_fdw | direct (floor) | storage stage "
        "| fetched / pushed | postgres_fdw / pushed | pushed - direct | fetched / storage stage "
        "| verdict |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, _ in QUERIES:
        p, f = samples[(name, "pushed")], samples[(name, "fetched")]
        d, g = samples[(name, "direct")], samples[(name, "pg_fdw")]
        s = samples[(name, "storage")]
        med = statistics.median
        ratio = med(f) / med(p)
        verdict = "met" if ratio >= 20 else "missed"
        lines.append(f"| {name} | {fmt(p)} | {fmt(f)} | {fmt(g)} | {fmt(d)} | {fmt(s)} | "
                     f"{ratio:.1f}x | {med(g) / med(p):.2f}x | {med(p) - med(d):.1f} ms | "
                     f"{med(f) / med(s):.1f}x | {verdict} |")
    lines += [
        "",
        "Reading: `pushed - direct` is what picoroute adds to the coordinator's own execution of "
        "the statement (sending it, the answer's rows, their conversion). The rest of `pushed` is "
        "the emulated coordinator, which reads the other replicaset's rows instead of merging "
        "partial results: `fetched / storage stage` bounds what the target could show against "
        "a coordinator that merges. The emulator cannot do that merge on the private ports: "
        "PostgreSQL 15 pushes no partial aggregate through postgres_fdw (its plans are quoted "
        "above), "
        "and the Picodata fronts, which could, are not on a timed path.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
