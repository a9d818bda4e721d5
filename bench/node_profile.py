#!/usr/bin/env python3
"""Where the node backend's work goes per point statement: instructions counted by callgrind.

Sets up the emulated cluster and the node as bench/peers_bench.py does (the same foreign tables,
servers and remote statements; the instances' private ports, `picoemu up --private-pgproto`), then
restarts the node's postmaster under `valgrind --tool=callgrind` (its backends are forked, so each
runs under callgrind and writes its own profile when it exits). For each case two protocol
sessions (after a first one, which does what the node then remembers) prepare the node statement
and run it with keys of the pool, one 10 times (connections open, remote statement prepared, the
node's plan generic when the case is), the other 10 + N times; the difference of their profiles'
instructions (Ir) / N is the cost per statement, by shared object
and by function (callgrind_annotate, inclusive and exclusive). Instruction counts do not depend on
the machine's load (unlike time), so this runs on a shared machine.

  select_generic   SELECT id, name, v FROM pr_users WHERE id = $1 (the plan generic after 5)
  select_generic_stats_off   the same with picoroute.track_statistics off (the counters' cost)
  select_custom    the same with plan_cache_mode = force_custom_plan (planned every execution)
  insert           INSERT INTO pr_events (id, sk, note) VALUES ($1, $2, 'x')
  update           UPDATE pr_users SET v = $2 WHERE id = $1
  plproxy          SELECT id, name, v FROM px_get($1, $2), for comparison
  pg_fdw           SELECT id, name, v FROM fdw_users_owner WHERE id = $1, for comparison

With --syscalls, no valgrind: `strace -c` is attached to each case's backend after its first 10
statements, and the report gives system calls per statement by name (the kernel's share, which
instructions do not show).

Usage: bench/node_profile.py [--statements 300] [--cases a,b] [--syscalls] [--out FILE] [--keep]
Run as root (servers then run as the postgres user); valgrind, picoroute installed.
"""

import argparse
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import peers_bench as pb  # noqa: E402

CASES = [
    ("select_generic", "", "SELECT id, name, v FROM pr_users WHERE id = $1", 1),
    ("select_generic_stats_off", "SET picoroute.track_statistics = off",
     "SELECT id, name, v FROM pr_users WHERE id = $1", 1),
    ("select_custom", "SET plan_cache_mode = force_custom_plan",
     "SELECT id, name, v FROM pr_users WHERE id = $1", 1),
    ("insert", "", "INSERT INTO pr_events (id, sk, note) VALUES ($1, $2, 'x')", 0),
    ("update", "", "UPDATE pr_users SET v = $2 WHERE id = $1", 0),
    ("plproxy", "", "SELECT id, name, v FROM px_get($1, $2)", 1),
    ("pg_fdw", "", "SELECT id, name, v FROM fdw_users_owner WHERE id = $1", 1),
]


class Profile(pb.Bench):
    def start_under_callgrind(self):
        """Stops the node, starts its postmaster again under callgrind (as the server user)."""
        node = self.node
        subprocess.run(pb.as_server_user([f"{pb.BIN}/pg_ctl", "-D", node.data, "-m", "fast",
                                          "-w", "-t", "60", "stop"]), capture_output=True,
                       timeout=90)
        self.cg_dir = tempfile.mkdtemp(prefix="picoroute-callgrind-")
        os.chmod(self.cg_dir, 0o777)
        log = open(os.path.join(self.cg_dir, "postmaster.log"), "w")
        self.postmaster = subprocess.Popen(pb.as_server_user(
            # Zeroed when a backend starts: it does not keep the postmaster's counts
            ["valgrind", "--tool=callgrind", "--quiet", "--zero-before=PostgresMain",
             f"--callgrind-out-file={self.cg_dir}/callgrind.out.%p",
             f"{pb.BIN}/postgres", "-D", node.data]), stdout=log, stderr=subprocess.STDOUT)
        for _ in range(600):  # valgrind starts slowly: at most 120 s
            if subprocess.run(["pg_isready", "-h", pb.HOST, "-p", str(node.port)],
                              capture_output=True).returncode == 0:
                break
            time.sleep(0.2)
        else:
            raise pb.BenchError("the node did not start under callgrind")
        node.use_catalog(self.emu)
        # The worker, slow under callgrind, may publish a new map generation seconds later, and a
        # new map brings a declaration check (a connection opened) into whichever case runs then:
        # the cases start once the generation has stayed the same for 3 s.
        last, since = None, time.time()
        for _ in range(300):
            gen = node.psql("SELECT generation FROM picoroute_status_row()")
            if gen != last:
                last, since = gen, time.time()
            elif time.time() - since >= 3:
                break
            time.sleep(0.2)

    def case(self, name, setting, sql, n, traced=None):
        """One backend: prepares `sql`, runs it 10 + n times, disconnects; the path of the profile
        callgrind writes when the backend exits (a forked backend has no vgdb channel, so its
        counters cannot be zeroed or dumped while it runs). With `traced` (syscall mode), the
        last n statements run inside traced(pid) and what it yields is returned."""
        c = pgwire.Conn(self.node.port, "postgres", "", dbname="postgres",
                        application_name="profile", timeout=300)
        try:
            pid = int(pgwire.rows(c.query("SELECT pg_backend_pid()"))[0][0])
            if setting:
                c.query(setting)
            c.send(pgwire.parse(sql, name="s") + pgwire.sync())
            c.until_ready()
            counter = [0]

            def run(count):
                for _ in range(count):
                    counter[0] += 1
                    k, b = self.pool[counter[0] % len(self.pool)]
                    if "pr_events" in sql:  # a new id for every row of every backend
                        self.inserted = getattr(self, "inserted", 0) + 1
                        params = [10 ** 12 + self.inserted, k]
                    elif "UPDATE" in sql:
                        params = [k, counter[0]]
                    else:
                        params = [k, b] if "$2" in sql else [k]
                    c.send(pgwire.bind(params, stmt="s") + pgwire.execute() + pgwire.sync())
                    answers = c.until_ready()
                    if pgwire.errors(answers):
                        raise pb.BenchError(f"{name}: {pgwire.errors(answers)}")
            if traced is not None:
                run(10)
                with traced(pid) as result:
                    run(n)
                return result
            run(10 + n)
        finally:
            c.close()
        path = f"{self.cg_dir}/callgrind.out.{pid}"
        for _ in range(600):  # written when the backend exits
            if not os.path.exists(f"/proc/{pid}") and os.path.exists(path) \
                    and os.path.getsize(path) > 0:
                return path
            time.sleep(0.2)
        raise pb.BenchError(f"{name}: no callgrind profile for backend {pid}")

    def annotate(self, path, inclusive):
        """The profile's total and its instructions by function (a dict)."""
        out = subprocess.run(["callgrind_annotate", f"--inclusive={'yes' if inclusive else 'no'}",
                              "--auto=no", "--threshold=100", path], capture_output=True,
                             text=True, timeout=300).stdout
        total = None
        rows = {}
        for line in out.splitlines():
            m = re.match(r"\s*([0-9,]+)\s+(?:\([^)]*\)\s+)?PROGRAM TOTALS", line)
            if m:
                total = int(m.group(1).replace(",", ""))
            m = re.match(r"\s*([0-9,]+)\s+(?:\([^)]*\)\s+)?(\S.*?)\s*$", line)
            if m and ":" in m.group(2) and total is not None:
                rows[m.group(2)] = rows.get(m.group(2), 0) + int(m.group(1).replace(",", ""))
        return total or 0, rows

    @staticmethod
    def opening(fn):
        """Whether `fn` is (or only serves) the opening of a connection: its SCRAM exchange costs
        some 67M instructions, and when a backend opens one (a check, an idle close) is not a
        statement's cost, so opened connections are left out of the counts."""
        return "remote::open_connection(" in fn or "libcrypto" in fn or "PQconnectPoll" in fn \
            or "finish_connect(" in fn

    def per_statement(self, base, full, n, inclusive):
        """(full - base) / n: the instructions of n statements, without the backend's start, its
        first 10 statements (connections opened, remote statements prepared) and its exit, and
        without opening connections."""
        t0, r0 = self.annotate(base, True)
        t1, r1 = self.annotate(full, True)
        opens = [max([v for fn, v in r.items() if "remote::open_connection(" in fn] or [0])
                 for r in (r0, r1)]
        if not inclusive:
            _, r0 = self.annotate(base, False)
            _, r1 = self.annotate(full, False)
        rows = [((r1.get(fn, 0) - r0.get(fn, 0)) / n, fn)
                for fn in set(r0) | set(r1) if not self.opening(fn)]
        total = ((t1 - opens[1]) - (t0 - opens[0])) / n
        # A self cost above the total is the start of the call chain, which callgrind credits
        # with what it zeroed (--zero-before) or what a connection's opening left: not shown.
        rows = [r for r in rows if inclusive or r[0] <= total]
        rows.sort(key=lambda r: -r[0])
        return total, rows

    def syscalls(self):
        """Syscall mode: the node's backends as they run (no valgrind); each case's backend runs
        10 statements, then n more under `strace -c` attached to it: system calls per statement,
        by name (where the backend's kernel time goes, which callgrind does not count)."""
        a = self.args
        results = {}
        for name, setting, sql, _ in CASES:
            if a.cases and name not in a.cases.split(","):
                continue
            self.log(f"syscalls: {name} ({a.statements} statements under strace -c)")
            # What the node then remembers, as in callgrind mode: a first backend, not counted.
            self.case(name, setting, sql, 0, traced=lambda pid: contextlib.nullcontext({}))
            results[name] = self.case(name, setting, sql, a.statements, traced=StraceCounts)
        say = self.say
        say("## Node backend per point statement, in system calls (bench/node_profile.py "
            "--syscalls)")
        say()
        say(f"`strace -c` attached to the node's backend for {a.statements} statements after "
            "10 (connections open, statements prepared): calls per statement by system call "
            "(those made at least once per 100 statements; the total counts all).")
        say()
        names = sorted({sc for r in results.values() for sc, k in r.items()
                        if k >= a.statements / 100},  # at least once per 100 statements
                       key=lambda sc: -max(r.get(sc, 0) for r in results.values()))
        say("| system call | " + " | ".join(results) + " |")
        say("|---|" + "---|" * len(results))
        for sc in names:
            say(f"| {sc} | " + " | ".join(f"{r.get(sc, 0) / a.statements:.2f}"
                                         for r in results.values()) + " |")
        say("| **total** | " + " | ".join(f"{sum(r.values()) / a.statements:.2f}"
                                         for r in results.values()) + " |")

    def main(self):
        a = self.args
        self.setup()
        self.node.use_catalog(self.emu)
        if a.syscalls:
            self.syscalls()
            return
        self.start_under_callgrind()
        results = {}
        for name, setting, sql, _ in CASES:
            if a.cases and name not in a.cases.split(","):
                continue
            self.log(f"profile: {name} ({a.statements} statements under callgrind)")
            # The first backend does once what the node then remembers (the route check of the
            # table, the relation cache's file): a third backend, before the two compared.
            self.case(name, setting, sql, 0)
            base = self.case(name, setting, sql, 0)
            path = self.case(name, setting, sql, a.statements)
            total, incl = self.per_statement(base, path, a.statements, True)
            _, excl = self.per_statement(base, path, a.statements, False)
            results[name] = (total, incl, excl, path)
            self.log(f"  {total:,.0f} instructions per statement")
        self.report(results)

    def report(self, results):
        a = self.args
        say = self.say
        say("## Node backend per point statement, in instructions (bench/node_profile.py)")
        say()
        say(f"callgrind on the node's backend; a backend running 10 + {a.statements} statements "
            f"less one running 10, over {a.statements}: instructions (Ir) per statement, from "
            "the node receiving the Bind to its answer sent, waiting excluded (callgrind counts "
            "instructions, not time); connections opened (picoroute's open_connection, with "
            "libcrypto) left out.")
        say()
        say("| case | instructions per statement | picoroute.so (inclusive of what it calls; its executor hooks wrap every case) | "
            "postgres | libpq | libc | kernel (not counted) |")
        say("|---|---|---|---|---|---|---|")
        footnote = False
        for name, (total, incl, excl, _) in results.items():
            by_obj = {}
            for ir, fn in excl:
                obj = object_of(fn)
                key = ("picoroute" if "picoroute" in obj else "postgres" if obj.endswith("postgres")
                       else "libpq" if "libpq" in obj else "libc" if "libc" in obj else "other")
                by_obj[key] = by_obj.get(key, 0) + ir
            pico_incl = max([ir for ir, fn in incl if "picoroute" in object_of(fn)] or [0])
            # The split by object comes from exclusive counts, which cannot leave out a connection
            # opened in one profile and not the other (its share in libc and postgres): shown
            # only when the objects add up to the total.
            if abs(sum(by_obj.values()) - total) <= 0.05 * total:
                split = (f"{by_obj.get('postgres', 0):,.0f} | {by_obj.get('libpq', 0):,.0f} | "
                         f"{by_obj.get('libc', 0):,.0f}")
                own = f"{by_obj.get('picoroute', 0):,.0f}"
            else:
                split, own = "n/a¹ | n/a¹ | n/a¹", "n/a¹"
                footnote = True
            say(f"| {name} | {total:,.0f} | {pico_incl:,.0f} (own {own}) | {split} | - |")
        say()
        if footnote:
            say("¹ Not shown: the case's two profiles differ by a connection opened (by the "
                "peer, or a check after a new map), whose cost outside the opening functions the "
                "exclusive counts cannot leave out; the total does leave it out.")
            say()
        for name in ("select_generic", "select_custom", "insert", "update"):
            if name not in results:
                continue
            total, incl, excl, _ = results[name]
            say(f"### {name}: the top functions")
            say()
            say("Inclusive (a function with what it calls), then exclusive, per statement:")
            say()
            say("```")
            for ir, fn in incl[:40]:
                say(f"{ir:12,.0f}  {100 * ir / max(total, 1):5.1f}%  {name_of(fn)[:140]}")
            say()
            for ir, fn in excl[:25]:
                say(f"{ir:12,.0f}  {100 * ir / max(total, 1):5.1f}%  {name_of(fn)[:140]}")
            say("```")
            say()

    def cleanup(self):
        if getattr(self, "postmaster", None) is not None:
            subprocess.run(pb.as_server_user([f"{pb.BIN}/pg_ctl", "-D", self.node.data, "-m",
                                              "immediate", "-t", "120", "stop"]),
                           capture_output=True, timeout=180)
            try:
                self.postmaster.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.postmaster.kill()
            self.node.started = False
            if not self.args.keep:
                shutil.rmtree(self.cg_dir, ignore_errors=True)
            else:
                self.log(f"callgrind profiles kept in {self.cg_dir}")
        super().cleanup()


pgwire = pb.pgwire


class StraceCounts:
    """Context manager: `strace -c` attached to a pid while the block runs; what it yields (a
    dict, system call -> calls) is filled in when the block ends."""

    def __init__(self, pid):
        self.pid, self.counts = pid, {}
        self.out = tempfile.NamedTemporaryFile(prefix="picoroute-strace-", delete=False).name

    def __enter__(self):
        self.proc = subprocess.Popen(["strace", "-c", "-q", "-o", self.out, "-p", str(self.pid)],
                                     stderr=subprocess.DEVNULL)
        time.sleep(1.0)  # attached by then (strace says nothing when it is)
        return self.counts

    def __exit__(self, *exc):
        self.proc.send_signal(2)
        self.proc.wait(timeout=30)
        with open(self.out) as f:
            for line in f:
                m = re.match(r"\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$", line)
                if m and m.group(2) != "total":
                    self.counts[m.group(2)] = int(m.group(1))
        os.unlink(self.out)
        return False


def object_of(fn):
    """The shared object of callgrind_annotate's "file:function [object]"."""
    m = re.search(r"\[([^]]*)\]$", fn)
    return m.group(1) if m else ""


def name_of(fn):
    return re.sub(r"\s+\[[^]]*\]$", "", fn)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--statements", type=int, default=300)
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--pool", type=int, default=1024)
    ap.add_argument("--keep", action="store_true", help="keep the callgrind profiles")
    ap.add_argument("--base-port", type=int, default=None)
    ap.add_argument("--node-port", type=int, default=None)
    ap.add_argument("--out", default=None)
    ap.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    ap.add_argument("--syscalls", action="store_true",
                    help="count system calls per statement (strace -c) instead of instructions")
    args = ap.parse_args()
    args.base_port, args.node_port = pb.free_ports(args.base_port, args.node_port)
    args.clients, args.threads = 1, 1
    pb.run_main(Profile(args), args.out)


if __name__ == "__main__":
    sys.exit(main())
