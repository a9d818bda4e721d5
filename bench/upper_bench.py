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
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import peers_bench as pb  # noqa: E402  (the emulator and node helpers)

QUERIES = [
    ("count(*)", "SELECT count(*) FROM {t}"),
    # A report over bands of v (0-99, 100-199, ...): 10 groups.
    ("GROUP BY, 10 groups", "SELECT v / 100, count(*), sum(id) FROM {t} GROUP BY v / 100"),
    ("GROUP BY, 1000 groups", "SELECT v, count(*), sum(id) FROM {t} GROUP BY v"),
    ("ORDER BY ... LIMIT 10", "SELECT id, v FROM {t} ORDER BY v DESC, id LIMIT 10"),
]
# The rows ratio of a GROUP BY cannot exceed rows / groups, whatever the client: with 1000 groups
# over 100,000 rows it is at most 100, so that query is information and the target (>= 1000) is
# judged on the 10-group one. Its CPU ratio is judged like the others'.
ROWS_INFO_ONLY = {"GROUP BY, 1000 groups"}
# The results compared before timing (GROUP BY in a fixed order).
CHECKS = {
    "count(*)": "SELECT count(*) FROM {t}",
    "GROUP BY, 10 groups": "SELECT * FROM (SELECT v / 100 AS band, count(*), sum(id) FROM {t} "
                           "GROUP BY v / 100) s ORDER BY band",
    "GROUP BY, 1000 groups": "SELECT * FROM (SELECT v, count(*), sum(id) FROM {t} GROUP BY v) s "
                             "ORDER BY v",
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


# The variants run on the node: the foreign table each reads.
NODE_VARIANTS = {"pushed": "users", "fetched": "users_off", "pg_fdw": "fdw_users"}


def node_run(node, sql):
    """In a new session on the node: the query once (connections open), once more with the CPU
    time of its backend around it (/proc/PID/schedstat), then under EXPLAIN ANALYZE for its
    execution time. Returns (execution ms, CPU ns of the plain execution)."""
    s = pb.NodeSession(node)
    try:
        s.run(sql)
        before = s.cpu_ns()
        s.run(sql)
        ns = s.cpu_ns() - before
        plan = "\n".join(r[0] for r in s.run(f"EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) {sql}"))
    finally:
        s.close()
    m = re.search(r"Execution Time: ([0-9.]+) ms", plan)
    if not m:
        raise pb.BenchError(f"no execution time in:\n{plan}")
    return float(m.group(1)), ns


def count_received(emu, node, st):
    """The counting pass (after the timed runs, never timed): each query of each node variant once
    more in a session that ran it before, with counting relays in front of every instance; what
    the node received from the instances: rows (DataRow messages) and bytes, per execution."""
    servers = {f"fdw_{rs['name']}": next(i["private_port"] for i in st["instances"]
                                         if i["name"] == rs["master"]) for rs in st["replicasets"]}
    out = {}
    with pb.counting_relays(emu, node, servers) as snap:
        for name, sql in QUERIES:
            for v, table in NODE_VARIANTS.items():
                s = pb.NodeSession(node)
                try:
                    s.run(sql.format(t=table))
                    time.sleep(0.1)
                    before = snap()
                    s.run(sql.format(t=table))
                    time.sleep(0.2)  # the last bytes pass the relays
                    out[(name, v)] = snap().minus(before)
                finally:
                    s.close()
    return out


def fmt_plain(samples):
    return f"{statistics.median(samples):.2f} ({min(samples):.2f}-{max(samples):.2f})"


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
    cpu = {(q, v): [] for q, _ in QUERIES for v in NODE_VARIANTS}
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
            for v in NODE_VARIANTS:
                ms, ns = node_run(node, sql.format(t=NODE_VARIANTS[v]))
                samples[(name, v)].append(ms)
                cpu[(name, v)].append(ns / 1e6)
            samples[(name, "direct")].append(exec_ms(direct, sql.format(t="users")))
            samples[(name, "storage")].append(max(
                exec_ms(s, sql.format(t="_picoemu_local.users")) for s in storages))
    received = count_received(emu, node, st)
    verdicts = []
    med = statistics.median
    lines = [
        "## Upper-relation pushdown: the work saved (bench/upper_bench.py)",
        "",
        f"{args.rows} rows in `users` on the emulator (2 replicasets x 2 instances). `pushed` is "
        "picoroute's foreign table (the aggregate, GROUP BY or ORDER BY ... LIMIT sent to the "
        "cluster); `fetched` the same table with `pushdown_aggregates 'off'` (every row "
        "fetched, computed on the node: picoroute before the pushdown); `postgres_fdw` a table "
        "partitioned by bucket range over async foreign partitions on each master's storage "
        "(private ports, fetch_size 10000, enable_partitionwise_aggregate on; PostgreSQL 15's "
        "postgres_fdw pushes no partial aggregate, so it fetches too: its plans compute "
        "`PARTIAL count(*)` and the partial GROUP BY on the node, and ORDER BY ... LIMIT fetches "
        "in batches of 10000 rows).",
        "",
        "What is counted, where time cannot show it (this machine's instances share its cores "
        "and the coordinator is emulated): the rows and bytes the node received from the "
        "instances for one execution, counted on the wire by relays in a separate pass "
        "(`bench/wire.py`: DataRow messages and bytes from the instances to the node), and "
        "the node backend's CPU per execution (`/proc/PID/schedstat` around a plain execution "
        "in a session that ran the query once before), median (min-max) of "
        f"{args.runs} interleaved runs. Targets: rows received fetched / pushed >= 1000, node "
        "CPU fetched / pushed >= 20.",
        "",
        "| query | variant | rows received | bytes received | node CPU ms | execution time ms |",
        "|---|---|---|---|---|---|",
    ]
    for name, _ in QUERIES:
        for v in NODE_VARIANTS:
            r = received[(name, v)]
            lines.append(f"| {name} | {v} | {r.rows} | {r.bytes_down} | "
                         f"{fmt_plain(cpu[(name, v)])} | {fmt_plain(samples[(name, v)])} |")
    lines += ["", "| query | rows received, fetched / pushed | node CPU, fetched / pushed | "
              "node CPU, postgres_fdw / pushed | verdict |", "|---|---|---|---|---|"]
    for name, _ in QUERIES:
        rp, rf = received[(name, "pushed")].rows, received[(name, "fetched")].rows
        rows_ratio = rf / rp if rp else float("inf")
        cpu_ratio = med(cpu[(name, "fetched")]) / med(cpu[(name, "pushed")])
        g_ratio = med(cpu[(name, "pg_fdw")]) / med(cpu[(name, "pushed")])
        v_rows = "met" if rows_ratio >= 1000 else "**missed**"
        v_cpu = "met" if cpu_ratio >= 20 else "**missed**"
        if name in ROWS_INFO_ONLY:
            v_rows = f"information (at most rows / groups = {rf // max(rp, 1)})"
        else:
            verdicts.append((f"{name} over {args.rows} rows: rows received, fetched / pushed",
                             rows_ratio, ">= 1000", v_rows))
        verdicts.append((f"{name} over {args.rows} rows: node CPU, fetched / pushed",
                         cpu_ratio, ">= 20", v_cpu))
        lines.append(f"| {name} | {rows_ratio:.0f}x | {cpu_ratio:.1f}x | {g_ratio:.1f}x | "
                     f"rows {v_rows}, CPU {v_cpu} |")
    lines += [
        "",
        "A pushed GROUP BY returns one row per group, so its rows ratio cannot exceed rows / "
        f"groups: {received[('GROUP BY, 1000 groups', 'pushed')].rows} groups bound it at "
        f"{received[('GROUP BY, 1000 groups', 'fetched')].rows // max(1, received[('GROUP BY, 1000 groups', 'pushed')].rows)}"
        "x, which is why the rows target is judged on the 10-group report (its CPU ratio is "
        "judged for both).",
        "",
        "The time through the emulated coordinator, for information: server-side execution "
        "time (EXPLAIN ANALYZE, TIMING OFF) of the query run a third time in its session. "
        "`direct` is the query run on one instance of the emulator, the floor of `pushed`: the "
        "emulator's coordinator reads the other replicaset's rows through postgres_fdw and "
        "aggregates them itself, where Picodata's storages would aggregate their own rows. "
        "`storage stage` is what those storages would do: the query over each master's own "
        "storage table, run directly, the slower of the two (an estimate of Picodata's first "
        "stage; the coordinator's merge of the partial results is left out).",
        "",
        "| query | pushed | fetched | postgres_fdw | direct (floor) | storage stage "
        "| fetched / pushed | pushed - direct | fetched / storage stage |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, _ in QUERIES:
        p, f = samples[(name, "pushed")], samples[(name, "fetched")]
        d, g = samples[(name, "direct")], samples[(name, "pg_fdw")]
        st_ = samples[(name, "storage")]
        lines.append(f"| {name} | {fmt(p)} | {fmt(f)} | {fmt(g)} | {fmt(d)} | {fmt(st_)} | "
                     f"{med(f) / med(p):.1f}x | {med(p) - med(d):.1f} ms | "
                     f"{med(f) / med(st_):.1f}x |")
    lines += [
        "",
        "Reading the times: `pushed - direct` is what picoroute adds to the coordinator's own "
        "execution of the statement. The rest of `pushed` is the emulated coordinator, which "
        "reads the other replicaset's rows instead of merging partial results, so the times "
        "cannot show the work saved; the counts above do.",
        "",
        "Paths: every variant reaches the instances' private PostgreSQL ports with nothing in "
        "between (`picoemu up --advertise-private`; picoroute's server has `execution_options "
        "'off'`, the cluster's row and opcode limits are off). Before timing, every query, "
        "pushed and fetched, ran once through the instances' Picodata fronts and was refused "
        f"nothing (`picoemu audit`: {audit}).",
    ]
    pb.write_verdicts(args.verdicts, verdicts)
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
