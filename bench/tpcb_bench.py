#!/usr/bin/env python3
"""TPC-B through routine cluster operations: pgbench's TPC-B transaction through picoroute foreign
tables while buckets move and while masters switch and stop.

Starts, on 127.0.0.1 only, an emulated Picodata cluster (test/emulator/picoemu: 2 replicasets x 2
instances, 3000 buckets, its own --dir, base port from test/tools/port_range.py) with the four
pgbench tables (pgbench_history gets a key of its own, `hid`), and a private PostgreSQL node with
picoroute preloaded whose foreign tables point at them, filled by `pgbench -i -I G -s 1` through
picoroute. The workload is pgbench's built-in TPC-B transaction as a script (plus the history key),
4 clients, -j 2, -M prepared, with `picoroute.remote_write_in_transaction = off` for the database.

Phases, each a pgbench -T run of the same script, interleaved run by run (quiet, moves, failover):
  quiet     the cluster is left alone;
  moves     buckets 1-400 move to the other replicaset, the tier is rebalanced, they move back and
            the tier is rebalanced again (each rebalance moves 400 buckets; the cluster ends as it
            started);
  failover  `switch-master default_1`, then a master stopped for 5 s and started again (default_1's
            in one run, default_2's in the next, so the cluster stays healthy).
After every run the four TPC-B sums are compared: with no client aborted, the increments of
sum(abalance), sum(tbalance), sum(bbalance) and sum(delta) of the run are equal.

Usage: bench/tpcb_bench.py [--quick] [--runs 3] [--seconds 20] [--out FILE]
Run as root (servers then run as the postgres user) or as the postgres user; picoroute must be
installed (make install). Python 3 standard library, pgbench, psql.
"""

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import peers_bench as pb  # noqa: E402  (the emulator, node and pgbench helpers)

PHASES = ["quiet", "moves", "failover"]
MOVED = (1, 400)  # the buckets the moves phase sends away and back

TABLES = [
    ("pgbench_accounts", "aid int4, bid int4, abalance int4, filler text"),
    ("pgbench_branches", "bid int4, bbalance int4, filler text"),
    ("pgbench_tellers", "tid int4, bid int4, tbalance int4, filler text"),
    # Picodata needs a primary key: the history rows get one of their own, their sharding key
    ("pgbench_history", "hid int8, tid int4, bid int4, aid int4, delta int4, mtime timestamptz"),
]

NODE_DDL = f"""
CREATE EXTENSION picoroute;
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute OPTIONS (tier 'default', dbname '{pb.EMU_DB}');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico
  OPTIONS (user '{pb.EMU_USER}', password '{pb.EMU_PASSWORD}');
CREATE FOREIGN TABLE pgbench_accounts (aid int, bid int, abalance int, filler char(84)) SERVER pico
  OPTIONS (sharding_key 'aid', batch_size '1000');
CREATE FOREIGN TABLE pgbench_branches (bid int, bbalance int, filler char(88)) SERVER pico
  OPTIONS (sharding_key 'bid');
CREATE FOREIGN TABLE pgbench_tellers (tid int, bid int, tbalance int, filler char(84)) SERVER pico
  OPTIONS (sharding_key 'tid');
CREATE FOREIGN TABLE pgbench_history (hid bigint, tid int, bid int, aid int, delta int,
  mtime timestamptz) SERVER pico OPTIONS (sharding_key 'hid');
ALTER DATABASE postgres SET picoroute.remote_write_in_transaction = off;
"""

# pgbench's built-in TPC-B transaction, with the history row's key.
SCRIPT = """\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
\\set hid random(1, 9000000000000000000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (hid, tid, bid, aid, delta, mtime) VALUES (:hid, :tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
"""

SUMS = ("SELECT (SELECT sum(abalance) FROM pgbench_accounts) || ',' "
        "|| (SELECT sum(tbalance) FROM pgbench_tellers) || ',' "
        "|| (SELECT sum(bbalance) FROM pgbench_branches) || ',' "
        "|| (SELECT coalesce(sum(delta), 0) FROM pgbench_history) || ',' "
        "|| (SELECT count(*) FROM pgbench_accounts)")


def error_kind(line):
    """The kind of a pgbench abort line: its message with numbers, quoted names and addresses
    blanked out."""
    msg = line.split("ERROR:", 1)[-1].strip()
    msg = re.sub(r'"[^"]*"', '"..."', msg)
    return re.sub(r"\d+", "N", msg)


def parse_run(out, err, seconds):
    """tps, transactions, aborted clients and their first error line of each kind."""
    done = re.search(r"^number of transactions actually processed: (\d+)", out, re.M)
    tps = re.search(r"^tps = ([0-9.]+) \(without initial connection time\)", out, re.M)
    n = int(done.group(1)) if done else 0
    aborted = [line for line in err.splitlines() if " aborted " in line and "client" in line]
    kinds = {}
    for line in aborted:
        kinds.setdefault(error_kind(line), [0, line.strip()])[0] += 1
    return {"tps": float(tps.group(1)) if tps else n / seconds, "n": n,
            "aborted": len(aborted), "kinds": kinds}


class Bench:
    def __init__(self, args):
        self.args = args
        self.workdir = tempfile.mkdtemp(prefix="picoroute-tpcb-")
        os.chmod(self.workdir, 0o755)
        self.emu = pb.Emulator(args.base_port)
        self.node = None
        self.pgb = pb.Pgbench(args.clients, args.threads, self.workdir)
        self.proc = None
        self.last_sums = None
        self.lines = []

    def say(self, text=""):
        print(text, flush=True)
        self.lines.append(text)

    def log(self, text):
        print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)

    def cleanup(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        if self.node is not None:
            self.node.stop()
        self.emu.down()
        shutil.rmtree(self.workdir, ignore_errors=True)

    def setup(self):
        a = self.args
        self.log(f"emulator: up on base port {a.base_port} in {self.emu.dir}")
        self.emu.up()
        for name, columns in TABLES:
            self.emu.cli("create-table", name, "--columns", columns)
        self.log(f"node: starting on port {a.node_port}")
        self.node = pb.Node(a.node_port, self.emu.cli("conninfo", "--user", pb.EMU_USER).strip())
        self.node.start()
        self.node.psql(NODE_DDL)
        pb.wait_for_map(self.node)
        self.log("pgbench -i -I G -s 1 through picoroute")
        t0 = time.time()
        pb.run(["pgbench", "-i", "-I", "G", "-s", "1", "-h", pb.HOST, "-p", str(a.node_port),
                "-U", "postgres", "postgres"], 600)
        self.init_seconds = time.time() - t0
        self.last_sums = self.sums()
        if self.last_sums[4] != 100000 or len(set(self.last_sums[:4])) != 1:
            raise pb.BenchError(f"after pgbench -i: sums and accounts {self.last_sums}")
        self.script = self.pgb.script("tpcb", SCRIPT)

    def masters(self):
        st = self.emu.status()
        return {rs["name"]: rs["master"] for rs in st["replicasets"]}

    def owner_of_first(self):
        st = self.emu.status()
        return next(r["replicaset"] for r in st["tiers"][0]["buckets"]
                    if r["start"] <= MOVED[0] <= r["end"])

    def churn(self, phase, run_no):
        """The cluster commands of a phase, as (label, command) in order, with pauses."""
        if phase == "moves":
            owner = self.owner_of_first()
            other = next(rs for rs in sorted(self.masters()) if rs != owner)
            lo, hi = str(MOVED[0]), str(MOVED[1])
            return [("move 1-400 to " + other, ["move", "default", lo, hi, other]),
                    ("rebalance", ["rebalance"]),
                    ("move 1-400 back to " + owner, ["move", "default", lo, hi, owner]),
                    ("rebalance", ["rebalance"])]
        if phase == "failover":
            rs = sorted(self.masters())
            stopped_rs = rs[run_no % len(rs)]
            return [("switch-master default_1", ["switch-master", "default_1"]),
                    (f"stop {stopped_rs}'s master", ("stop", stopped_rs)),
                    ("5 s", ("sleep", 5)),
                    (f"start {stopped_rs}'s master", ("start", stopped_rs))]
        return []

    def run_churn(self, steps):
        """Runs the steps, returns [(label, start offset, seconds)]."""
        done = []
        stopped = None
        t0 = time.time()
        for label, cmd in steps:
            s = time.time()
            if cmd[0] == "sleep":
                time.sleep(cmd[1])
            elif cmd[0] == "stop":
                stopped = self.masters()[cmd[1]]
                self.emu.cli("stop", stopped)
            elif cmd[0] == "start":
                self.emu.cli("start", stopped)
            else:
                self.emu.cli(*cmd, timeout=600)
            done.append((label, s - t0, time.time() - s))
        return done

    def sums(self):
        """The four TPC-B sums and the number of accounts."""
        return [int(x) for x in self.node.psql(SUMS, timeout=300).split(",")]

    def run_phase(self, phase, run_no):
        a = self.args
        steps = self.churn(phase, run_no)
        before = self.last_sums or self.sums()
        self.proc, timeout = self.pgb.run((a.node_port, "postgres", "postgres", None), self.script,
                                          seconds=a.seconds, background=True)
        start = time.time()
        ops = []
        if steps:
            time.sleep(min(2, a.seconds / 5))
            ops = self.run_churn(steps)
        try:
            out, err = self.proc.communicate(timeout=max(1, timeout - (time.time() - start)))
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.communicate(timeout=30)
            raise pb.BenchError(f"pgbench of phase {phase} did not end in {timeout} s")
        self.proc = None
        churn_end = max((o[1] + o[2] for o in ops), default=0) + (min(2, a.seconds / 5) if ops else 0)
        res = parse_run(out, err, a.seconds)
        after = self.last_sums = self.sums()
        inc = [x - y for x, y in zip(after[:4], before[:4])]
        res.update(ops=ops, inc=inc, agree=len(set(inc)) == 1, churn_end=churn_end,
                   accounts=str(after[4]))
        return res

    def main(self):
        a = self.args
        self.setup()
        results = {p: [] for p in PHASES}
        for r in range(a.runs):
            for phase in PHASES:
                res = self.run_phase(phase, r)
                results[phase].append(res)
                self.log(f"run {r + 1}/{a.runs} {phase}: {res['tps']:.0f} tps, {res['n']} "
                         f"transactions, {res['aborted']} clients aborted, sums "
                         f"{'agree' if res['agree'] else 'differ'} (increments {res['inc']})"
                         + (f", cluster commands took {res['churn_end']:.1f} s" if res["ops"]
                            else ""))
        self.report(results)

    def report(self, results):
        a = self.args
        say = self.say
        med = {p: statistics.median(r["tps"] for r in results[p]) for p in PHASES}
        say("## TPC-B through routine cluster operations (bench/tpcb_bench.py)")
        say()
        say(f"{os.cpu_count()} cores shared by pgbench, the node, the emulated instances and their "
            f"fronts; one emulated cluster (2 replicasets x 2 instances, 3000 buckets); "
            f"`pgbench -i -I G -s 1` through picoroute ({self.init_seconds:.1f} s), then pgbench's "
            f"TPC-B script (with a history key `hid`) `-c {a.clients} -j {a.threads} -M prepared "
            f"-T {a.seconds}`, {a.runs} run(s) of each phase, interleaved (quiet, moves, failover).")
        say()
        say("What is timed: pgbench -> the picoroute node (foreign tables) -> the instances' "
            "Picodata fronts (the emulator's Python proxies, on the path as in the peers bench) "
            "-> their PostgreSQL servers; the same path in every phase. Each run's tps is "
            "pgbench's (without connection time) over the whole -T, churn included.")
        say()
        say("| phase | tps median | min-max | transactions (per run) | clients aborted | "
            "TPC-B sums agreed after the run |")
        say("|---|---|---|---|---|---|")
        for p in PHASES:
            rs = results[p]
            tps = [r["tps"] for r in rs]
            agree = ", ".join("yes" if r["agree"] else "**no**" for r in rs)
            say(f"| {p} | {med[p]:.0f} | {min(tps):.0f}-{max(tps):.0f} | "
                f"{', '.join(str(r['n']) for r in rs)} | "
                f"{', '.join(str(r['aborted']) for r in rs)} | {agree} |")
        say()
        say("| ratio (tps medians) | value |")
        say("|---|---|")
        for p in PHASES[1:]:
            say(f"| {p} / quiet | {med[p] / med['quiet']:.2f} |")
        say()
        say("Cluster commands during each run (start offset from pgbench's start, duration):")
        say()
        for p in PHASES[1:]:
            for i, r in enumerate(results[p]):
                ops = "; ".join(f"{label} at {s:.1f} s ({d:.1f} s)" for label, s, d in r["ops"])
                late = " (they ran past pgbench's end)" if r["churn_end"] > a.seconds else ""
                say(f"- {p} run {i + 1}: {ops}{late}")
        say()
        kinds = {}
        for p in PHASES:
            for r in results[p]:
                for kind, (count, line) in r["kinds"].items():
                    entry = kinds.setdefault((p, kind), [0, line])
                    entry[0] += count
        if kinds:
            say("Clients aborted, by phase and kind of error (first line of the first one):")
            say()
            for (p, _), (count, line) in kinds.items():
                say(f"- {p}, {count} client(s): `{line[:400]}`")
            say()
            say("Where a client aborted, the sums may differ: with "
                "`remote_write_in_transaction = off` each remote statement commits at once on "
                "Picodata (there is no remote transaction), so the statements of the aborted "
                "transaction that ran before the error stay applied.")
        else:
            say("No client aborted in any run.")
        say()
        bad = [(p, i + 1, r["inc"]) for p in PHASES for i, r in enumerate(results[p])
               if not r["agree"]]
        if bad:
            say("Sum increments (abalance, tbalance, bbalance, delta) of the runs where they "
                "differ: " + "; ".join(f"{p} run {i}: {inc}" for p, i, inc in bad) + ".")
            say()
        counts = {r["accounts"] for p in PHASES for r in results[p]}
        say(f"Accounts after each run: {', '.join(sorted(counts))} (100000 expected). Settings: "
            f"picoroute defaults (refresh_interval 1 s, failover_wait 10 s) but "
            f"`remote_write_in_transaction = off` (ALTER DATABASE); the emulator's defaults.")
        say()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="one run of 5 s per phase (a smoke run; figures are not meaningful)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=20, help="pgbench -T of a phase")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--base-port", type=int, default=None,
                    help="emulator base port (below 32768; default: a free range)")
    ap.add_argument("--node-port", type=int, default=None, help="default: base port + 100")
    ap.add_argument("--out", default=None, help="also write the report (markdown) here")
    args = ap.parse_args()
    args.base_port, args.node_port = pb.free_ports(args.base_port, args.node_port)
    if args.quick:
        args.runs, args.seconds = 1, 5

    def on_signal(signum, frame):
        raise SystemExit(f"interrupted by signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    bench = Bench(args)
    start = time.time()
    try:
        bench.main()
    finally:
        bench.cleanup()
    bench.log(f"done in {time.time() - start:.0f} s")
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(bench.lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
