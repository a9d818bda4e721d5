#!/usr/bin/env python3
"""Cost of a bucket -> master lookup through picoroute, against its peers, measured in one run.

Starts a private PostgreSQL server on loopback with picoroute preloaded in push mode, loads a
topology with a 16-range tier and a 65,536-range tier, and times N calls inside one statement
(server-side execution time from EXPLAIN ANALYZE, so client round trips do not blur the
comparison) for:

  builtin    abs(b): a trivial builtin function call, the floor
  picoroute  picoroute_master(tier, b)
  table      SELECT addr FROM shard_map WHERE b BETWEEN b_start AND b_end LIMIT 1, indexed
             (the lookup table of in-application sharding)

Every figure is the median of several runs, with min and max. Also measured: 65,536 ranges against
16, and lookup throughput while another session republishes the map 10 times a second.

Usage: bench/lookup_bench.py [--runs 7] [--calls 1000000] [--port P] [--out FILE]
Run as root or as the postgres user; picoroute must be installed (make install).
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "test", "tools"))
import port_range  # noqa: E402

BIN = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                     check=True).stdout.strip()
RANGES_BIG = 65536
BUCKETS = 65536


def as_server_user(cmd):
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + cmd
    return cmd


class Server:
    def __init__(self, port):
        self.port = port
        self.dir = tempfile.mkdtemp(prefix="picoroute-bench-")
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self.data = os.path.join(self.dir, "data")

    def start(self):
        subprocess.run(as_server_user([f"{BIN}/initdb", "-D", self.data, "-A", "trust"]),
                       check=True, capture_output=True)
        conf = f"""
listen_addresses = '127.0.0.1'
port = {self.port}
unix_socket_directories = '{self.dir}'
shared_preload_libraries = 'picoroute'
picoroute.source = 'push'
picoroute.max_bucket_ranges = {RANGES_BIG + 64}
picoroute.max_replicasets = 64
picoroute.max_instances = 256
shared_buffers = '256MB'
jit = off
"""
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write(conf)
        subprocess.run(as_server_user([f"{BIN}/pg_ctl", "-D", self.data, "-w", "-l",
                                       os.path.join(self.dir, "log"), "start"]),
                       check=True, capture_output=True)

    def stop(self):
        subprocess.run(as_server_user([f"{BIN}/pg_ctl", "-D", self.data, "-m", "fast", "stop"]),
                       capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def psql(self, sql):
        out = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h",
                              "127.0.0.1", "-p", str(self.port), "-U", "postgres", "-d",
                              "postgres", "-c", sql], capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"psql failed: {out.stderr.strip()}\n  in: {sql[:200]}")
        return out.stdout.strip()

    def exec_ms(self, sql):
        plan = self.psql(f"EXPLAIN (ANALYZE, TIMING OFF, COSTS OFF) {sql}")
        m = re.search(r"Execution Time: ([0-9.]+) ms", plan)
        return float(m.group(1))


SETUP = f"""
CREATE EXTENSION picoroute;
-- 8 replicasets x 2 instances; tier t16 with 16 ranges, tier t64k with {RANGES_BIG} ranges.
SELECT picoroute_apply_events(jsonb_build_array(
    jsonb_build_object('map', 'tier', 'op', 'replace', 'name', 't16', 'bucket_count', {BUCKETS}),
    jsonb_build_object('map', 'tier', 'op', 'replace', 'name', 't64k', 'bucket_count', {BUCKETS})));
SELECT picoroute_apply_events(jsonb_agg(e)) FROM (
    SELECT jsonb_build_object('map', 'replicaset', 'op', 'replace', 'replicaset_uuid', t || '-rs' || r,
                              'tier', t, 'current_master_uuid', t || '-rs' || r || '-i0') AS e
    FROM unnest(ARRAY['t16', 't64k']) t, generate_series(0, 7) r
    UNION ALL
    SELECT jsonb_build_object('map', 'instance', 'op', 'replace', 'instance_uuid', t || '-rs' || r || '-i' || i,
                              'replicaset_uuid', t || '-rs' || r, 'current_state', 'Online',
                              'address', '10.0.' || r || '.' || i || ':4327')
    FROM unnest(ARRAY['t16', 't64k']) t, generate_series(0, 7) r, generate_series(0, 1) i) s;
SELECT picoroute_apply_events(jsonb_agg(jsonb_build_object('map', 'bucket', 'op', 'replace', 'tier', 't16',
    'bucket_id', jsonb_build_object('start', k * 4096 + 1, 'end', k * 4096 + 4096),
    'current_replicaset_uuid', 't16-rs' || (k % 8)))) FROM generate_series(0, 15) k;
SELECT picoroute_apply_events(jsonb_agg(jsonb_build_object('map', 'bucket', 'op', 'replace', 'tier', 't64k',
    'bucket_id', jsonb_build_object('start', k + 1, 'end', k + 1),
    'current_replicaset_uuid', 't64k-rs' || (k % 8)))) FROM generate_series(0, {RANGES_BIG - 1}) k;
-- The lookup table of in-application sharding, with the same 16 ranges (its best case).
CREATE TABLE shard_map (b_start int NOT NULL, b_end int NOT NULL, addr text NOT NULL);
INSERT INTO shard_map SELECT k * 4096 + 1, k * 4096 + 4096, '10.0.' || (k % 8) || '.0:4327'
    FROM generate_series(0, 15) k;
CREATE INDEX ON shard_map (b_start, b_end);
ANALYZE shard_map;
"""


def workload(calls, expr):
    # A spread of bucket ids, the same sequence for every variant.
    return (f"SELECT count({expr}) FROM (SELECT ((i::int8 * 7919) % {BUCKETS})::int4 + 1 AS b "
            f"FROM generate_series(1, {calls}) i) s")


VARIANTS = {
    "loop": "b",
    "builtin": "abs(b)",
    "picoroute_16": "picoroute_master('t16', b)",
    "picoroute_65536": "picoroute_master('t64k', b)",
    "table_16": "(SELECT addr FROM shard_map WHERE b BETWEEN b_start AND b_end LIMIT 1)",
}


def measure(server, calls, runs, names):
    samples = {name: [] for name in names}
    for _ in range(runs):
        for name in names:  # interleaved, so drift of a shared machine hits all alike
            samples[name].append(server.exec_ms(workload(calls, VARIANTS[name])))
    return samples


def republisher(server, stop, counter):
    """Republishes the map 10 times a second (an instance's state flips) through one session,
    until stopped (and at most for 10 minutes)."""
    session = subprocess.Popen(["psql", "-X", "-q", "-At", "-h", "127.0.0.1", "-p",
                                str(server.port), "-U", "postgres", "-d", "postgres"],
                               stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    state = ["Offline", "Online"]
    i = 0
    deadline = time.time() + 600
    next_at = time.time()
    while not stop.is_set() and time.time() < deadline:
        session.stdin.write("SELECT picoroute_apply_events('{\"map\":\"instance\",\"op\":"
                            "\"replace\",\"instance_uuid\":\"t64k-rs7-i1\",\"current_state\":\""
                            + state[i % 2] + "\"}');\n")
        session.stdin.flush()
        counter[0] += 1
        i += 1
        next_at += 0.1
        stop.wait(max(0.0, next_at - time.time()))
    session.stdin.close()
    session.wait(timeout=30)


def fmt(ms, calls):
    return f"{ms * 1e6 / calls:8.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--calls", type=int, default=1000000)
    ap.add_argument("--port", type=int, default=None,
                    help="the server's port (default: one of a free range, test/tools/port_range.py)")
    ap.add_argument("--out", default=None, help="also write the report (markdown) here")
    args = ap.parse_args()

    server = Server(args.port or port_range.reserve() + port_range.NODE_OFFSET)
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    try:
        print("starting a private server and loading the topology ...", flush=True)
        server.start()
        server.psql(SETUP)
        ranges = server.psql("SELECT tier, count(*) FROM picoroute_buckets GROUP BY 1 ORDER BY 1")
        print(f"ranges per tier: {ranges.replace(chr(10), ', ')}", flush=True)
        # Sanity: the lookups answer (the bench must not time NULL paths by mistake).
        check = server.psql("SELECT picoroute_master('t16', 1), picoroute_master('t64k', 65536), "
                            "(SELECT addr FROM shard_map WHERE 1 BETWEEN b_start AND b_end)")
        assert "|" in check and "" not in check.split("|"), check

        names = list(VARIANTS)
        measure(server, args.calls // 10, 1, names)  # warm-up
        print(f"timing {args.runs} runs x {len(names)} variants x {args.calls} calls ...",
              flush=True)
        samples = measure(server, args.calls, args.runs, names)
        med = {n: statistics.median(s) for n, s in samples.items()}

        say("## Lookup cost (bench/lookup_bench.py)")
        say()
        say(f"{os.cpu_count()} cores; {args.calls} calls per statement; median of {args.runs} runs "
            f"(min-max); ns per call = statement execution time / calls.")
        say()
        say("| variant | ns/call median | min | max |")
        say("|---|---|---|---|")
        for n in names:
            s = samples[n]
            say(f"| {n} | {fmt(med[n], args.calls)} | {fmt(min(s), args.calls)} | "
                f"{fmt(max(s), args.calls)} |")
        say()
        say("| ratio | value | target |")
        say("|---|---|---|")
        r1 = med["picoroute_16"] / med["builtin"]
        r2 = med["table_16"] / med["picoroute_16"]
        r3 = med["picoroute_65536"] / med["picoroute_16"]
        say(f"| picoroute / builtin (16 ranges) | {r1:.2f}x | <= 2x |")
        say(f"| table lookup / picoroute (16 ranges) | {r2:.1f}x | >= 10x |")
        say(f"| 65,536 ranges / 16 ranges | {r3:.3f} | <= 1.10 |")
        say()
        say("Marginal cost (variant minus the bare loop, which every variant includes): "
            + ", ".join(f"{n} {fmt(med[n] - med['loop'], args.calls).strip()} ns"
                        for n in names if n != "loop") + ".")

        # Throughput while the map is republished 10 times a second.
        stop = threading.Event()
        counter = [0]
        idle = [server.exec_ms(workload(args.calls, VARIANTS["picoroute_65536"]))
                for _ in range(args.runs)]
        thread = threading.Thread(target=republisher, args=(server, stop, counter))
        gen_before = int(server.psql("SELECT generation FROM picoroute_status"))
        thread.start()
        busy = [server.exec_ms(workload(args.calls, VARIANTS["picoroute_65536"]))
                for _ in range(args.runs)]
        stop.set()
        thread.join()
        gen_after = int(server.psql("SELECT generation FROM picoroute_status"))
        elapsed = sum(busy) / 1000
        say()
        say(f"Republishing: {gen_after - gen_before} publishes of the 65,536-range map during "
            f"{elapsed:.1f} s of lookups ({(gen_after - gen_before) / max(elapsed, 1e-9):.1f}/s).")
        thr = statistics.median(idle) / statistics.median(busy)
        say()
        say("| lookups (65,536 ranges) | ns/call median | min | max |")
        say("|---|---|---|---|")
        say(f"| idle | {fmt(statistics.median(idle), args.calls)} | {fmt(min(idle), args.calls)} | "
            f"{fmt(max(idle), args.calls)} |")
        say(f"| republished 10/s | {fmt(statistics.median(busy), args.calls)} | "
            f"{fmt(min(busy), args.calls)} | {fmt(max(busy), args.calls)} |")
        say()
        say(f"Throughput while republishing / idle: {thr * 100:.1f}% (target >= 90%).")
    finally:
        server.stop()

    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.exit(main())
