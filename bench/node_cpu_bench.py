#!/usr/bin/env python3
"""Node backend CPU per point SELECT: picoroute (custom and generic plans) against PL/Proxy.

Sets up the emulated cluster and the node as bench/peers_bench.py does (the catalog advertises the
instances' private ports; picoroute's server has execution_options 'off'), then, for each variant,
runs one pgbench client (-M prepared, -t N, the point-SELECT script of peers_bench.py) and measures
the CPU time of the node backend that serves it, from just after its connection until it exits,
divided by N:

  picoroute          SELECT ... FROM pr_users WHERE id = :k, role bench_literal
                     (plan_cache_mode force_custom_plan: planned at every execution, the key sent
                     as a literal; what peers_bench.py times)
  picoroute_generic  the same, role bench_generic (force_generic_plan: planned once, the key a
                     parameter; the emulator's instance then also asks the other replicaset, which
                     costs the instance, not the node)
  plproxy            SELECT ... FROM px_get(:k, :b) (the client passes the bucket)

The CPU is `perf stat -e task-clock -p PID` (with perf; else /proc utime + stime), and the
user/system split is read from /proc/PID/stat every 20 ms. Variants alternate round by round, in a
rotating order; each figure is the median of the rounds (min-max), and each variant's ratio to
PL/Proxy is taken within a round (the machine's load moves both alike).

Usage: bench/node_cpu_bench.py [--quick] [--runs 5] [--transactions 8000] [--out FILE]
Run as root (servers then run as the postgres user) or as the postgres user; picoroute must be
installed (make install). Python 3 standard library, pgbench, psql, perf (optional).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import peers_bench as pb  # noqa: E402  (the emulator and node helpers)

VARIANTS = ["picoroute", "picoroute_generic", "plproxy"]


class NodeCpuBench(pb.Bench):
    def setup(self):
        super().setup()
        self.node.psql(f"""
CREATE ROLE bench_generic SUPERUSER LOGIN;
ALTER ROLE bench_generic SET plan_cache_mode = force_generic_plan;
CREATE USER MAPPING FOR bench_generic SERVER pico
  OPTIONS (user '{pb.EMU_USER}', password '{pb.EMU_PASSWORD}');""")
        self.seen = set()

    def variant_scripts(self):
        tg = self.targets()
        tg["node_generic"] = (self.args.node_port, "postgres", "bench_generic", None)
        sel = self.select_scripts()
        return {"picoroute": (tg["node_literal"], sel["picoroute"][1]),
                "picoroute_generic": (tg["node_generic"], sel["picoroute"][1]),
                "plproxy": (tg["node"], sel["plproxy"][1])}

    def check_answers(self):
        """Every variant answers the same row for a key of the pool."""
        k, b = self.pool[0]
        want = self.node.psql(f"SELECT id, name, v FROM px_get({k}, {b})")
        for role in ("bench_literal", "bench_generic"):
            got = pb.psql_at(f"{self.node.dsn().replace('user=postgres', 'user=' + role)}",
                             f"PREPARE q(bigint) AS SELECT id, name, v FROM pr_users WHERE id = $1;"
                             f"EXECUTE q({k})")
            if got != want or not want:
                raise pb.BenchError(f"key {k}: {role} answered {got!r}, PL/Proxy {want!r}")

    def backend_pid(self, user):
        """The node backend of the pgbench client just started for `user`: one not seen before
        and still there 0.1 s later (pgbench's first connection, for its setup, ends at once)."""
        before = set()
        for _ in range(300):
            out = self.node.psql(f"SELECT pid FROM pg_stat_activity WHERE usename = '{user}' "
                                 f"AND application_name = 'pgbench' AND pid <> pg_backend_pid()")
            pids = {int(x) for x in out.splitlines()} - self.seen
            lasting = sorted(pids & before)
            if lasting:
                self.seen.update(pids)
                return lasting[0]
            before = pids
            time.sleep(0.1)
        raise pb.BenchError(f"no node backend for a pgbench client of {user}")

    def one(self, target, path, transactions):
        """One pgbench client for `transactions` statements: (total, user, system) CPU us per
        statement of its node backend, and the tps."""
        port, db, user, _ = target
        cmd = ["pgbench", "-n", "-M", "prepared", "-c", "1", "-j", "1", "-h", pb.HOST, "-p",
               str(port), "-U", user, "-f", path, "-t", str(transactions), db]
        client = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            pid = self.backend_pid(user)
            perf = None
            if shutil.which("perf"):
                perf = subprocess.Popen(["perf", "stat", "-x", ",", "-e", "task-clock", "-p",
                                         str(pid)], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True)
            first = last = None
            while True:
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    last = (int(fields[11]), int(fields[12]))
                    first = first or last
                except (OSError, IndexError):
                    break
                time.sleep(0.02)
            out, err = client.communicate(timeout=900)
        finally:
            if client.poll() is None:
                client.kill()
        if client.returncode != 0:
            raise pb.BenchError(f"pgbench failed:\n{out[-1500:]}\n{err[-1500:]}")
        tps = pb.parse_pgbench(out)["tps"]
        tick = os.sysconf("SC_CLK_TCK")
        user_us = (last[0] - first[0]) / tick * 1e6 / transactions
        sys_us = (last[1] - first[1]) / tick * 1e6 / transactions
        total = user_us + sys_us
        if perf is not None:
            report = perf.communicate(timeout=60)[1].strip().splitlines()
            try:
                total = float(report[-1].split(",")[0]) * 1000 / transactions
            except (IndexError, ValueError):
                pass  # the backend ended before perf attached: /proc's figure stays
        return total, user_us, sys_us, tps

    def main(self):
        a = self.args
        self.setup()
        self.front_audit = pb.front_pass(self.emu, self.node, self.front_statements)
        self.check_answers()
        scripts = self.variant_scripts()
        paths = {n: self.pgb.script(f"cpu_{n}", text) for n, (_, text) in scripts.items()}
        for n in VARIANTS:  # warm-up, not measured
            self.pgb.run(scripts[n][0], paths[n], transactions=max(100, a.transactions // 10),
                         clients=1)
        samples = {n: [] for n in VARIANTS}
        for r in range(a.runs):
            order = VARIANTS[r % len(VARIANTS):] + VARIANTS[:r % len(VARIANTS)]
            for n in order:
                samples[n].append(self.one(scripts[n][0], paths[n], a.transactions))
            self.log(f"run {r + 1}/{a.runs}: " + ", ".join(
                f"{n} {samples[n][-1][0]:.1f} us ({samples[n][-1][3]:.0f} tps)" for n in VARIANTS))
        self.report(samples)

    def report(self, samples):
        a = self.args
        say = self.say
        say("## Node backend CPU per point SELECT (one client)")
        say()
        if a.quick:
            say("**Smoke run (`--quick`): one short run per variant, figures not meaningful.**")
            say()
        say(f"One pgbench client (-M prepared, -t {a.transactions}) per variant and run, "
            f"{a.runs} runs in a rotating order; CPU time of the node backend serving it (perf "
            f"task-clock, user/system from /proc) / statements; medians (min-max). The ratio to "
            f"PL/Proxy is taken within each run. Front pass: {self.front_audit}.")
        say()

        def cell(values):
            return (f"{statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})")
        say("| us per statement | total | user | system | ratio to PL/Proxy | tps |")
        say("|---|---|---|---|---|---|")
        px = samples["plproxy"]
        for n in VARIANTS:
            s = samples[n]
            ratio = [s[i][0] / px[i][0] for i in range(len(s)) if px[i][0] > 0]
            say(f"| {n} | {cell([x[0] for x in s])} | {cell([x[1] for x in s])} | "
                f"{cell([x[2] for x in s])} | {cell(ratio) if n != 'plproxy' else '1'} | "
                f"{statistics.median([x[3] for x in s]):.0f} |")
        say()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run; figures not meaningful")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--transactions", type=int, default=8000, help="pgbench -t of one run")
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--pool", type=int, default=1024, help="keys in the pgbench key pool")
    ap.add_argument("--base-port", type=int, default=None)
    ap.add_argument("--node-port", type=int, default=None, help="default: base port + 100")
    ap.add_argument("--out", default=None, help="also write the report (markdown) here")
    args = ap.parse_args()
    if args.quick:
        args.runs, args.transactions, args.rows, args.pool = 1, 3000, 2000, 64
    args.base_port, args.node_port = pb.free_ports(args.base_port, args.node_port)
    # What peers_bench.Bench reads of its arguments, at one client.
    args.clients, args.threads = 1, 1
    pb.run_main(NodeCpuBench(args), args.out)


if __name__ == "__main__":
    sys.exit(main())
