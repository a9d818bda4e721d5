#!/usr/bin/env python3
"""Peak backend memory and time of a large scan, and of a LIMIT over it: picoroute against
postgres_fdw.

Starts, on 127.0.0.1 only, an emulated Picodata cluster (test/emulator/picoemu: 2 replicasets x 1
instance, its own --dir, base port below 32768) holding --rows rows (default 1,000,000), and a
private PostgreSQL node with picoroute preloaded and postgres_fdw. Every server is stopped and every
directory removed on exit, failures included.

Variants, each reading every row (SELECT count(*), sum(length(name)) ... WHERE random() >= 0: a
volatile local filter, so that neither wrapper can push the aggregate down and every row is
fetched):
  picoroute          foreign table, scatter 'coordinator' (one instance returns every row)
  picoroute_masters  foreign table, scatter 'masters' (both masters stream at once)
  pg_fdw             postgres_fdw foreign table on the same coordinator (fetch_size 100)
  pg_fdw_10k         the same with fetch_size 10000
Every variant reaches the instances' private PostgreSQL ports (the emulator advertises them, `up
--advertise-private`; picoroute's servers have execution_options 'off' and the cluster's row and
opcode limits are off); before measuring, each picoroute variant runs once through the instances'
Picodata fronts and the run fails unless `picoemu audit` is empty.

Memory: each measurement runs in a new session. After a warm-up statement through the same
foreign table (connections open, caches filled), the backend's VmHWM (peak resident set, from
/proc/self/status) is read, then the scan runs, then VmHWM is read again: the difference is the
peak memory the scan added above an idle backend. Time: the scan's execution time, and the time of
`SELECT name FROM t LIMIT 1` (a satisfied LIMIT must not read the rest). Figures are medians of
--runs runs with min and max; variants are interleaved run by run.

Usage: bench/scan_memory.py [--quick] [--rows N] [--runs 3] [--out FILE]
Run as root (servers then run as the postgres user) or as the postgres user; picoroute must be
installed (make install). Python 3 standard library, psql.
"""

import argparse
import importlib.util
import os
import platform
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.realpath(__file__))
spec = importlib.util.spec_from_file_location("peers_bench", os.path.join(HERE, "peers_bench.py"))
peers = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peers)

HOST = peers.HOST
VARIANTS = ["picoroute", "picoroute_masters", "pg_fdw", "pg_fdw_10k"]
TABLES = {"picoroute": "big_pr", "picoroute_masters": "big_prm", "pg_fdw": "big_fdw",
          "pg_fdw_10k": "big_fdw10k"}
TARGET_MB = 16  # the goal: at most 16 MB above an idle backend for 1,000,000 rows

PEAK = r"SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\s+(\d+)')"


class Emulator(peers.Emulator):
    def up(self):
        self.started = True
        self.cli("up", "--base-port", str(self.base_port), "--replication-factor", "1",
                 "--advertise-private")
        # picoroute's keyless reads carry no OPTION clause (execution_options 'off')
        self.cli("set", "sql_motion_row_max", "0")
        self.cli("set", "sql_vdbe_opcode_max", "0")


def measure(node, table, rows):
    """Peak memory added by a full scan (kB), its time (ms), the LIMIT 1 time (ms)."""
    sql = (f"SELECT count(*) FROM {table} WHERE id = 1;\n"
           f"{PEAK};\n"
           "\\timing on\n"
           f"SELECT count(*), sum(length(name)) FROM {table} WHERE random() >= 0;\n"
           "\\timing off\n"
           f"{PEAK};\n"
           "\\timing on\n"
           f"SELECT name FROM {table} LIMIT 1;\n")
    proc = subprocess.run(["psql", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-d", node.dsn()],
                          input=sql, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        raise peers.BenchError(f"psql failed for {table}:\n{proc.stderr[-1500:]}")
    out = proc.stdout
    # One session; the \timing lines interleave with the values.
    lines = [ln for ln in out.splitlines() if ln.strip()]
    times = [float(m.group(1)) for m in (re.match(r"Time: ([\d.]+) ms", ln) for ln in lines) if m]
    values = [ln for ln in lines if not ln.startswith("Time:") and not ln.startswith("Timing")]
    # values: warm-up count, peak before, count|sum, peak after, the LIMIT row
    if len(values) < 5 or len(times) < 2:
        raise peers.BenchError(f"cannot parse the output for {table}:\n{out[-1500:]}")
    count = int(values[2].split("|")[0])
    if count != rows:
        raise peers.BenchError(f"scan of {table}: {count} rows, expected {rows}")
    return int(values[3]) - int(values[1]), times[0], times[1]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="50,000 rows, 1 run (smoke test)")
    ap.add_argument("--rows", type=int, default=1000000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out")
    ap.add_argument("--base-port", type=int, default=None, help="emulator base port (default: a free range)")
    ap.add_argument("--variants", default=",".join(VARIANTS),
                    help="comma-separated subset of " + ", ".join(VARIANTS))
    a = ap.parse_args()
    variants = [v for v in a.variants.split(",") if v]
    if not variants or any(v not in VARIANTS for v in variants):
        ap.error("--variants: choose among " + ", ".join(VARIANTS))
    if a.quick:
        a.rows, a.runs = 50000, 1
    a.base_port, node_port = peers.free_ports(a.base_port, None)

    emu = Emulator(a.base_port)
    node = None
    try:
        emu.up()
        st = emu.status()
        masters = {i["replicaset"]: i["port"] for i in st["instances"] if i["role"] == "master"}
        coord = sorted(masters.values())[0]
        # The catalog advertises the private ports: postgres_fdw reads the same instance as
        # picoroute's coordinator, on the same port.
        coord_private = next(i["private_port"] for i in st["instances"] if i["port"] == coord)
        emu.cli("create-table", "big", "--columns", "id int8, name text, v int8")
        left, start = a.rows, 1
        while left > 0:
            n = min(left, 1000000)
            emu.cli("load", "big", "--rows", str(n), "--start", str(start), timeout=3600)
            left, start = left - n, start + n
        node = peers.Node(node_port, peers.emu_conninfo(coord), source="push")
        node.start()
        node.psql(f"""
CREATE EXTENSION picoroute;
CREATE EXTENSION postgres_fdw;
-- picoroute reaches the instances' private ports with execution_options 'off' (no OPTION
-- clause, no Picodata startup options: what plain PostgreSQL accepts; the cluster's row limits
-- are off instead); scatter 'masters' is used as on Picodata 26.2.1-rc2 (it prunes by bucket_id).
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname 'picodata', picodata_version '{peers.PRUNING_BUILD}', execution_options 'off');
CREATE SERVER pico_m FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname 'picodata', scatter 'masters', picodata_version '{peers.PRUNING_BUILD}',
           execution_options 'off');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico
  OPTIONS (user '{peers.EMU_USER}', password '{peers.EMU_PASSWORD}');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico_m
  OPTIONS (user '{peers.EMU_USER}', password '{peers.EMU_PASSWORD}');
CREATE FOREIGN TABLE big_pr (id bigint, name text, v bigint) SERVER pico
  OPTIONS (table_name 'big', sharding_key 'id');
CREATE FOREIGN TABLE big_prm (id bigint, name text, v bigint) SERVER pico_m
  OPTIONS (table_name 'big', sharding_key 'id');
{peers.pgfdw_server_ddl("fdw", coord_private)}
CREATE FOREIGN TABLE big_fdw (id bigint, name text, v bigint) SERVER fdw
  OPTIONS (table_name 'big');
CREATE FOREIGN TABLE big_fdw10k (id bigint, name text, v bigint) SERVER fdw
  OPTIONS (table_name 'big', fetch_size '10000');
""")
        # Each picoroute variant's statements once through the Picodata fronts, then measured on
        # the private ports.
        audit = peers.front_pass(emu, node, lambda: [measure(node, TABLES[v], a.rows)
                                                     for v in variants if v.startswith("picoroute")])
        res = {v: [] for v in variants}
        for r in range(a.runs):
            order = variants[r % len(variants):] + variants[:r % len(variants)]
            for v in order:
                res[v].append(measure(node, TABLES[v], a.rows))
            print(f"run {r + 1}/{a.runs}: " + ", ".join(
                f"{v} {res[v][-1][0] / 1024:.1f} MB {res[v][-1][1]:.0f} ms" for v in variants),
                file=sys.stderr)
    finally:
        if node is not None:
            node.stop()
        emu.down()

    def fmt(xs, scale=1.0, digits=1):
        xs = [x * scale for x in xs]
        return (f"{statistics.median(xs):.{digits}f} ({min(xs):.{digits}f}-"
                f"{max(xs):.{digits}f})")

    out = []
    say = out.append
    say(f"## Scan memory: {a.rows:,} rows")
    say("")
    say(f"{os.cpu_count()} cores ({platform.machine()}); emulated cluster of 2 replicasets x 1 "
        f"instance on the same machine; median (min-max) of {a.runs} runs, each in a new session.")
    say("")
    say("Paths: every variant reaches the instances' private PostgreSQL ports with nothing in "
        "between (`picoemu up --advertise-private`; picoroute's servers have "
        "`execution_options 'off'`, the cluster's row and opcode limits are off). Before "
        "measuring, each picoroute variant ran once through the instances' Picodata fronts and "
        f"was refused nothing (`picoemu audit`: {audit}). What is measured: the backend's peak "
        "memory, and the scans' times as psql's `\\timing` shows them.")
    say("")
    say("| variant | peak memory above an idle backend, MB | full scan, ms | LIMIT 1, ms |")
    say("|---|---|---|---|")
    for v in variants:
        mem = [x[0] for x in res[v]]
        say(f"| {v} | {fmt(mem, 1 / 1024)} | {fmt([x[1] for x in res[v]], digits=0)} | "
            f"{fmt([x[2] for x in res[v]])} |")
    say("")
    mine = {v: statistics.median(x[0] for x in res[v]) / 1024
            for v in ("picoroute", "picoroute_masters") if v in res}
    if a.rows >= 1000000 and mine:
        verdict = "met" if max(mine.values()) <= TARGET_MB else "MISSED"
        say(f"Target: at most {TARGET_MB} MB above an idle backend for {a.rows:,} rows: "
            f"**{verdict}** (" + ", ".join(f"{v} {mb:.1f} MB" for v, mb in mine.items()) + ").")
    else:
        say(f"Smoke run ({a.rows:,} rows): the {TARGET_MB} MB target applies to 1,000,000 rows.")
    say("")
    say("Peak memory is VmHWM of the backend (resident set, shared memory it touched included) "
        "after the scan minus before it, after a warm-up statement through the same table.")
    text = "\n".join(out) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    try:
        main()
    except peers.BenchError as e:
        print(f"scan_memory: {e}", file=sys.stderr)
        sys.exit(1)
