#!/usr/bin/env python3
"""The cost of the statistics: point SELECT throughput with picoroute.track_statistics on against
off, in one run.

Starts, on 127.0.0.1 only, an emulated Picodata cluster (test/emulator/picoemu, 2 replicasets x 2
instances) with N rows (default 100,000) in `users`, and a PostgreSQL node with picoroute whose
foreign table `users` is read by key: pgbench -M prepared, `SELECT name FROM users WHERE id = :k`
with :k drawn uniformly. The setting is switched with ALTER SYSTEM and a reload between runs
(pgbench's sessions are new at every run, so each run sees one value); the two variants are
interleaved run by run, in a rotating order, and each figure is the median of --runs runs (min and
max shown). Target: on / off >= 0.97. After the runs, the counters of picoroute_stat_tables and
picoroute_stat_instances show what the `on` runs counted.

Usage: bench/stats_bench.py [--rows 100000] [--runs 7] [--seconds 8] [--clients 4]
       [--base-port B] [--port P] [--out FILE] [--quick]
Run as root or as the postgres user, after `make install`.
"""

import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import peers_bench as pb  # noqa: E402  (the emulator, node and pgbench helpers)

VARIANTS = ("off", "on")


def main():
    ap = pb.small_bench_args(__doc__)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--clients", type=int, default=4)
    args = pb.parse_small_args(ap)
    if args.quick:
        args.seconds = 2
    pb.run_small_bench(args, lambda emu, node: bench(args, emu, node))


def set_statistics(node, value):
    node.psql(f"ALTER SYSTEM SET picoroute.track_statistics = {value}")
    node.psql("SELECT pg_reload_conf()")
    for _ in range(50):  # a new session sees the reloaded value
        if node.psql("SHOW picoroute.track_statistics") == value:
            return
    raise pb.BenchError(f"picoroute.track_statistics did not become {value}")


def bench(args, emu, node):
    node.psql(f"""
CREATE EXTENSION picoroute;
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname '{pb.EMU_DB}', execution_options 'off');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico
  OPTIONS (user '{pb.EMU_USER}', password '{pb.EMU_PASSWORD}');
CREATE FOREIGN TABLE users (id bigint, name text, v bigint) SERVER pico
  OPTIONS (sharding_key 'id');
""")

    def check():  # one point read through the fronts (the audit must stay empty)
        if node.psql("SELECT name FROM users WHERE id = 1") != "name_1":
            raise pb.BenchError("the point read did not return its row")

    audit = pb.front_pass(emu, node, check)
    check()
    workdir = tempfile.mkdtemp(prefix="picoroute-stats-bench-")
    bench_tool = pb.Pgbench(args.clients, 2, workdir)
    script = bench_tool.script("point", f"\\set k random(1, {args.rows})\n"
                                        "SELECT name FROM users WHERE id = :k;\n")
    target = (node.port, "postgres", "postgres", None)
    samples = {v: [] for v in VARIANTS}
    node.psql("SELECT picoroute_stat_reset()")
    counted_on = 0
    for run in range(args.runs):
        order = VARIANTS if run % 2 == 0 else tuple(reversed(VARIANTS))
        for variant in order:
            set_statistics(node, variant)
            before = int(node.psql("SELECT coalesce(sum(scans), 0) FROM picoroute_stat_tables"))
            result = bench_tool.run(target, script, seconds=args.seconds)
            after = int(node.psql("SELECT coalesce(sum(scans), 0) FROM picoroute_stat_tables"))
            if variant == "off" and after != before:
                raise pb.BenchError("statistics were counted while off")
            if variant == "on":
                counted_on += after - before
            samples[variant].append(result["tps"])
    set_statistics(node, "on")
    return report(args, samples, audit, counted_on, node)


def report(args, samples, audit, counted_on, node):
    med = statistics.median
    # Within each run (the two variants back to back), then the median (min-max) over the runs: the
    # machine's drift between runs cancels out of each ratio.
    pairs = [on / off for on, off in zip(samples["on"], samples["off"])]
    ratio = med(pairs)
    opened = node.psql("SELECT coalesce(sum(connections_opened), 0) FROM picoroute_stat_instances")
    lines = [
        "## The cost of the statistics (bench/stats_bench.py)",
        "",
        f"{args.rows} rows in `users` on the emulator (2 replicasets x 2 instances); point SELECT "
        f"by key through picoroute, pgbench -M prepared -c {args.clients} -j 2 -T {args.seconds}, "
        f"median (min-max) tps of {args.runs} interleaved runs per variant, "
        "`picoroute.track_statistics` switched by ALTER SYSTEM and a reload between runs. "
        f"Before timing, the read ran once through the Picodata fronts (`picoemu audit`: {audit}).",
        "",
        "| track_statistics | tps median | min | max |",
        "|---|---|---|---|",
    ]
    for v in VARIANTS:
        s = samples[v]
        lines.append(f"| {v} | {med(s):.0f} | {min(s):.0f} | {max(s):.0f} |")
    verdict = "met" if ratio >= 0.97 else "missed"
    pb.write_verdicts(args.verdicts, [("point SELECT tps, statistics on / off", round(ratio, 3),
                                       ">= 0.97", "met" if ratio >= 0.97 else "**missed**")])
    lines += [
        "",
        f"on / off, within each run then the median over the runs: {ratio:.3f} "
        f"({min(pairs):.3f}-{max(pairs):.3f}; target >= 0.97: **{verdict}**); the ratio of the "
        f"medians above: {med(samples['on']) / med(samples['off']):.3f}. The `on` runs counted "
        f"{counted_on} scans in picoroute_stat_tables and {opened} connections opened in "
        "picoroute_stat_instances.",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
