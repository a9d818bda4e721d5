#!/usr/bin/env python3
"""Joins of local keys with a foreign table on its sharding key: the batched join (the outer keys
in batches, one IN-list statement per owner and batch) and the parameterized plan (a routed lookup
per outer row) against the plan that scans the whole foreign table, and against postgres_fdw,
measured in one run.

Starts, on 127.0.0.1 only, an emulated Picodata cluster (test/emulator/picoemu, 2 replicasets x 2
instances) with N rows (default 100,000) in `users`, and a PostgreSQL node with picoroute and
postgres_fdw. Local tables `keys_N` hold N keys of `users` each (100, 1,000 and 10,000 by default;
ANALYZEd, as is the foreign table, through the cluster). The query, `SELECT count(*), sum(u.v) FROM
keys_N k JOIN users u ON u.id = k.id`, runs for each N as:
  batched        picoroute, the plan the planner picks: a batched join (Custom Scan) that sends
                 the distinct keys of each batch of outer rows as one IN list per owning instance
  parameterized  picoroute with picoroute.join_batch_size 0: a nested loop whose foreign scan is a
                 lookup per key, sent to the owner of the key's bucket (up to 1,000 keys: at
                 10,000 it would take most of the run's time)
  full_scan      picoroute with batching and enable_nestloop off: a hash join over one scan of
                 every row, through a coordinator (picoroute before parameterized paths)
  pg_fdw         postgres_fdw on the same coordinator, ANALYZEd, with the plan its planner picks
  in_list        for comparison, the same answer written by hand with the keys as one array
                 (`u.id = ANY(ARRAY(SELECT id FROM keys))`): picoroute evaluates the array at
                 execution and sends one statement per owner with its keys as an IN list (at most
                 512 keys each)
Every variant reaches the instances' private PostgreSQL ports (the emulator advertises them:
`picoemu up --advertise-private`; picoroute's server has execution_options 'off'); before timing,
every picoroute variant runs once through the instances' Picodata fronts and the run fails unless
`picoemu audit` is empty. Each is timed by its server-side execution time (EXPLAIN ANALYZE, TIMING OFF) in a session that
has run the query once (its connections to the instances open), the variants interleaved; figures
are medians with min and max. Every variant's answer is checked first.

Usage: bench/join_bench.py [--rows 100000] [--keys 100,1000,10000] [--runs 7] [--base-port B]
       [--port P] [--out FILE] [--quick]    (--quick: 10,000 rows, 20 keys, 1 run)
Run as root or as the postgres user, after `make install`.
"""

import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import peers_bench as pb  # noqa: E402  (the emulator and node helpers)

TARGET = 10.0  # the plan the planner picks (batched) at least 10x faster than the full-scan plan
QUERY = "SELECT count(*), sum(u.v) FROM {k} k JOIN {t} u ON u.id = k.id"
# The same answer written by hand with the keys as one array: picoroute sends one statement per
# owner with the owner's keys as an IN list (what batching the lookups would give).
IN_LIST = "SELECT count(*), sum(u.v) FROM {t} u WHERE u.id = ANY(ARRAY(SELECT id FROM {k}))"
PARAMETERIZED_MAX_KEYS = 1000  # beyond, a lookup per key would take most of the run's time
NO_BATCH = "SET picoroute.join_batch_size = 0;"
VARIANTS = [
    ("batched", "users", "", QUERY),
    ("parameterized", "users", NO_BATCH, QUERY),
    ("full_scan", "users", NO_BATCH + " SET enable_nestloop = off;", QUERY),
    ("pg_fdw", "fdw_users", "", QUERY),
    ("in_list", "users", "", IN_LIST),
]


def explain(node, setting, sql):
    # Each psql call is a new session: the query runs once first, so that the timed run finds its
    # connections to the instances open, as a session that has run anything before would.
    return node.psql(f"{setting} {sql}; EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) {sql}",
                     timeout=600)


def exec_ms(plan):
    m = re.search(r"Execution Time: ([0-9.]+) ms", plan)
    if not m:
        raise pb.BenchError(f"no execution time in:\n{plan}")
    return float(m.group(1))


def join_kind(plan):
    if "PicorouteBatchedJoin" in plan:
        return "batched join"
    m = re.search(r"(Nested Loop|Hash Join|Merge Join)", plan)
    if m:
        return m.group(1)
    if "buckets" in plan:
        return "one statement per owner"
    return "Foreign Scan" if "Foreign Scan" in plan else "?"


def fmt(samples):
    return f"{statistics.median(samples):.1f} ms ({min(samples):.1f}-{max(samples):.1f})"


def setup(node, emu, rows, key_counts):
    st = emu.status()
    coord = sorted(i["port"] for i in st["instances"] if i["role"] == "master")[0]
    coord_private = next(i["private_port"] for i in st["instances"] if i["port"] == coord)
    node.psql(f"""
CREATE EXTENSION picoroute;
CREATE EXTENSION postgres_fdw;
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname '{pb.EMU_DB}', picodata_version '{pb.PRUNING_BUILD}', execution_options 'off');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico
  OPTIONS (user '{pb.EMU_USER}', password '{pb.EMU_PASSWORD}');
CREATE FOREIGN TABLE users (id bigint, name text, v bigint) SERVER pico
  OPTIONS (sharding_key 'id');
{pb.pgfdw_server_ddl("fdw", coord_private)}
CREATE FOREIGN TABLE fdw_users (id bigint, name text, v bigint) SERVER fdw
  OPTIONS (table_name 'users');
""")
    for n in key_counts:  # n distinct keys spread over the table, in a fixed order
        node.psql(f"CREATE TABLE keys_{n} AS SELECT (g::bigint * 7919) % {rows} + 1 AS id "
                  f"FROM generate_series(1, {n}) g; ANALYZE keys_{n};")
    node.use_fronts(emu)  # the map of the sanity pass (bench: front_pass)
    node.psql("ANALYZE users; ANALYZE fdw_users;", timeout=600)


def main():
    ap = pb.small_bench_args(__doc__)
    ap.add_argument("--keys", default="100,1000,10000",
                    help="the numbers of local keys, comma-separated (the first must pick the "
                    "batched join)")
    args = pb.parse_small_args(ap)
    args.keys = [int(x) for x in args.keys.split(",")]
    if args.quick:  # 1% of 10,000 rows: fewer keys than that keep the lookups the cheaper plan
        args.keys = [20]
    pb.run_small_bench(args, lambda emu, node: bench(args, emu, node))


def variants(nkeys):
    return [(name, table, setting, query.replace("{k}", f"keys_{nkeys}"))
            for name, table, setting, query in VARIANTS
            if name != "parameterized" or nkeys <= PARAMETERIZED_MAX_KEYS]


def bench(args, emu, node):
    setup(node, emu, args.rows, args.keys)
    # The same answer from every variant (and a warm-up of every connection), and the plans.
    answers, plans = {}, {}

    def run_all():
        for n in args.keys:
            for name, table, setting, query in variants(n):
                answers[(n, name)] = node.psql(f"{setting} {query.format(t=table)}", timeout=600)
                plans[(n, name)] = explain(node, setting, query.format(t=table))

    # Every variant once through the Picodata fronts (the audit must stay empty), then again,
    # checked and timed, on the private ports.
    audit = pb.front_pass(emu, node, run_all)
    run_all()
    for n in args.keys:
        got = {v for (k, _), v in answers.items() if k == n}
        if len(got) != 1 or got.pop().startswith("0|"):
            raise pb.BenchError(f"{n} keys: the variants' answers differ or are empty: {answers}")
        if join_kind(plans[(n, "full_scan")]) == "Nested Loop":
            raise pb.BenchError(f"enable_nestloop off kept a nested loop:\n{plans[(n, 'full_scan')]}")
        if (n, "parameterized") in plans and join_kind(plans[(n, "parameterized")]) != "Nested Loop":
            raise pb.BenchError(f"the planner did not pick the parameterized plan:\n"
                                f"{plans[(n, 'parameterized')]}")
    first = args.keys[0]
    if join_kind(plans[(first, "batched")]) != "batched join":
        raise pb.BenchError(f"the planner did not pick the batched join:\n{plans[(first, 'batched')]}")
    samples = {key: [] for key in plans}
    for _ in range(args.runs):
        for n in args.keys:
            for name, table, setting, query in variants(n):
                samples[(n, name)].append(exec_ms(explain(node, setting, query.format(t=table))))
    work = join_work(emu, node, args.keys[0])
    return render(args, samples, plans, audit) + render_work(args.keys[0], work)


WORK_VARIANTS = ("batched", "full_scan", "pg_fdw", "in_list")


def join_work(emu, node, n):
    """At n keys: the node backend's CPU per execution (/proc/PID/schedstat around a plain
    execution in a session that ran it once), then, in a counting pass with relays in front of
    every instance (never timed), the rows and bytes the node received and its round trips."""
    st = emu.status()
    coord = sorted(i["port"] for i in st["instances"] if i["role"] == "master")[0]
    coord_private = next(i["private_port"] for i in st["instances"] if i["port"] == coord)
    todo = [v for v in variants(n) if v[0] in WORK_VARIANTS]
    cpu = {}
    for name, table, setting, query in todo:
        s = pb.NodeSession(node)
        try:
            sql = f"{setting} {query.format(t=table)}"
            s.run(sql)
            before = s.cpu_ns()
            s.run(sql)
            cpu[name] = (s.cpu_ns() - before) / 1e6
        finally:
            s.close()
    counts = {}
    with pb.counting_relays(emu, node, {"fdw": coord_private}) as snap:
        for name, table, setting, query in todo:
            s = pb.NodeSession(node)
            try:
                sql = f"{setting} {query.format(t=table)}"
                s.run(sql)
                time.sleep(0.1)
                before = snap()
                s.run(sql)
                time.sleep(0.2)
                counts[name] = snap().minus(before)
            finally:
                s.close()
    return {name: (cpu[name], counts[name]) for name, *_ in todo}


def render_work(n, work):
    lines = ["", f"### The work saved at {n} local keys", "",
             "Counted where this machine's time cannot show it: the rows and bytes the node "
             "received from the instances for one execution and its round trips to them "
             "(relays, a separate counting pass: `bench/wire.py`), and the node backend's CPU "
             "per execution (`/proc/PID/schedstat`).", "",
             "| variant | rows received | bytes received | round trips to the instances | "
             "node CPU ms |", "|---|---|---|---|---|"]
    for name in WORK_VARIANTS:
        if name in work:
            ms, c = work[name]
            lines.append(f"| {name} | {c.rows} | {c.bytes_down} | {c.round_trips} | {ms:.2f} |")
    if "batched" in work and "full_scan" in work:
        b, f = work["batched"], work["full_scan"]
        lines += ["", f"full scan / batched: rows received {f[1].rows / max(1, b[1].rows):.0f}x, "
                  f"node CPU {f[0] / b[0]:.1f}x (information: the targets are the upper "
                  "relations')."]
    return "\n".join(lines) + "\n"


def render(args, samples, plans, audit):
    med = statistics.median
    lines = [
        "## Join of local keys with a foreign table (bench/join_bench.py)",
        "",
        f"`{QUERY.format(k='keys_N', t='users')}`: N local keys "
        f"({', '.join(str(n) for n in args.keys)}), {args.rows} rows in `users` on the "
        "emulator (2 replicasets x 2 instances), both tables ANALYZEd; server-side execution "
        f"time in a session that ran the query once before (connections open), median (min-max) of "
        f"{args.runs} interleaved runs. `batched`: the plan the planner picks (at 100 keys a "
        "batched join that sends the distinct keys of each batch of outer rows, "
        "`picoroute.join_batch_size` 256, as one `IN` list per owning instance; the plan column "
        "says what it picked at each N). "
        "`parameterized`: the same query with `picoroute.join_batch_size = 0`, a nested loop "
        "whose foreign scan is a lookup per key, routed to the owner (up to "
        f"{PARAMETERIZED_MAX_KEYS} keys). "
        "`full_scan`: the same query with batching and `enable_nestloop` off, a hash join over "
        "one scan of every row through a coordinator (picoroute before parameterized paths). "
        "`pg_fdw`: postgres_fdw on the same coordinator, ANALYZEd, with its planner's choice of "
        "plan. `in_list`: for comparison, the same answer written by hand as "
        "`WHERE u.id = ANY(ARRAY(SELECT id FROM keys_N))`: the keys computed as one array, which "
        "picoroute evaluates at execution and sends as key lists, one statement per owner and "
        "at most 512 keys.",
        "",
        "Paths: every variant reaches the instances' private PostgreSQL ports with nothing in "
        "between (the emulator advertises them, `picoemu up --advertise-private`; picoroute's "
        "server has `execution_options 'off'`). Before timing, every variant ran once through "
        f"the instances' Picodata fronts and was refused nothing (`picoemu audit`: {audit}). "
        "The instances route a bound key as a literal one (`picoemu up --private-pgproto`: "
        "the `parameterized` lookups reach the owner only); `full_scan` and `pg_fdw` send no "
        "keyed statement.",
    ]
    for n in args.keys:
        par = med(samples[(n, "batched")])
        lines += ["", f"### {n} local keys", "", "| variant | plan | execution time | / batched |",
                  "|---|---|---|---|"]
        for name, _, _, _ in variants(n):
            s = samples[(n, name)]
            lines.append(f"| {name} | {join_kind(plans[(n, name)])} | {fmt(s)} | "
                         f"{med(s) / par:.1f}x |")
        if (n, "parameterized") in samples:
            per_key = med(samples[(n, "parameterized")]) / n
            lines += ["", f"Per lookup of the parameterized plan: {per_key:.2f} ms (each a "
                      "statement sent to the owner)."]
    first = args.keys[0]
    par = med(samples[(first, "batched")])
    ratio = med(samples[(first, "full_scan")]) / par
    lines.append("")
    if args.rows >= 100000 and first == 100:
        verdict = "met" if ratio >= TARGET else "MISSED"
        in_list = med(samples[(first, "in_list")]) / par
        in_verdict = "met" if in_list >= 1.0 else "MISSED"
        lines.append(f"Target (100 keys): the batched join at least {TARGET:.0f}x faster than the "
                     f"full-scan plan: **{verdict}** ({ratio:.1f}x); at least as fast as the "
                     f"hand-written in-list: **{in_verdict}** ({in_list:.2f}x).")
    else:
        lines.append(f"Smoke run ({args.rows} rows, {first} keys): the {TARGET:.0f}x target "
                     f"applies to 100 keys and 100,000 rows ({ratio:.1f}x here).")
    full = med(samples[(first, "full_scan")])
    lines.append(f"Per row of the full scan: {full / args.rows * 1000:.2f} us.")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    try:
        main()
    except pb.BenchError as e:
        print(f"join_bench: {e}", file=sys.stderr)
        sys.exit(1)
