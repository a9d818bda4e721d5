#!/usr/bin/env python3
"""An OLTP mix: sysbench's oltp_read_write through picoroute and through postgres_fdw, same paths.

Starts, on 127.0.0.1 only, an emulated Picodata cluster (test/emulator/picoemu: 2 replicasets x 2
instances, 3000 buckets, its catalog advertising the instances' private ports, `up
--advertise-private --private-pgproto`) with sysbench's table `sbtest1` (id, k, c, pad; sharded by
id), and a PostgreSQL node with picoroute and postgres_fdw. sysbench's pgsql driver runs its
statements on the node, so the table is there twice, each in its own schema, found through the
search_path of the role sysbench logs in as:

  picoroute  pr.sbtest1, a picoroute foreign table over the cluster's table (role sb_pr): every
             statement by id routed to the master of the key's bucket, the ranges (`id BETWEEN`)
             through a coordinator (scatter 'coordinator', the default)
  pg_fdw     fdw.sbtest1, a postgres_fdw foreign table over the public.sbtest1 view of one master
             (role sb_fdw), the coordinator of every statement: postgres_fdw cannot compute a
             bucket, so it reaches the owners through that master, which forwards what it does not
             own

sysbench runs oltp_read_write with its defaults (per transaction, inside BEGIN ... COMMIT: 10 point
selects, a simple range, a SUM range, an ORDER BY range, a DISTINCT range of 100 ids, an UPDATE of
k and one of c by id, a DELETE and an INSERT of one id), its statements prepared on the node.
Variants alternate run by run in a rotating order; figures are medians (min-max). The node
backends' CPU per transaction is read from /proc/PID/schedstat as in bench/peers_bench.py.

Usage: bench/oltp_bench.py [--quick] [--runs 3] [--seconds 20] [--threads 4] [--table-size 10000]
       [--out FILE] [--verdicts FILE]
Run as root (servers then run as the postgres user) or as the postgres user; picoroute must be
installed (make install). Python 3 standard library, sysbench, psql.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import peers_bench as pb  # noqa: E402  (the emulator and node helpers)

VARIANTS = {"picoroute": "sb_pr", "pg_fdw": "sb_fdw"}
TARGET = 1.2


class OltpBench(pb.Reporter):
    def __init__(self, args):
        self.args = args
        self.emu = pb.Emulator(args.base_port, private=True)
        self.node = None
        self.lines = []

    def cleanup(self):
        if self.node is not None:
            self.node.stop()
        self.emu.down()

    def setup(self):
        a = self.args
        self.log(f"emulator: up on base port {a.base_port}")
        self.emu.up()
        self.emu.cli("create-table", "sbtest1", "--columns", "id int8, k int8, c text, pad text",
                     "--primary-key", "id")
        # the ranges read 100 rows through a coordinator: within Picodata's defaults, but the
        # node's statements carry no OPTION clause here (execution_options 'off'), so the limits
        # apply as the cluster has them; they stay at their defaults
        st = self.emu.status()
        coord = next(i for i in st["instances"]
                     if i["name"] == st["replicasets"][0]["master"])["private_port"]
        self.node = pb.Node(a.node_port, self.emu.cli("conninfo", "--user", pb.EMU_USER).strip(),
                            source="push")
        self.node.start()
        self.node.psql(f"""
CREATE EXTENSION picoroute;
CREATE EXTENSION postgres_fdw;
-- picoroute: execution_options 'off', since its range statements (keyless) would carry Picodata's
-- OPTION clause, which a private port (plain PostgreSQL) cannot parse; so it prepares no remote
-- statement here (postgres_fdw prepares none either: a cursor or a PREPARE per execution)
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname '{pb.EMU_DB}', picodata_version '{pb.PRUNING_BUILD}',
           execution_options 'off');
CREATE ROLE sb_pr SUPERUSER LOGIN;
CREATE ROLE sb_fdw SUPERUSER LOGIN;
CREATE SCHEMA pr;
CREATE SCHEMA fdw;
ALTER ROLE sb_pr SET search_path = pr;
ALTER ROLE sb_fdw SET search_path = fdw;
-- sysbench's transactions write inside BEGIN ... COMMIT: picoroute's writes commit at once on the
-- cluster (no remote transaction); its once-per-session warning is turned off for the runs
ALTER ROLE sb_pr SET picoroute.remote_write_in_transaction = off;
CREATE USER MAPPING FOR PUBLIC SERVER pico OPTIONS (user '{pb.EMU_USER}', password '{pb.EMU_PASSWORD}');
CREATE FOREIGN TABLE pr.sbtest1 (id integer, k integer, c text, pad text)
  SERVER pico OPTIONS (table_name 'sbtest1', sharding_key 'id');
CREATE SERVER fdw FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '{pb.HOST}', port '{coord}', dbname '{pb.EMU_DB}');
CREATE USER MAPPING FOR PUBLIC SERVER fdw OPTIONS (user '{pb.EMU_USER}', password '{pb.EMU_PASSWORD}');
CREATE FOREIGN TABLE fdw.sbtest1 (id integer, k integer, c text, pad text)
  SERVER fdw OPTIONS (schema_name 'public', table_name 'sbtest1');
""")
        self.coord = coord
        self.node.use_fronts(self.emu)
        pb.wait_for_map(self.node)
        self.log(f"loading {a.table_size} rows through picoroute")
        self.node.psql(f"""
INSERT INTO pr.sbtest1 (id, k, c, pad)
SELECT g, (g * 7919) % {a.table_size} + 1,
       rpad(md5(g::text) || '-' || md5((g + 1)::text), 119, '-'), rpad(md5(g::text), 59, '-')
FROM generate_series(1, {a.table_size}) g;""", timeout=1200)

    def sysbench(self, role, seconds=None, events=None, threads=None):
        a = self.args
        cmd = ["sysbench", "oltp_read_write", "--db-driver=pgsql", f"--pgsql-host={pb.HOST}",
               f"--pgsql-port={a.node_port}", f"--pgsql-user={role}", "--pgsql-db=postgres",
               "--tables=1", f"--table-size={a.table_size}", f"--threads={threads or a.threads}",
               f"--time={seconds or 0}", f"--events={events or 0}", "--rand-seed=1", "run"]
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    @staticmethod
    def parse(out):
        tx = re.search(r"transactions:\s+(\d+)\s+\(([0-9.]+) per sec", out)
        q = re.search(r"queries:\s+(\d+)\s+\(([0-9.]+) per sec", out)
        ign = re.search(r"ignored errors:\s+(\d+)", out)
        lat = re.search(r"avg:\s+([0-9.]+)", out)
        if not tx or not q:
            raise pb.BenchError("cannot parse sysbench's output:\n" + out[-2000:])
        return {"n": int(tx.group(1)), "tps": float(tx.group(2)), "qps": float(q.group(2)),
                "ignored": int(ign.group(1)) if ign else 0,
                "lat": float(lat.group(1)) if lat else 0.0}

    def timed(self, role, seconds):
        """One sysbench run with the node backends' CPU (from their start to their exit)."""
        postmaster = self.node.postmaster_pid()
        before = set(pb.children(postmaster))
        proc = self.sysbench(role, seconds=seconds)
        pids, last = set(), {}
        deadline = time.time() + seconds + 120
        try:
            while proc.poll() is None and time.time() < deadline:
                for pid in set(pb.children(postmaster)) - before - pids:
                    if pb.is_client_backend(pid):
                        pids.add(pid)
                for pid in pids:
                    t = pb.schedstat_ns(pid)
                    if t is not None:
                        last[pid] = t
                time.sleep(0.05)
            out, err = proc.communicate(timeout=max(1, deadline - time.time()))
        finally:
            if proc.poll() is None:
                proc.kill()
        if proc.returncode != 0:
            raise pb.BenchError(f"sysbench ({role}) failed:\n{out[-2000:]}\n{err[-2000:]}")
        res = self.parse(out)
        res["node_cpu"] = sum(last.values()) / 1000 / max(1, res["n"])
        return res

    def check_rows(self, what):
        want = str(self.args.table_size)
        for role in VARIANTS.values():
            got = self.node.psql(f"SET search_path = {role.replace('sb_', '')}; "
                                 "SELECT count(*) FROM sbtest1")
            if got != want:
                raise pb.BenchError(f"{what}: sbtest1 through {role} has {got} rows, expected {want}")

    def main(self):
        a = self.args
        self.setup()

        def front_statements():
            proc = self.sysbench("sb_pr", events=20, threads=1)
            out, err = proc.communicate(timeout=300)
            if proc.returncode != 0:
                raise pb.BenchError(f"sysbench through the fronts failed:\n{out[-2000:]}\n{err[-2000:]}")
        self.log("sanity pass: sysbench through picoroute and the Picodata fronts, audit empty")
        self.audit = pb.front_pass(self.emu, self.node, front_statements)
        self.check_rows("after the front pass")
        for role in VARIANTS.values():  # a warm-up of each, and the sanity of every statement
            proc = self.sysbench(role, events=50, threads=2)
            out, err = proc.communicate(timeout=300)
            if proc.returncode != 0:
                raise pb.BenchError(f"sysbench ({role}) failed:\n{out[-2000:]}\n{err[-2000:]}")
        samples = {n: [] for n in VARIANTS}
        names = list(VARIANTS)
        for r in range(a.runs):
            order = names[r % len(names):] + names[:r % len(names)]
            for n in order:
                samples[n].append(self.timed(VARIANTS[n], a.seconds))
            self.log(f"run {r + 1}/{a.runs}: " + ", ".join(
                f"{n} {samples[n][-1]['tps']:.1f} tps {samples[n][-1]['node_cpu']:.0f} us/tx"
                for n in names))
        self.check_rows("after the runs")
        self.report(samples)

    def report(self, samples):
        a = self.args
        say = self.say
        med = statistics.median

        def cell(n, key, fmt="{:.1f}"):
            xs = [s[key] for s in samples[n]]
            return f"{fmt.format(med(xs))} ({fmt.format(min(xs))}-{fmt.format(max(xs))})"
        say("## OLTP mix: sysbench oltp_read_write (bench/oltp_bench.py)")
        say()
        if a.quick:
            say("**Smoke run (`--quick`): figures not meaningful.**")
            say()
        say(f"sysbench {self.version()} `oltp_read_write`, its defaults (per transaction in "
            "BEGIN ... COMMIT: 10 point selects, 4 ranges of 100 ids (plain, SUM, ORDER BY, "
            "DISTINCT), an UPDATE of `k` and one of `c` by id, a DELETE and an INSERT of one "
            f"id; statements prepared on the node), 1 table of {a.table_size} rows, "
            f"{a.threads} threads, {a.runs} runs of {a.seconds} s per variant, interleaved; "
            "medians (min-max).")
        say()
        say("What runs where: sysbench -> the node (PostgreSQL 15) -> the emulated instances' "
            "private PostgreSQL ports, nothing in between. `picoroute`: `pr.sbtest1`, a picoroute "
            "foreign table over the cluster's `sbtest1`: statements by id go to the master of "
            "the key's bucket (the key bound: the node's plans turn generic), the ranges through "
            "one coordinator (a master, which gathers the other replicaset's rows). `pg_fdw`: "
            "`fdw.sbtest1`, postgres_fdw over the `public.sbtest1` view of one master (port "
            f"{self.coord}), which runs every statement and forwards to the other replicaset "
            "what it does not own; postgres_fdw keeps a remote transaction per local one "
            "(picoroute's writes commit at once on the cluster, as Picodata has no transactions: "
            "the mix is not atomic through picoroute). picoroute runs with `execution_options "
            "'off'` here: its ranges would carry Picodata's `OPTION (...)` clause, which a "
            "private port cannot parse, so it prepares no remote statement in this mix (the "
            "instances parse each of its statements; postgres_fdw's are parsed each time too). "
            "Before timing, 20 transactions ran through picoroute and the Picodata fronts, "
            f"refused nothing (`picoemu audit`: {self.audit}); the table's row count is checked "
            "before and after the runs.")
        say()
        say("| variant | transactions/s | queries/s | latency ms (sysbench avg) | node CPU us per "
            "transaction | ignored errors |")
        say("|---|---|---|---|---|---|")
        for n in VARIANTS:
            say(f"| {n} | {cell(n, 'tps')} | {cell(n, 'qps', '{:.0f}')} | {cell(n, 'lat', '{:.2f}')} "
                f"| {cell(n, 'node_cpu', '{:.0f}')} | "
                f"{sum(s['ignored'] for s in samples[n])} |")
        say()
        ratio = med([s["tps"] for s in samples["picoroute"]]) / \
            med([s["tps"] for s in samples["pg_fdw"]])
        verdict = "met" if ratio >= TARGET else "**missed**"
        say("| ratio | value | target |")
        say("|---|---|---|")
        say(f"| OLTP mix (read_write), picoroute / postgres_fdw, transactions/s | {ratio:.2f} | "
            f">= {TARGET}: {verdict} |")
        say()
        pb.write_verdicts(a.verdicts, [("OLTP mix (read_write), picoroute / postgres_fdw", ratio,
                                        f">= {TARGET}", verdict)])

    @staticmethod
    def version():
        out = subprocess.run(["sysbench", "--version"], capture_output=True, text=True)
        return out.stdout.strip().replace("sysbench ", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run; figures not meaningful")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=20)
    ap.add_argument("--threads", type=int, default=4)
    ap.add_argument("--table-size", type=int, default=10000)
    ap.add_argument("--base-port", type=int, default=None)
    ap.add_argument("--node-port", type=int, default=None, help="default: base port + 100")
    ap.add_argument("--out", default=None)
    ap.add_argument("--verdicts", default=None, help="append the verdict row here (JSON lines)")
    args = ap.parse_args()
    if shutil.which("sysbench") is None:
        print("oltp_bench: sysbench is not installed (scripts/install-deps.sh)", file=sys.stderr)
        return 1
    if args.quick:
        args.runs, args.seconds, args.table_size = 1, 3, 2000
    args.base_port, args.node_port = pb.free_ports(args.base_port, args.node_port)
    pb.run_main(OltpBench(args), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
