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
sum(abalance), sum(tbalance), sum(bbalance) and sum(delta) of the run are equal; with aborts, two
neighbouring sums may differ only where a client aborted at or between their statements. A
cluster command that fails (an emulator fault) ends the bench with a report of the runs made.
Every load loop is bounded (pgbench -T, every command a timeout); every server is stopped and
every directory removed on exit, failures and SIGTERM included.

Usage: bench/tpcb_bench.py [--quick] [--runs 3] [--seconds 20] [--out FILE]
Run as root (servers then run as the postgres user) or as the postgres user; picoroute must be
installed (make install). Python 3 standard library, pgbench, psql.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import peers_bench as pb  # noqa: E402  (the emulator, node and pgbench helpers)

PHASES = ["quiet", "moves", "failover"]
MOVED = (1, 400)  # the buckets the moves phase sends away and back
# pgbench's command numbers (from 0, \set lines included) of the script's four writes
WRITE_COMMANDS = [6, 8, 9, 10]

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

# pgbench's built-in TPC-B transaction, with the history row's key (also run by
# test/t/057_pgbench_churn.pl).
SCRIPT_FILE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "tpcb.sql")

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


def each(runs, fmt, sep=", "):
    """fmt formatted with each run's results, one after the other."""
    return sep.join(fmt.format(**r) for r in runs)


def parse_run(out, err, seconds):
    """tps (transactions over `seconds`), transactions, aborted clients and their first error
    line of each kind."""
    done = re.search(r"^number of transactions actually processed: (\d+)", out, re.M)
    tps = re.search(r"^tps = ([0-9.]+) \(without initial connection time\)", out, re.M)
    n = int(done.group(1)) if done else 0
    aborted = [line for line in err.splitlines() if " aborted " in line and "client" in line]
    kinds = {}
    commands = set()
    for line in aborted:
        kinds.setdefault(error_kind(line), [0, line.strip()])[0] += 1
        m = re.search(r"aborted in command (\d+)", line)
        commands.add(int(m.group(1)) if m else -1)
    return {"tps_pgbench": float(tps.group(1)) if tps else 0.0, "tps": n / seconds, "n": n,
            "aborted": len(aborted), "kinds": kinds, "commands": commands}


def sums_verdict(inc, commands):
    """Whether the sum increments of a run (abalance, tbalance, bbalance, delta) agree, or differ
    only where the aborts can explain it: a transaction aborted at a command leaves the writes
    before it applied, that command's own write applied or not, and the later ones unsent. So
    two neighbouring sums may differ only if a client aborted between or at their writes."""
    if len(set(inc)) == 1:
        return "yes"
    for i in range(3):
        lo, hi = WRITE_COMMANDS[i], WRITE_COMMANDS[i + 1]
        if inc[i] != inc[i + 1] and not any(lo <= c <= hi or c < 0 for c in commands):
            return "**no, beyond what the aborts explain**"
    return "no, as the aborts allow"


class EmuFault(pb.BenchError):
    """A cluster command of the emulator failed."""


class Bench(pb.Reporter):
    def __init__(self, args):
        self.args = args
        self.workdir = tempfile.mkdtemp(prefix="picoroute-tpcb-")
        os.chmod(self.workdir, 0o755)
        self.emu = pb.Emulator(args.base_port)
        self.node = None
        self.pgb = pb.Pgbench(args.clients, args.threads, self.workdir)
        self.proc = None
        self.last_sums = None
        self.fault = None
        self.lines = []

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
        # The node starts while the cluster comes up: its map source is the four instances'
        # fronts, base port + 0..3, which the emulator gives them in that order.
        conninfo = (f"host={','.join([pb.HOST] * 4)} "
                    f"port={','.join(str(a.base_port + k) for k in range(4))} "
                    f"dbname={pb.EMU_DB} user={pb.EMU_USER} password={pb.EMU_PASSWORD}")
        self.node = pb.Node(a.node_port, conninfo)
        failed = []

        def start_node():
            try:
                self.node.start()
            except Exception as e:  # reported in the main thread
                failed.append(e)

        self.log(f"emulator: up on base port {a.base_port} in {self.emu.dir}; node on port "
                 f"{a.node_port}")
        starter = threading.Thread(target=start_node, daemon=True)
        starter.start()
        try:
            self.emu.up()
        finally:
            starter.join(timeout=150)
        if failed or starter.is_alive():
            raise pb.BenchError(f"the node did not start: {failed}")
        ports = sorted(i["port"] for i in self.emu.status()["instances"])
        if ports != [a.base_port + k for k in range(4)]:
            raise pb.BenchError(f"unexpected instance ports {ports}")
        for name, columns in TABLES:
            self.emu.cli("create-table", name, "--columns", columns)
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
        with open(SCRIPT_FILE) as f:
            self.script = self.pgb.script("tpcb", f.read())

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

    def run_churn(self, steps, start):
        """Runs the steps, returns [(label, offset from start, seconds)]."""
        done = []
        stopped = None
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
                label += self.cluster_command(cmd)
            done.append((label, s - start, time.time() - s))
        return done

    def cluster_command(self, cmd):
        """Runs a picoemu command; a failure is the emulator's (EmuFault): it may leave the
        cluster half changed, so the bench stops after the run."""
        try:
            self.emu.cli(*cmd, timeout=600)
        except pb.BenchError as e:
            first = next((line for line in str(e).splitlines() if "error" in line),
                         str(e).splitlines()[0])
            raise EmuFault(f"picoemu {' '.join(cmd)}: {first.strip()}")
        return ""

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
        ended = {}

        def wait_pgbench(proc):
            ended["output"] = proc.communicate()
            ended["at"] = time.time() - start

        waiter = threading.Thread(target=wait_pgbench, args=(self.proc,), daemon=True)
        waiter.start()
        ops = []
        faulted = False
        if steps:
            time.sleep(min(2, a.seconds / 5))
            try:
                ops = self.run_churn(steps, start)
            except EmuFault as e:
                self.fault = f"{phase} run {run_no + 1}: {e}"
                faulted = True
                self.log(f"emulator fault, the bench stops after this run: {e}")
        waiter.join(timeout=max(1, timeout - (time.time() - start)))
        if waiter.is_alive():
            self.proc.kill()
            waiter.join(timeout=30)
            raise pb.BenchError(f"pgbench of phase {phase} did not end in {timeout} s")
        self.proc = None
        out, err = ended["output"]
        churn_end = max((o[1] + o[2] for o in ops), default=0)
        res = parse_run(out, err, max(a.seconds, ended["at"]))
        try:
            after = self.last_sums = self.sums()
        except (pb.BenchError, subprocess.TimeoutExpired):
            if not self.fault:
                raise
            after = None
        res["faulted"] = faulted
        if after is None:
            res.update(ops=ops, inc=None, agree="not read", churn_end=churn_end,
                       accounts="not read", ended=ended["at"])
            return res
        inc = [x - y for x, y in zip(after[:4], before[:4])]
        res.update(ops=ops, inc=inc, agree=sums_verdict(inc, res["commands"]), churn_end=churn_end,
                   accounts=str(after[4]), ended=ended["at"])
        return res

    def main(self):
        a = self.args
        self.setup()
        results = {p: [] for p in PHASES}
        for r in range(a.runs):
            for phase in PHASES:
                res = self.run_phase(phase, r)
                if res["faulted"]:
                    self.faulted_run = res
                else:
                    results[phase].append(res)
                if self.fault:
                    break
                self.log(f"run {r + 1}/{a.runs} {phase}: {res['tps']:.1f} tps, {res['n']} "
                         f"transactions, {res['aborted']} clients aborted, pgbench ended at "
                         f"{res['ended']:.0f} s, sums "
                         f"agree: {res['agree']} (increments {res['inc']})"
                         + (f", cluster commands took {res['churn_end']:.1f} s" if res["ops"]
                            else ""))
            if self.fault:
                break
        self.report(results)

    def report(self, results):
        a = self.args
        say = self.say
        med = {p: statistics.median(r["tps"] for r in results[p]) for p in PHASES if results[p]}
        say("## TPC-B through routine cluster operations (bench/tpcb_bench.py)")
        say()
        say(f"{os.cpu_count()} cores shared by pgbench, the node, the emulated instances and their "
            f"fronts; one emulated cluster (2 replicasets x 2 instances, 3000 buckets); "
            f"`pgbench -i -I G -s 1` through picoroute ({self.init_seconds:.1f} s), then pgbench's "
            f"TPC-B script (with a history key `hid`) `-c {a.clients} -j {a.threads} -M prepared "
            f"-T {a.seconds}`, {a.runs} run(s) of each phase, interleaved (quiet, moves, failover).")
        say()
        say("What is timed: pgbench -> the picoroute node (foreign tables) -> the instances' "
            "Picodata fronts (the emulator's Python proxies) -> their PostgreSQL servers; the "
            "same path in every phase. Unlike the other benchmarks, which reach the private "
            "ports, this one keeps the fronts on its path: it has one variant, compared only "
            "with itself across phases, and the fronts carry behaviour the phases exercise (a "
            "write that meets a bucket in flight waits for the move and runs again; a write "
            "sent to a demoted master is refused with Picodata's text), which on a private "
            "port would reach picoroute as PostgreSQL errors Picodata does not give. "
            "A phase's tps is its "
            "transactions over its whole time, cluster commands included: -T, or longer when "
            "pgbench ran past it (a client held in a statement's retry finishes its "
            "transaction); a client that aborted adds nothing after its abort. pgbench's own "
            "tps (over its elapsed time, which ends early when every client aborted) is shown "
            "beside it.")
        say()
        say("| phase | tps median | min-max | pgbench tps | transactions | clients aborted "
            "| pgbench ended at | TPC-B sums agreed after the run |")
        say("|---|---|---|---|---|---|---|---|")
        for p in PHASES:
            rs = results[p]
            if not rs:
                say(f"| {p} | not run | | | | | | |")
                continue
            tps = [r["tps"] for r in rs]
            agree = each(rs, "{agree}", "; ")
            say(f"| {p} | {med[p]:.1f} | {min(tps):.1f}-{max(tps):.1f} | "
                f"{each(rs, '{tps_pgbench:.0f}')} | {each(rs, '{n}')} | "
                f"{each(rs, '{aborted}')} | {each(rs, '{ended:.0f} s')} | {agree} |")
        say()
        say("| ratio (tps medians) | value |")
        say("|---|---|")
        for p in PHASES[1:]:
            if p in med:
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
            say("Commands at which clients aborted (0-4 `\\set`, 5 BEGIN, 6 UPDATE accounts, "
                "7 SELECT, 8 UPDATE tellers, 9 UPDATE branches, 10 INSERT history, 11 END): "
                + "; ".join(f"{p} run {i + 1}: {sorted(r['commands'])}" for p in PHASES
                            for i, r in enumerate(results[p]) if r["commands"]) + ".")
            say()
            say("Where a client aborted, the sums may differ: with "
                "`remote_write_in_transaction = off` each remote statement commits at once on "
                "Picodata (there is no remote transaction), so the statements of the aborted "
                "transaction that ran before the error stay applied (and the failing one may "
                "be, when its outcome is unknown); the later ones were never sent. So two "
                "neighbouring sums (in the script's order: accounts, tellers, branches, history) "
                "may differ only when a client aborted at or between their two statements "
                "(\"as the aborts allow\"); any other difference means a write lost, doubled, or "
                "applied though reported as refused.")
        else:
            say("No client aborted in any run.")
        say()
        bad = [(p, i + 1, r["inc"]) for p in PHASES for i, r in enumerate(results[p])
               if r["inc"] and r["agree"] != "yes"]
        if bad:
            say("Sum increments (abalance, tbalance, bbalance, delta) of the runs where they "
                "differ: " + "; ".join(f"{p} run {i}: {inc}" for p, i, inc in bad) + ".")
            say()
        if self.fault:
            f = self.faulted_run
            say(f"**The bench stopped early: a cluster command of the emulator failed** "
                f"({self.fault[:500]}). That run is left out of the figures above "
                f"({f['tps']:.1f} tps, {f['n']} transactions, {f['aborted']} clients aborted, "
                f"sums agreed: {f['agree']}); the runs after it were not made.")
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

    pb.run_main(Bench(args), args.out)

if __name__ == "__main__":
    sys.exit(main())
