#!/usr/bin/env python3
"""picoroute against its peers: point SELECT, point INSERT and a 100,000-row scan, in one run.

Starts, on 127.0.0.1 only, an emulated Picodata cluster (test/emulator/picoemu: 2 replicasets x 2
instances, 3000 buckets, its own --dir, base port below 32768) and a private PostgreSQL node with
picoroute preloaded, postgres_fdw and PL/Proxy. Every load loop is bounded (pgbench -T or -t);
every server is stopped and every directory removed on exit, failures included.

Point SELECT and point INSERT, same data, same keys, same pgbench client count:
  picoroute   pgbench -> node: picoroute foreign table (the node computes the bucket and routes)
  pg_fdw      pgbench -> node: postgres_fdw foreign table on the owning master (routed by hand)
  plproxy     pgbench -> node: PL/Proxy function, RUN ON the partition of the bucket's owner
  forward     pgbench -> the other replicaset's master, which forwards to the owner
  direct      pgbench -> the owning master (the floor: one round trip)
  direct_unnamed  the same with pgbench -M extended (SELECT only, for information)
Every timed variant takes the same path to the instances: their private PostgreSQL ports, with
nothing written for tests in between. The emulator runs with `up --advertise-private`, so its
catalog (hence picoroute's map, `forward`'s and `direct`'s targets) gives the private ports, where
the peers (postgres_fdw, PL/Proxy) connect too; picoroute's servers have execution_options 'off'
(no OPTION clause, no Picodata startup options: what plain PostgreSQL accepts). Before timing, a
sanity pass sends each kind of picoroute statement through the instances' Picodata fronts (the
node's map pushed with the fronts' addresses) and fails the run unless `picoemu audit` is empty.
Scan of every row of the table, spread over both replicasets:
  picoroute   foreign table of the default server (scatter 'coordinator'): one coordinator
              gathers the rows, as Picodata runs a statement without a key
  picoroute_masters  foreign table with scatter 'masters': each master's own buckets, in
              several statements per master (its bucket list is over Picodata's 512 chains)
  pg_fdw      partitioned table of postgres_fdw foreign partitions (async_capable), default
              fetch_size (100) and fetch_size 10000
  pg_fdw_coord  postgres_fdw (fetch_size 10000) reading the public.users view of one master, which
              gathers the other replicaset's rows as a coordinator: picoroute's path
  coordinator that master alone: its public.users view copied (COPY TO STDOUT) to a client that
              discards it, the floor of any client reading the table through one coordinator
  direct      one psql per master, in parallel, reading its storage table

Every figure is the median of --runs runs (min and max shown); variants are interleaved run by
run, in a rotating order, so that drift of the machine hits all of them alike. A perf profile of
the picoroute node's backends during a point-SELECT load is taken after the measurements.

Usage: bench/peers_bench.py [--quick] [--runs 5] [--seconds 8] [--out FILE] [--no-profile]
                            [--only scan]
Run as root (servers then run as the postgres user) or as the postgres user; picoroute must be
installed (make install). Python 3 standard library, pgbench, psql, perf (optional).
"""

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
PICOEMU = os.path.join(ROOT, "test", "emulator", "picoemu")
BIN = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                     check=True).stdout.strip()
HOST = "127.0.0.1"
EMU_USER = "admin"       # the emulator's superuser: every remote connection of every variant
EMU_PASSWORD = "admin"
EMU_DB = "picodata"
KEY_SHIFT = 4096         # pgbench key pool entries encode key * 4096 + bucket

sys.path.insert(0, os.path.join(ROOT, "test", "tools"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
sys.path.insert(0, os.path.join(ROOT, "test", "emulator"))
from picoemu_lib import caps as emu_caps  # noqa: E402
from picoemu_lib import pgwire  # noqa: E402  (a protocol client for the counting pass)
import port_range  # noqa: E402
import wire  # noqa: E402

# The newest emulated Picodata release that prunes by bucket_id (26.2.1-rc2): the emulated build, and
# the picodata_version of the benches' servers (scatter 'masters' needs it; it also has forward, the
# strict mode of the sanity checks).
PRUNING_BUILD = [b for b in emu_caps.BUILDS if emu_caps.has("prune_by_bucket_id", b)
                 and emu_caps.has("forward", b)][-1]

SELECT_VARIANTS = ["picoroute", "pg_fdw", "pg_fdw_coord", "plproxy", "forward", "direct"]
INSERT_VARIANTS = ["picoroute", "pg_fdw", "plproxy", "forward", "direct"]
SCAN_VARIANTS = ["picoroute", "picoroute_masters", "pg_fdw", "pg_fdw_10k", "pg_fdw_coord",
                 "coordinator", "direct"]


class BenchError(Exception):
    pass


def as_server_user(cmd):
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--"] + cmd
    return cmd


def run(cmd, timeout, env=None, check=True):
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=full_env)
    if check and out.returncode != 0:
        raise BenchError(f"{' '.join(cmd[:6])} ... failed ({out.returncode}):\n"
                         f"{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return out


def emu_conninfo(port):
    return f"host={HOST} port={port} dbname={EMU_DB} user={EMU_USER} password={EMU_PASSWORD}"


def pgfdw_server_ddl(name, port, extra=""):
    """A postgres_fdw server on an emulator instance's private port, with the emulator's
    credentials (postgres_fdw cannot speak Picodata's dialect through a front)."""
    return f"""
CREATE SERVER {name} FOREIGN DATA WRAPPER postgres_fdw
  OPTIONS (host '{HOST}', port '{port}', dbname '{EMU_DB}'{extra});
CREATE USER MAPPING FOR CURRENT_USER SERVER {name}
  OPTIONS (user '{EMU_USER}', password '{EMU_PASSWORD}');"""


def psql_at(conninfo, sql, timeout=120):
    return run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", conninfo, "-c", sql],
               timeout).stdout.strip()


class Emulator:
    """The emulated Picodata cluster, driven through its CLI. With private=True (`up
    --advertise-private`) its catalog advertises the instances' private PostgreSQL ports: every
    client that reads addresses from it reaches the servers with nothing in between, and the
    Picodata fronts still listen on their own ports (`front_port`) for a pass that checks the
    dialect (front_pass)."""

    def __init__(self, base_port, private=False):
        self.base_port = base_port
        self.private = private  # also --private-pgproto: Picodata sessions and bound keys there
        self.dir = tempfile.mkdtemp(prefix="picoroute-peers-emu-")
        os.chmod(self.dir, 0o755)
        self.started = False

    def cli(self, *args, timeout=300):
        return run([PICOEMU, "--dir", self.dir] + list(args), timeout).stdout

    def up(self):
        self.started = True
        # the sanity checks use strict mode (forward=off, capability forward)
        self.cli("up", "--base-port", str(self.base_port), "--picodata", PRUNING_BUILD,
                 *(["--advertise-private", "--private-pgproto"] if self.private else []))

    def status(self):
        return json.loads(self.cli("status", "--json"))

    def require_empty_audit(self):
        """Fails when a front refused a statement (`picoemu audit` exits 1)."""
        out = run([PICOEMU, "--dir", self.dir, "audit"], 60, check=False)
        if out.returncode != 0:
            raise BenchError("the Picodata fronts refused statements (picoemu audit):\n"
                             + out.stdout[-3000:])
        return out.stdout.strip().splitlines()[-1]

    def front_map(self, port_of=None):
        """The topology as picoroute_apply_events takes it, every instance at its front (or at
        port_of(instance), a port that leads to it)."""
        st = self.status()
        port_of = port_of or (lambda i: i["front_port"])
        uuid_of = {rs["name"]: rs["uuid"] for rs in st["replicasets"]}
        inst_uuid = {i["name"]: i["uuid"] for i in st["instances"]}
        events = []
        for t in st["tiers"]:
            events.append({"op": "replace", "map": "tier", "name": t["name"],
                           "bucket_count": t["bucket_count"]})
        for rs in st["replicasets"]:
            events.append({"op": "replace", "map": "replicaset", "replicaset_uuid": rs["uuid"],
                           "tier": rs["tier"], "current_master_uuid": inst_uuid[rs["master"]]})
        for i in st["instances"]:
            events.append({"op": "replace", "map": "instance", "instance_uuid": i["uuid"],
                           "replicaset_uuid": i["replicaset_uuid"], "current_state": i["state"],
                           "address": f"{HOST}:{port_of(i)}"})
        for t in st["tiers"]:
            for r in t["buckets"]:
                events.append({"op": "replace", "map": "bucket", "tier": t["name"],
                               "bucket_id": {"start": r["start"], "end": r["end"]},
                               "current_replicaset_uuid": uuid_of[r["replicaset"]]})
        return events, st

    def down(self):
        if self.started:
            subprocess.run([PICOEMU, "--dir", self.dir, "down"], capture_output=True, timeout=300)
        shutil.rmtree(self.dir, ignore_errors=True)


class Node:
    """The private PostgreSQL server with picoroute preloaded (the routing node). With
    source='push' its map starts empty: use_fronts() gives it the fronts' addresses for the
    sanity pass, use_catalog() then switches it to the catalog (polled from `conninfo`)."""

    def __init__(self, port, conninfo, source="poll"):
        self.port = port
        self.conninfo = conninfo
        self.source = source
        self.dir = tempfile.mkdtemp(prefix="picoroute-peers-node-")
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")
        self.data = os.path.join(self.dir, "data")
        self.started = False

    def start(self):
        run(as_server_user([f"{BIN}/initdb", "-D", self.data, "-A", "trust", "-U", "postgres"]),
            120)
        conf = f"""
listen_addresses = '{HOST}'
port = {self.port}
unix_socket_directories = '{self.dir}'
max_connections = 50
shared_buffers = '128MB'
jit = off
shared_preload_libraries = 'picoroute'
picoroute.conninfo = '{self.conninfo}'
picoroute.source = '{self.source}'
picoroute.allowed_hosts = '{HOST}'
"""
        with open(os.path.join(self.data, "postgresql.conf"), "a") as f:
            f.write(conf)
        self.started = True
        run(as_server_user([f"{BIN}/pg_ctl", "-D", self.data, "-w", "-t", "60", "-l",
                            os.path.join(self.dir, "log"), "start"]), 90)

    def stop(self):
        if self.started:
            subprocess.run(as_server_user([f"{BIN}/pg_ctl", "-D", self.data, "-m", "fast", "-t",
                                           "60", "stop"]), capture_output=True, timeout=90)
        shutil.rmtree(self.dir, ignore_errors=True)

    def dsn(self):
        return f"host={HOST} port={self.port} dbname=postgres user=postgres"

    def postmaster_pid(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            return int(f.readline())

    def psql(self, sql, timeout=120):
        return psql_at(self.dsn(), sql, timeout)

    def use_fronts(self, emu, port_of=None):
        """Push mode (source='push'): publishes a map whose instances are the fronts (or at
        port_of(instance): the counting relays)."""
        if self.psql("SHOW picoroute.source") != "push":
            self.psql("ALTER SYSTEM SET picoroute.source = 'push'")
            self.psql("SELECT pg_reload_conf()")
            for _ in range(100):
                if self.psql("SHOW picoroute.source") == "push":
                    break
                time.sleep(0.1)
        events, _ = emu.front_map(port_of)
        self.psql(f"SELECT picoroute_apply_events('{json.dumps(events)}')")

    def use_catalog(self, emu):
        """Switches to polling the catalog (the addresses it advertises) and waits, at most
        20 s, until every bucket range's master is at the address the catalog gives."""
        self.psql("ALTER SYSTEM SET picoroute.source = 'poll'")
        self.psql("SELECT pg_reload_conf()")
        self.wait_map(emu, lambda i: i["port"])

    def wait_map(self, emu, port_of):
        """Waits, at most 20 s, until every bucket range's master is at port_of(instance)."""
        st = emu.status()
        port_of = {i["name"]: port_of(i) for i in st["instances"]}
        master = {rs["name"]: rs["master"] for rs in st["replicasets"]}
        want = {(t["name"], r["start"]): f"{HOST}:{port_of[master[r['replicaset']]]}"
                for t in st["tiers"] for r in t["buckets"]}
        got = {}
        for _ in range(100):
            got = {k: self.psql(f"SELECT picoroute_master('{k[0]}', {k[1]})") for k in want}
            if got == want:
                return
            time.sleep(0.2)
        raise BenchError(f"the node's map did not take the catalog's addresses: {got}, "
                         f"expected {want}")


class NodeSession:
    """A protocol session on the node (test/emulator/picoemu_lib/pgwire.py), with its backend's CPU time."""

    def __init__(self, node):
        self.c = pgwire.Conn(node.port, "postgres", "", dbname="postgres", application_name="bench")
        self.pid = int(self.run("SELECT pg_backend_pid()")[0][0])

    def run(self, sql):
        answers = self.c.query(sql)
        errors = pgwire.errors(answers)
        if errors:
            raise BenchError(f"{sql}: {errors}")
        return pgwire.rows(answers)

    def cpu_ns(self):
        return schedstat_ns(self.pid)

    def close(self):
        self.c.close()


@contextlib.contextmanager
def counting_relays(emu, node, fdw_servers=None):
    """Counting relays (bench/wire.py) in front of every instance, for a counting pass (never a
    timed one): the node's map (push mode) and the postgres_fdw servers {name: private port} point
    at them. Yields snap(), the counts summed over the relays; everything points back at the
    private ports on the way out."""
    fdw_servers = fdw_servers or {}
    st = emu.status()
    relays = {i["private_port"]: wire.Relay(i["private_port"]) for i in st["instances"]}

    def alter(port_of):
        if fdw_servers:
            node.psql("\n".join(f"ALTER SERVER {name} OPTIONS (SET port '{port_of(p)}');"
                                 for name, p in fdw_servers.items()))

    def snap():
        total = wire.Counts()
        for r in relays.values():
            total = total.plus(r.snapshot())
        return total
    try:
        node.use_fronts(emu, lambda i: relays[i["private_port"]].port)
        node.wait_map(emu, lambda i: relays[i["private_port"]].port)
        alter(lambda p: relays[p].port)
        yield snap
    finally:
        alter(lambda p: p)
        node.use_catalog(emu)
        for r in relays.values():
            r.stop()


def front_pass(emu, node, statements):
    """The sanity pass through the Picodata fronts, before anything is timed: the node (push
    mode) gets a map of the fronts' addresses, runs statements() (each kind of statement picoroute
    sends in the timed run, once), the fronts' audit must be empty; then the node's map becomes the
    catalog's, the instances' private ports, for the timed runs. Returns the audit's verdict."""
    node.use_fronts(emu)
    statements()
    verdict = emu.require_empty_audit()
    node.use_catalog(emu)
    return verdict


def free_ports(base_port, node_port):
    """The emulator's base port and the node's port: the ones given, else a free range reserved for
    this process (test/tools/port_range.py; the node takes base + 100, which the emulator leaves
    free), so that runs sharing a machine do not collide."""
    if base_port is None:
        base_port = port_range.reserve()
    if node_port is None:
        node_port = base_port + port_range.NODE_OFFSET
    return base_port, node_port


def small_bench_args(doc):
    """The command line shared by the single-table benches (upper_bench, join_bench)."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--base-port", type=int, default=None, help="emulator base port (default: a free range)")
    ap.add_argument("--port", type=int, default=None, help="node port (default: base port + 100)")
    ap.add_argument("--out")
    ap.add_argument("--quick", action="store_true", help="10,000 rows, 1 run (a smoke run)")
    ap.add_argument("--verdicts", default=None, help="append the verdict rows here (JSON lines)")
    return ap


def parse_small_args(ap):
    args = ap.parse_args()
    if args.quick:
        args.rows, args.runs = 10000, 1
    args.base_port, args.port = free_ports(args.base_port, args.port)
    return args


def run_small_bench(args, body):
    """Starts the emulated cluster with `users` (its catalog advertising the private ports, the
    row and opcode limits off) and a picoroute node in push mode (see front_pass), runs
    body(emu, node), prints the report it returns and writes it to --out; every server is stopped
    on the way out, a SIGTERM included."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    emu = Emulator(args.base_port, private=True)
    node = None
    try:
        emu.up()
        # A keyless read through picoroute (execution_options 'off': no OPTION clause) returns
        # and examines more rows than Picodata's default limits allow.
        emu.cli("set", "sql_motion_row_max", "0")
        emu.cli("set", "sql_vdbe_opcode_max", "0")
        node = users_node(emu, args.rows, args.port)
        node.start()
        report = body(emu, node)
        print(report)
        if args.out:
            with open(args.out, "w") as out:
                out.write(report)
    finally:
        if node is not None:
            node.stop()
        emu.down()


def users_node(emu, rows, port):
    """Creates `users` (id int8, name text, v int8) with `rows` generated rows on the emulated
    cluster (up already) and returns a picoroute node (not started) whose map source lists every
    instance."""
    emu.cli("create-table", "users", "--columns", "id int8, name text, v int8")
    emu.cli("load", "users", "--rows", str(rows), timeout=1200)
    st = emu.status()
    hosts = ",".join(HOST for _ in st["instances"])
    ports = ",".join(str(i["port"]) for i in st["instances"])
    return Node(port, f"host={hosts} port={ports} dbname={EMU_DB} user={EMU_USER} "
                      f"password={EMU_PASSWORD}", source="push")


def wait_for_map(node):
    """Waits (at most 20 s) until the node's map knows the buckets of tier default."""
    for _ in range(100):
        if node.psql("SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'") != "0":
            return
        time.sleep(0.2)


# ---- pgbench ------------------------------------------------------------------------------------

def key_tree(var, values, lo, hi):
    """A balanced pgbench CASE expression mapping :var in [lo, hi) to values[var]."""
    if hi - lo == 1:
        return str(values[lo])
    mid = (lo + hi) // 2
    return (f"case when :{var} < {mid} then {key_tree(var, values, lo, mid)} "
            f"else {key_tree(var, values, mid, hi)} end")


def key_preamble(pool):
    """pgbench lines that draw one entry of the key pool at random: :k the key, :b its bucket.
    The same lines open every point script, so their (client-side) cost is the same for all."""
    enc = [k * KEY_SHIFT + b for k, b in pool]
    return (f"\\set i random(0, {len(enc) - 1})\n"
            f"\\set kb {key_tree('i', enc, 0, len(enc))}\n"
            f"\\set k :kb / {KEY_SHIFT}\n"
            f"\\set b :kb % {KEY_SHIFT}\n")


def parse_pgbench(out):
    tps = re.search(r"^tps = ([0-9.]+) \(without initial connection time\)", out, re.M)
    lat = re.search(r"^latency average = ([0-9.]+) ms", out, re.M)
    done = re.search(r"^number of transactions actually processed: (\d+)", out, re.M)
    failed = re.search(r"^number of failed transactions: (\d+)", out, re.M)
    if not tps or not lat or not done:
        raise BenchError("cannot parse pgbench output:\n" + out[-2000:])
    if failed and int(failed.group(1)) != 0:
        raise BenchError("pgbench reported failed transactions:\n" + out[-2000:])
    return {"tps": float(tps.group(1)), "lat": float(lat.group(1)), "n": int(done.group(1))}


class Pgbench:
    def __init__(self, clients, threads, workdir):
        self.clients = clients
        self.threads = threads
        self.workdir = workdir

    def script(self, name, text):
        path = os.path.join(self.workdir, name + ".sql")
        with open(path, "w") as f:
            f.write(text)
        return path

    def run(self, target, script, seconds=None, transactions=None, defines=(), clients=None,
            background=False, mode="prepared"):
        """target: (port, dbname, user, password or None)."""
        port, db, user, password = target
        c = clients or self.clients
        cmd = ["pgbench", "-n", "-M", mode, "-c", str(c), "-j", str(min(self.threads, c)),
               "-h", HOST, "-p", str(port), "-U", user, "-f", script]
        if seconds is not None:
            cmd += ["-T", str(seconds)]
            timeout = seconds + 120
        else:
            cmd += ["-t", str(transactions)]
            timeout = 900
        for d in defines:
            cmd += ["-D", d]
        cmd.append(db)
        env = {"PGPASSWORD": password} if password else {}
        if background:
            full_env = dict(os.environ)
            full_env.update(env)
            return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    text=True, env=full_env), timeout
        out = run(cmd, timeout, env=env, check=False)
        if out.returncode != 0 or "aborted" in out.stderr:
            raise BenchError(f"pgbench on port {port} failed ({out.returncode}):\n"
                             f"{out.stdout[-1500:]}\n{out.stderr[-1500:]}")
        return parse_pgbench(out.stdout)


# ---- the bench ----------------------------------------------------------------------------------

class Reporter:
    """The report's lines (say: printed and kept in self.lines for --out) and progress lines (log:
    printed with the time). Shared by the benchmarks that import this module."""

    def say(self, text=""):
        print(text, flush=True)
        self.lines.append(text)

    def log(self, text):
        print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


class Bench(Reporter):
    def __init__(self, args):
        self.args = args
        self.workdir = tempfile.mkdtemp(prefix="picoroute-peers-")
        os.chmod(self.workdir, 0o755)
        self.emu = Emulator(args.base_port, private=True)
        self.node = None
        self.pgb = Pgbench(args.clients, args.threads, self.workdir)
        self.lines = []
        self.notes = []

    def cleanup(self):
        if self.node is not None:
            self.node.stop()
        self.emu.down()
        shutil.rmtree(self.workdir, ignore_errors=True)

    # -- setup --
    def setup(self):
        a = self.args
        self.log(f"emulator: up on base port {a.base_port} in {self.emu.dir}")
        self.emu.up()
        self.emu.cli("create-table", "users", "--columns", "id int8, name text, v int8")
        self.emu.cli("create-table", "events", "--columns", "id int8, sk int8, note text",
                     "--primary-key", "id", "--sharding-key", "sk")
        self.log(f"emulator: loading {a.rows} rows into users")
        self.emu.cli("load", "users", "--rows", str(a.rows))
        # picoroute's scatter scan returns every row of a master: more than Picodata's default
        # sql_motion_row_max (5000) allows; the bench turns the limit off (the report says so)
        self.emu.cli("set", "sql_motion_row_max", "0")
        self.emu.cli("set", "sql_vdbe_opcode_max", "0")  # the scan examines 50,000 rows per storage
        st = self.emu.status()
        # The catalog advertises the private ports (up --advertise-private): `port` and
        # `private_port` are the same, the master's PostgreSQL server with nothing in between.
        self.masters = {}   # replicaset -> advertised port of its master
        self.private = {}   # replicaset -> private PostgreSQL port of its master
        for rs in st["replicasets"]:
            inst = next(i for i in st["instances"] if i["name"] == rs["master"])
            self.masters[rs["name"]] = inst["port"]
            self.private[rs["name"]] = inst["private_port"]
        tier = st["tiers"][0]
        self.ranges = {}    # replicaset -> [(start, end)]
        for r in tier["buckets"]:
            self.ranges.setdefault(r["replicaset"], []).append((r["start"], r["end"]))
        self.rs_names = sorted(self.masters)
        if len(self.rs_names) != 2 or any(len(v) != 1 for v in self.ranges.values()):
            raise BenchError(f"expected 2 replicasets with one bucket range each: {self.ranges}")
        self.owner = self.rs_names[0]          # the keys of the point statements belong here
        self.other = self.rs_names[1]          # the forwarding instance
        self.owner_port = self.masters[self.owner]
        self.other_port = self.masters[self.other]
        self.owner_private = self.private[self.owner]
        self.bucket_count = tier["bucket_count"]

        # Key pool: random loaded keys of the owner's replicaset, with their buckets.
        rows = psql_at(emu_conninfo(self.owner_private),
                       "SELECT id, bucket_id FROM _picoemu_local.users ORDER BY id")
        keys = [tuple(int(x) for x in line.split("|")) for line in rows.splitlines()]
        rng = random.Random(20250101)
        self.pool = rng.sample(keys, min(a.pool, len(keys)))
        self.log(f"key pool: {len(self.pool)} keys of replicaset {self.owner} "
                 f"(master on port {self.owner_port}), out of {len(keys)} stored there")

        # Remote helper for PL/Proxy inserts (a PL/Proxy function calls a function of the same
        # name on the partition). Created on both masters; standbys receive it by replication.
        for port in self.private.values():
            psql_at(emu_conninfo(port), """
CREATE OR REPLACE FUNCTION public.px_insert(i bigint, s bigint, b integer) RETURNS integer
LANGUAGE sql AS $$ INSERT INTO public.events (id, sk, note) VALUES (i, s, 'x'); SELECT 1 $$;""")

        self.log(f"node: starting on port {a.node_port}")
        self.node = Node(a.node_port, self.emu.cli("conninfo", "--user", EMU_USER).strip(),
                         source="push")
        self.node.start()
        self.node.psql("CREATE EXTENSION picoroute; CREATE EXTENSION postgres_fdw; "
                       "CREATE EXTENSION plproxy;")
        self.node.use_fronts(self.emu)  # the sanity pass through the fronts comes first
        for _ in range(100):
            n = self.node.psql("SELECT count(*) FROM picoroute_buckets WHERE tier = 'default'")
            if n == "2":
                break
            time.sleep(0.1)
        else:
            raise BenchError("picoroute did not load the bucket map: "
                             + self.node.psql("SELECT * FROM picoroute_status"))
        self.node.psql(self.node_ddl())

    def node_ddl(self):
        o = self.owner
        part = " ".join(f"WHEN b BETWEEN {s} AND {e} THEN {i}"
                        for i, rs in enumerate(self.rs_names) for s, e in self.ranges[rs])
        sql = [f"""
-- picoroute as it runs on Picodata (read_preference leader, connections cached per session): server
-- `pico` with the default execution_options 'on', so its connections send Picodata's startup
-- options (read_preference=leader,pico_stmt_invalidation=true: the emulated build has the
-- capability) and keep named prepared statements; the node plans as PostgreSQL does by default
-- (five custom plans, then a generic one: the key reaches the instance bound). The instances take
-- those options and route a bound key on their private ports (picoemu up --private-pgproto).
-- picodata_version fixed, so that the sanity pass (pushed map, no version known) and the timed runs
-- send the same SQL. Keyless statements carry an OPTION clause with execution_options 'on', which
-- a private port cannot parse: the scans use `pico_off` (execution_options 'off'), and the bench
-- turns the cluster's row and opcode limits off instead.
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname '{EMU_DB}', picodata_version '{PRUNING_BUILD}');
CREATE SERVER pico_off FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname '{EMU_DB}', picodata_version '{PRUNING_BUILD}', execution_options 'off');
CREATE SERVER pico_m FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname '{EMU_DB}', scatter 'masters', picodata_version '{PRUNING_BUILD}',
           execution_options 'off');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico OPTIONS (user '{EMU_USER}', password '{EMU_PASSWORD}');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico_off OPTIONS (user '{EMU_USER}', password '{EMU_PASSWORD}');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico_m OPTIONS (user '{EMU_USER}', password '{EMU_PASSWORD}');
CREATE FOREIGN TABLE pr_users (id bigint, name text, v bigint) SERVER pico
  OPTIONS (table_name 'users', sharding_key 'id');
CREATE FOREIGN TABLE pr_users_m (id bigint, name text, v bigint) SERVER pico_m
  OPTIONS (table_name 'users', sharding_key 'id');
-- the scan through the default server (one coordinator), its aggregate computed here
CREATE FOREIGN TABLE pr_users_c (id bigint, name text, v bigint) SERVER pico_off
  OPTIONS (table_name 'users', sharding_key 'id', pushdown_aggregates 'off');
CREATE FOREIGN TABLE pr_events (id bigint, sk bigint, note text) SERVER pico
  OPTIONS (table_name 'events', sharding_key 'sk');
"""]
        for rs in self.rs_names:
            sql.append(pgfdw_server_ddl(f"fdw_{rs}", self.private[rs], ", async_capable 'true'"))
        sql.append(f"""
-- postgres_fdw routed by hand: the owner's public.users / public.events, as picoroute reaches them
CREATE FOREIGN TABLE fdw_users_owner (id bigint, name text, v bigint, bucket_id bigint)
  SERVER fdw_{o} OPTIONS (schema_name 'public', table_name 'users');
CREATE FOREIGN TABLE fdw_events_owner (id bigint, sk bigint, note text)
  SERVER fdw_{o} OPTIONS (schema_name 'public', table_name 'events');
-- postgres_fdw through a coordinator: the other master's public.users, which forwards to the owner
CREATE FOREIGN TABLE fdw_users_via (id bigint, name text, v bigint)
  SERVER fdw_{self.other} OPTIONS (schema_name 'public', table_name 'users');
-- postgres_fdw partitions for the scan: each master's own storage (public.users is global)
CREATE TABLE fdw_users_p (id bigint, name text, v bigint, bucket_id bigint)
  PARTITION BY RANGE (bucket_id);
CREATE TABLE fdw_users_p10k (id bigint, name text, v bigint, bucket_id bigint)
  PARTITION BY RANGE (bucket_id);
-- postgres_fdw through one coordinator: the other master's public.users view, which gathers the
-- owner's rows, as picoroute's scan does here; one partition, so that no aggregate is pushed
CREATE TABLE fdw_users_coord (id bigint, name text, v bigint, bucket_id bigint)
  PARTITION BY RANGE (bucket_id);
CREATE FOREIGN TABLE fdw_users_coord_all PARTITION OF fdw_users_coord
  FOR VALUES FROM (MINVALUE) TO (MAXVALUE)
  SERVER fdw_{self.other} OPTIONS (schema_name 'public', table_name 'users', fetch_size '10000');""")
        for rs in self.rs_names:
            (s, e), = self.ranges[rs]
            sql.append(f"""
CREATE FOREIGN TABLE fdw_users_p_{rs} PARTITION OF fdw_users_p FOR VALUES FROM ({s}) TO ({e + 1})
  SERVER fdw_{rs} OPTIONS (schema_name '_picoemu_local', table_name 'users');
CREATE FOREIGN TABLE fdw_users_p10k_{rs} PARTITION OF fdw_users_p10k
  FOR VALUES FROM ({s}) TO ({e + 1})
  SERVER fdw_{rs} OPTIONS (schema_name '_picoemu_local', table_name 'users', fetch_size '10000');""")
        parts = ", ".join(f"p{i} '{HOST_KV(self.private[rs])}'"
                          for i, rs in enumerate(self.rs_names))
        sql.append(f"""
-- PL/Proxy: one partition per replicaset master, in replicaset order
CREATE SERVER pxc FOREIGN DATA WRAPPER plproxy OPTIONS (connection_lifetime '3600', {parts});
CREATE USER MAPPING FOR PUBLIC SERVER pxc OPTIONS (user '{EMU_USER}', password '{EMU_PASSWORD}');
-- the bucket -> partition map, precomputed from the cluster's bucket ranges
CREATE FUNCTION px_part(b integer) RETURNS integer LANGUAGE sql IMMUTABLE
  AS $$ SELECT CASE {part} END $$;
CREATE FUNCTION px_get(k bigint, b integer) RETURNS TABLE (id bigint, name text, v bigint)
LANGUAGE plproxy AS $$
  CLUSTER 'pxc';
  RUN ON px_part(b);
  SELECT id, name, v FROM public.users WHERE id = k;
$$;
CREATE FUNCTION px_insert(i bigint, s bigint, b integer) RETURNS integer LANGUAGE plproxy AS $$
  CLUSTER 'pxc';
  RUN ON px_part(b);
$$;
ANALYZE;""")
        return "\n".join(sql)

    # -- targets and scripts --
    def targets(self):
        node = (self.args.node_port, "postgres", "postgres", None)
        return {
            "node": node,
            "owner": (self.owner_port, EMU_DB, EMU_USER, EMU_PASSWORD),
            "other": (self.other_port, EMU_DB, EMU_USER, EMU_PASSWORD),
        }

    def select_scripts(self):
        """The same remote statement for every variant, a keyed SELECT without bucket_id, which the
        instance routes by its key (bound: every variant sends it with a parameter)."""
        pre = key_preamble(self.pool)
        remote = "SELECT id, name, v FROM users WHERE id = :k;\n"
        return {
            "picoroute": ("node", pre + "SELECT id, name, v FROM pr_users WHERE id = :k;\n"),
            "pg_fdw": ("node", pre + "SELECT id, name, v FROM fdw_users_owner WHERE id = :k;\n"),
            "pg_fdw_coord": ("node", pre + "SELECT id, name, v FROM fdw_users_via WHERE id = :k;\n"),
            "plproxy": ("node", pre + "SELECT id, name, v FROM px_get(:k, :b);\n"),
            "forward": ("other", pre + remote),
            "direct": ("owner", pre + remote),
        }

    def insert_scripts(self):
        pre = key_preamble(self.pool) + "\\set n :n + 1\n" \
            "\\set id :base + :client_id * 100000000 + :n\n"
        remote = "INSERT INTO events (id, sk, note) VALUES (:id, :k, 'x');\n"
        return {
            "picoroute": ("node", pre + "INSERT INTO pr_events (id, sk, note) "
                                  "VALUES (:id, :k, 'x');\n"),
            "pg_fdw": ("node", pre + "INSERT INTO fdw_events_owner (id, sk, note) "
                               "VALUES (:id, :k, 'x');\n"),
            "plproxy": ("node", pre + "SELECT px_insert(:id, :k, :b);\n"),
            "forward": ("other", pre + remote),
            "direct": ("owner", pre + remote),
        }

    # -- sanity: every routed variant reaches the owner only (strict mode) and answers --
    def sanity(self):
        self.log("sanity: strict mode on; every routed variant must reach the owner only")
        tg = self.targets()
        k, b = self.pool[0]
        want = f"{k}|name_{k}|{(7 * k) % 1000}"
        self.emu.cli("strict", "on")
        try:
            for name, (where, text, *mode) in self.select_scripts().items():
                if name in ("forward", "pg_fdw_coord"):
                    continue  # forwarding is refused in strict mode by definition
                path = self.pgb.script(f"sanity_select_{name}", text)
                self.pgb.run(tg[where], path, transactions=50, clients=2,
                             mode=(mode or ["prepared"])[0])
            for i, (name, (where, text, *_)) in enumerate(self.insert_scripts().items()):
                if name == "forward":
                    continue
                path = self.pgb.script(f"sanity_insert_{name}", text)
                self.pgb.run(tg[where], path, transactions=20, clients=2,
                             defines=["n=0", f"base={(90 + i) * 10 ** 11}"])
            got = [self.node.psql(f"SELECT id, name, v FROM pr_users WHERE id = {k}"),
                   self.node.psql(f"SELECT id, name, v FROM fdw_users_owner WHERE id = {k}"),
                   self.node.psql(f"SELECT * FROM px_get({k}, {b})"),
                   psql_at(emu_conninfo(self.owner_port),
                           f"SELECT id, name, v FROM users WHERE id = {k} AND bucket_id = {b}")]
            if any(g != want for g in got):
                raise BenchError(f"sanity: key {k}: expected {want}, got {got}")
        finally:
            self.emu.cli("strict", "off")
        got = psql_at(emu_conninfo(self.other_port),
                      f"SELECT id, name, v FROM users WHERE id = {k}")
        if got != want or self.node.psql(f"SELECT id, name, v FROM fdw_users_via WHERE id = {k}") != want:
            raise BenchError(f"sanity: forwarding: expected {want}, got {got}")
        n = psql_at(emu_conninfo(self.owner_private), "SELECT count(*) FROM _picoemu_local.events")
        want = sum(1 for name in self.insert_scripts() if name != "forward") * 2 * 20
        if int(n) != want:
            raise BenchError(f"sanity: {n} events stored at the owner, expected {want}")
        self.truncate_events()
        # The scan variants must all see every row exactly once.
        expected = f"{self.args.rows}|{sum(range(1, self.args.rows + 1))}"
        for table in ("pr_users_c", "pr_users_m", "fdw_users_p", "fdw_users_p10k",
                      "fdw_users_coord"):
            got = self.node.psql(f"SELECT count(*), sum(id) FROM {table}")
            if got != expected:
                raise BenchError(f"sanity: scan of {table}: {got}, expected {expected}")
        plan = self.node.psql("EXPLAIN (COSTS OFF) SELECT count(*), sum(v), max(name) "
                              "FROM fdw_users_p")
        if "Async Foreign Scan" not in plan:
            raise BenchError("sanity: postgres_fdw partitions are not scanned asynchronously:\n"
                             + plan)
        for table in ("fdw_users_p", "fdw_users_coord"):
            plan = self.node.psql("EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*), sum(v), "
                                  f"max(name) FROM {table}")
            if "count(*)" in "".join(x for x in plan.splitlines() if "Remote SQL" in x):
                raise BenchError(f"sanity: the aggregate over {table} was pushed down:\n{plan}")
        self.scan_route = {}
        for table in ("pr_users_c", "pr_users_m"):
            plan = self.node.psql("EXPLAIN (VERBOSE, COSTS OFF) SELECT count(*), sum(v), "
                                  f"max(name) FROM {table}")
            if "count(*)" in "".join(x for x in plan.splitlines() if "Remote SQL" in x):
                raise BenchError(f"sanity: the aggregate over {table} was pushed down:\n{plan}")
            self.scan_route[table] = " ".join(x.strip() for x in plan.splitlines()
                                              if x.strip().startswith("Routing"))
        self.log("sanity: ok")

    def front_statements(self):
        """Each kind of statement picoroute sends in the timed runs, once or a few times: the
        point SELECT and INSERT through pgbench (-M prepared, as timed) and the scan."""
        tg = self.targets()
        for kind, scripts in (("select", self.select_scripts()), ("insert", self.insert_scripts())):
            path = self.pgb.script(f"front_{kind}", scripts["picoroute"][1])
            self.pgb.run(tg[scripts["picoroute"][0]], path, transactions=5, clients=1,
                         defines=["n=0", f"base={99 * 10 ** 11}"])
        expected = f"{self.args.rows}|{sum(range(1, self.args.rows + 1))}"
        for table in ("pr_users_c", "pr_users_m"):
            got = self.node.psql(f"SELECT count(*), sum(id) FROM {table}")
            if got != expected:
                raise BenchError(f"front pass: scan of {table}: {got}, expected {expected}")
        self.truncate_events()

    def truncate_events(self):
        for port in self.private.values():
            psql_at(emu_conninfo(port), "TRUNCATE _picoemu_local.events")

    # -- point statements --
    def point(self, kind, scripts, runs, seconds=None, transactions=None, clients=None):
        """Interleaved pgbench runs of every variant; each sample: tps, latency, transactions and,
        for a variant served by the node, the node backends' CPU per transaction (node_cpu)."""
        tg = self.targets()
        paths = {n: self.pgb.script(f"{kind}_{n}", v[1]) for n, v in scripts.items()}
        modes = {n: (v[2] if len(v) > 2 else "prepared") for n, v in scripts.items()}
        names = list(scripts)
        samples = {n: [] for n in names}
        base = 10 ** 9
        for r in range(-1, runs):  # run -1: warm-up, discarded
            order = names[r % len(names):] + names[:r % len(names)] if r >= 0 else names
            for n in order:
                defines = []
                if kind == "insert":
                    base += 10 ** 9
                    defines = ["n=0", f"base={base}"]
                warm = r < 0
                sec = (max(1, (seconds or 2) // 4) if warm else seconds) if seconds else None
                tx = ((transactions // 4) if warm else transactions) if transactions else None
                on_node = scripts[n][0] == "node"
                res = self.timed_run(tg[scripts[n][0]], paths[n], sec, tx, defines, clients,
                                     modes[n], on_node and not warm)
                if not warm:
                    samples[n].append(res)
                if kind == "insert":
                    self.truncate_events()
            if r >= 0:
                self.log(f"{kind}{' (1 client)' if clients == 1 else ''} run {r + 1}/{runs}: "
                         + ", ".join(f"{n} {samples[n][-1]['tps']:.0f} tps"
                                     + (f" {samples[n][-1]['node_cpu']:.0f} us"
                                        if "node_cpu" in samples[n][-1] else "")
                                     for n in names))
        return samples

    def timed_run(self, target, path, seconds, transactions, defines, clients, mode, node_cpu):
        """One pgbench run; with node_cpu, the node backends that serve it are found in
        pg_stat_activity and their CPU (/proc/PID/schedstat, nanoseconds on a CPU, from fork to
        exit: their connection's setup included, about 1% of a run) is summed per transaction."""
        if not node_cpu:
            return self.pgb.run(target, path, seconds=seconds, transactions=transactions,
                                defines=defines, clients=clients, mode=mode)
        proc, timeout = self.pgb.run(target, path, seconds=seconds, transactions=transactions,
                                     defines=defines, clients=clients, mode=mode, background=True)
        want = clients or self.args.clients
        postmaster = self.node.postmaster_pid()
        before = set(children(postmaster))
        pids, last = set(), {}
        deadline = time.time() + timeout
        try:
            while proc.poll() is None and time.time() < deadline:
                for pid in set(children(postmaster)) - before - pids:
                    if is_client_backend(pid):
                        pids.add(pid)
                for pid in pids:
                    t = schedstat_ns(pid)
                    if t is not None:
                        last[pid] = t
                time.sleep(0.02)
            out, err = proc.communicate(timeout=max(1, deadline - time.time()))
        finally:
            if proc.poll() is None:
                proc.kill()
        if proc.returncode != 0 or "aborted" in err:
            raise BenchError(f"pgbench failed ({proc.returncode}):\n{out[-1500:]}\n{err[-1500:]}")
        res = parse_pgbench(out)
        if len(pids) < want:  # (pgbench's first connection, for its set-up, may be among them)
            raise BenchError(f"node CPU: found {len(pids)} pgbench backends, expected {want}")
        res["node_cpu"] = sum(last.values()) / 1000 / res["n"]
        return res

    # -- round trips, counted on the wire (a separate pass, never timed) --
    def count_round_trips(self, n):
        """Every point-SELECT variant once more, one client, with counting relays (bench/wire.py)
        in front of the node and of every instance: the node's map points at the instances'
        relays (push mode), postgres_fdw's and PL/Proxy's servers too; pgbench connects to the
        node's relay, or to an instance's. Per variant and hop: round trips and bytes per
        statement, from a run of n transactions minus a run of one (the connections' set-up)."""
        st = self.emu.status()
        relays = {i["name"]: wire.Relay(i["private_port"]) for i in st["instances"]}
        node_relay = wire.Relay(self.args.node_port)
        by_port = {i["private_port"]: relays[i["name"]].port for i in st["instances"]}
        scripts = self.select_scripts()
        out = {}
        self.node_plans = {}
        try:
            self.node.use_fronts(self.emu, lambda i: relays[i["name"]].port)
            self.wait_masters({p: by_port[p] for p in self.private.values()})
            self.point_peers_at(by_port)
            tg = {"node": (node_relay.port, "postgres", "postgres", None),
                  "owner": (by_port[self.owner_private], EMU_DB, EMU_USER, EMU_PASSWORD),
                  "other": (by_port[self.private[self.other]], EMU_DB, EMU_USER, EMU_PASSWORD)}
            entry = {"node": node_relay, "owner": relays[self.master_name(self.owner)],
                     "other": relays[self.master_name(self.other)]}
            every = list(relays.items()) + [("node", node_relay)]
            for name, (where, text, *_) in scripts.items():
                sql = text.strip().splitlines()[-1].replace(":k", "$1").replace(":b", "$2")
                port, db, user, password = tg[where]
                c = pgwire.Conn(port, user, password or "", dbname=db, application_name="count")
                try:
                    c.send(pgwire.parse(sql, name="s") + pgwire.sync())
                    c.until_ready()

                    def run(count):
                        for i in range(count):
                            k, b = self.pool[i % len(self.pool)]
                            c.send(pgwire.bind([k, b] if "$2" in sql else [k], stmt="s")
                                   + pgwire.execute() + pgwire.sync())
                            answers = c.until_ready()
                            if pgwire.errors(answers) or len(pgwire.rows(answers)) != 1:
                                raise BenchError(f"counting pass, {name}: {answers}")
                    run(10)  # warm-up: remote statements prepared, the node's plan generic
                    if where == "node":
                        plans = c.query("SELECT generic_plans || '/' || custom_plans FROM "
                                        "pg_prepared_statements WHERE name = 's'")
                        self.node_plans[name] = pgwire.rows(plans)[0][0]
                    time.sleep(0.2)
                    before = {k: r.snapshot() for k, r in every}
                    run(n)
                    time.sleep(0.2)  # the last answers pass the relays
                    delta = {k: r.snapshot().minus(before[k]) for k, r in every}
                finally:
                    c.close()
                first = entry[where]
                per = {}
                for hop in ("client", "node"):
                    keys = [k for k, r in every if (r is first) == (hop == "client")]
                    per[hop] = {"rt": sum(delta[k].round_trips for k in keys) / n,
                                "up": sum(delta[k].bytes_up for k in keys) / n,
                                "down": sum(delta[k].bytes_down for k in keys) / n,
                                "rows": sum(delta[k].rows for k in keys) / n,
                                "parses": sum(delta[k].messages.get("1", 0) for k in keys) / n}
                out[name] = per
                self.log(f"round trips of {name}: client {per['client']['rt']:.2f}, "
                         f"node/instances {per['node']['rt']:.2f} "
                         f"(rows {per['client']['rows']:.2f} / {per['node']['rows']:.2f})")
        finally:
            self.point_peers_at({})
            self.node.use_catalog(self.emu)
            for r in list(relays.values()) + [node_relay]:
                r.stop()
        return out

    def master_name(self, rs):
        return next(r["master"] for r in self.emu.status()["replicasets"] if r["name"] == rs)

    def wait_masters(self, port_map):
        """Waits (at most 20 s) until the node's map gives each master at port_map[its port]."""
        want = {(t, s): f"{HOST}:{port_map[self.private[rs]]}"
                for rs, rngs in self.ranges.items() for (s, _) in rngs for t in ("default",)}
        for _ in range(100):
            got = {k: self.node.psql(f"SELECT picoroute_master('{k[0]}', {k[1]})") for k in want}
            if got == want:
                return
            time.sleep(0.2)
        raise BenchError(f"the node's map did not take the relays' addresses: {got}, expected {want}")

    def point_peers_at(self, by_port):
        """postgres_fdw's and PL/Proxy's servers at by_port[private port] (the relays), or back at
        the private ports when by_port is empty."""
        sql = []
        for i, rs in enumerate(self.rs_names):
            port = by_port.get(self.private[rs], self.private[rs])
            sql.append(f"ALTER SERVER fdw_{rs} OPTIONS (SET port '{port}');")
            sql.append(f"ALTER SERVER pxc OPTIONS (SET p{i} '{HOST_KV(port)}');")
        self.node.psql("\n".join(sql))

    # -- scans --
    @staticmethod
    def timed_runs(dsn, sql, reps, what, discard=False):
        """The median psql \\timing of `sql` run reps + 1 times in one session; the first run,
        which opens the connections, is left out. discard: the rows go to /dev/null."""
        script = ("\\o /dev/null\n" if discard else "") + "\\timing on\n" + \
            "\n".join([sql] * (reps + 1)) + "\n"
        out = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d", dsn],
                             input=script, capture_output=True, text=True, timeout=300)
        if out.returncode != 0:
            raise BenchError(f"{what} failed: {out.stderr[-1500:]}")
        times = [float(x) for x in re.findall(r"^Time: ([0-9.]+) ms", out.stdout, re.M)]
        if len(times) != reps + 1:
            raise BenchError(f"{what}: cannot parse timings:\n{out.stdout[-1500:]}")
        return statistics.median(times[1:])

    def scan_node(self, table, reps):
        return self.timed_runs(self.node.dsn(), f"SELECT count(*), sum(v), max(name) FROM {table};",
                               reps, f"scan of {table}")

    def scan_coordinator(self, reps):
        """The coordinator of pg_fdw_coord alone: its view copied to psql, which discards it."""
        return self.timed_runs(emu_conninfo(self.private[self.other]),
                               "COPY (SELECT name, v FROM users) TO STDOUT;", reps,
                               "coordinator scan", discard=True)

    def scan_direct(self, reps):
        """One psql per master, started and connected first, then given the query at the same
        moment; the time is from that moment to the last end marker."""
        sql = "SELECT id, name, v FROM _picoemu_local.users;"
        procs = []
        try:
            for port in self.private.values():
                procs.append(subprocess.Popen(
                    ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-d",
                     emu_conninfo(port)], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE, text=True, bufsize=1))

            def send(text):
                for p in procs:
                    p.stdin.write(text)
                    p.stdin.flush()

            def wait_marker(marker, deadline):
                for p in procs:
                    while True:
                        if time.time() > deadline:
                            raise BenchError("direct scan: timeout")
                        line = p.stderr.readline()
                        if not line:
                            raise BenchError("direct scan: psql ended early")
                        if line.strip() == marker:
                            break
                        if "ERROR" in line:
                            raise BenchError("direct scan: " + line)

            send("\\o /dev/null\n" + sql + "\n\\warn READY\n")  # connect and warm up
            wait_marker("READY", time.time() + 120)
            times = []
            for i in range(reps):
                t0 = time.perf_counter()
                send(f"{sql}\n\\warn DONE{i}\n")
                wait_marker(f"DONE{i}", time.time() + 120)
                times.append((time.perf_counter() - t0) * 1000)
            send("\\q\n")
            for p in procs:
                p.wait(timeout=60)
            return statistics.median(times)
        finally:
            for p in procs:
                if p.poll() is None:
                    p.kill()
                    p.wait()

    def scans(self, runs, reps):
        tables = {"picoroute": "pr_users_c", "picoroute_masters": "pr_users_m",
                  "pg_fdw": "fdw_users_p",
                  "pg_fdw_10k": "fdw_users_p10k", "pg_fdw_coord": "fdw_users_coord"}
        samples = {n: [] for n in SCAN_VARIANTS}
        for r in range(-1, runs):
            order = SCAN_VARIANTS if r < 0 else \
                SCAN_VARIANTS[r % len(SCAN_VARIANTS):] + SCAN_VARIANTS[:r % len(SCAN_VARIANTS)]
            for n in order:
                if n == "direct":
                    ms = self.scan_direct(reps)
                elif n == "coordinator":
                    ms = self.scan_coordinator(reps)
                else:
                    ms = self.scan_node(tables[n], reps)
                if r >= 0:
                    samples[n].append(ms)
            if r >= 0:
                self.log(f"scan run {r + 1}/{runs}: " + ", ".join(
                    f"{n} {samples[n][-1]:.0f} ms" for n in SCAN_VARIANTS))
        return samples

    # -- profile --
    def profile(self, seconds):
        """perf record -g on every node backend serving pgbench during a picoroute point-SELECT
        load, plus a system-wide CPU split by process during the same load."""
        if shutil.which("perf") is None:
            return None
        tg = self.targets()
        path = os.path.join(self.workdir, "select_picoroute.sql")
        proc, timeout = self.pgb.run(tg[self.select_scripts()["picoroute"][0]], path,
                                     seconds=seconds + 4, background=True)
        pids = []
        try:
            for _ in range(50):
                time.sleep(0.2)
                out = self.node.psql("SELECT string_agg(pid::text, ',') FROM pg_stat_activity "
                                     "WHERE application_name = 'pgbench'")
                pids = [p for p in out.split(",") if p]
                if len(pids) >= self.args.clients:
                    break
            time.sleep(1)
            early_roles = self.process_roles()
            data = os.path.join(self.workdir, "perf.data")
            rec = run(["perf", "record", "-q", "-g", "-F", "999", "-o", data, "-p",
                       ",".join(pids), "--", "sleep", str(seconds // 2)],
                      seconds + 60, check=False)
            sysdata = os.path.join(self.workdir, "perf-sys.data")
            run(["perf", "record", "-q", "-a", "-F", "499", "-o", sysdata, "--", "sleep",
                 str(max(1, seconds // 2 - 1))], seconds + 60, check=False)
            roles = {**early_roles, **self.process_roles()}
        finally:
            out, err = proc.communicate(timeout=timeout)
        if rec.returncode != 0:
            return {"error": rec.stderr[-500:]}
        flat = run(["perf", "report", "-i", data, "--no-children", "--stdio", "--sort",
                    "dso,symbol", "-g", "none", "--percent-limit", "0.4"], 300, check=False).stdout
        dsos = run(["perf", "report", "-i", data, "--no-children", "--stdio", "--sort", "dso",
                    "-g", "none", "--percent-limit", "0.2"], 300, check=False).stdout
        split = run(["perf", "report", "-i", sysdata, "--stdio", "--sort", "pid",
                     "--percent-limit", "0.3"], 300, check=False).stdout
        return {"pids": pids, "flat": flat, "dsos": dsos, "split": split, "roles": roles,
                "pgbench": parse_pgbench(out)}

    CPU_VARIANTS = ["direct", "picoroute", "plproxy", "pg_fdw", "forward"]

    def cpu_per_statement(self, seconds):
        """For each variant: a point-SELECT load at the bench's client count, `perf record -a`
        during its middle, and the CPU time per statement of each kind of process (its share of
        all samples x cores / tps), as bench/peers_notes.md computes it."""
        if shutil.which("perf") is None:
            return None
        tg = self.targets()
        scripts = self.select_scripts()
        out = {}
        for n in self.CPU_VARIANTS:
            path = self.pgb.script(f"cpu_{n}", scripts[n][1])
            proc, timeout = self.pgb.run(tg[scripts[n][0]], path, seconds=seconds,
                                         background=True)
            try:
                time.sleep(2)
                # Roles are read before the sampling too: pgbench may have ended, and its
                # backends with it, by the time perf has written its data.
                roles = self.process_roles()
                data = os.path.join(self.workdir, f"perf-cpu-{n}.data")
                run(["perf", "record", "-q", "-a", "-F", "499", "-o", data, "--", "sleep",
                     str(max(2, seconds - 4))], seconds + 60, check=False)
                roles.update(self.process_roles())
            finally:
                pout, _ = proc.communicate(timeout=timeout)
            tps = parse_pgbench(pout)["tps"]
            split = run(["perf", "report", "-i", data, "--stdio", "--sort", "pid",
                         "--percent-limit", "0"], 300, check=False).stdout
            us = {}
            for line in split.splitlines():
                m = re.match(r"\s*([0-9.]+)%\s+(\d+):(\S+)", line)
                if not m:
                    continue
                pct, pid, comm = float(m.group(1)), int(m.group(2)), m.group(3)
                role = roles.get(pid) or ("pgbench" if comm.startswith("pgbench") else
                                          "front (python)" if comm.startswith("python") else
                                          "idle" if pid == 0 else "other")
                role = "instance backends" if role.startswith("emulator") else (
                    "node backends" if role == "node" else role)
                us[role] = us.get(role, 0.0) + pct / 100 * os.cpu_count() * 1e6 / tps
            out[n] = {"tps": tps, "us": us}
        return out

    def report_cpu(self, cpu):
        say = self.say
        say("### CPU per point SELECT, by process (system-wide `perf record -a`)")
        say()
        say(f"Each variant under the same pgbench load as above ({self.args.clients} clients), "
            f"sampled for {max(2, self.args.seconds - 4)} s in the middle of a "
            f"{self.args.seconds} s run; CPU time per statement = share of all samples x "
            f"{os.cpu_count()} cores / tps of that run (one sample per variant: about +-10%). "
            f"`front (python)` is the emulator's Picodata fronts: no variant passes through "
            f"them, so it should be about 0.")
        say()
        roles = ["instance backends", "node backends", "front (python)", "pgbench", "other",
                 "idle"]
        say("| us per statement | " + " | ".join(f"{n} ({cpu[n]['tps']:.0f} tps)"
                                                for n in cpu) + " |")
        say("|---|" + "---|" * len(cpu))
        for role in roles:
            say(f"| {role} | " + " | ".join(
                f"{cpu[n]['us'].get(role, 0.0):.0f}" for n in cpu) + " |")
        say()
        if "direct" in cpu and "picoroute" in cpu:
            d = cpu["direct"]["us"].get("instance backends", 0.0)
            p = cpu["picoroute"]["us"].get("instance backends", 0.0)
            say(f"Instance-side CPU per statement: picoroute {p:.0f} us, direct {d:.0f} us "
                f"({p / d if d else 0:.2f}x).")
            say()

    def process_roles(self):
        """pid -> role, for the processes that run the load (by parent postmaster)."""
        postmasters = {}
        with open(os.path.join(self.node.data, "postmaster.pid")) as f:
            postmasters[int(f.readline())] = "node"
        st = self.emu.status()
        for inst in st["instances"]:
            pidfile = os.path.join(inst["datadir"], "postmaster.pid")
            try:
                with open(pidfile) as f:
                    postmasters[int(f.readline())] = "emulator " + inst["name"]
            except OSError:
                pass
        roles = {}
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                ppid = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid in postmasters:
                roles[int(pid)] = postmasters[ppid]
        return roles

    # -- report --
    def report(self, sel, sel1, ins, scan, prof, rts):
        a = self.args
        say = self.say
        med = lambda xs: statistics.median(xs)  # noqa: E731

        def stat(samples, key):
            xs = [s[key] for s in samples]
            return med(xs), min(xs), max(xs)

        say("## picoroute against its peers (bench/peers_bench.py)")
        say()
        say(f"{os.cpu_count()} cores; one emulated cluster (2 replicasets x 2 instances, 3000 "
            f"buckets, PostgreSQL servers on 127.0.0.1), {a.rows} rows in `users`; pgbench "
            f"`-M prepared -c {a.clients} -j {a.threads}` for every point variant; every figure "
            f"is the median of {a.runs} runs (min-max), variants interleaved run by run in a "
            f"rotating order. Keys: {len(self.pool)} keys drawn at random (uniformly, by pgbench) "
            f"from the rows of replicaset `{self.owner}`, the same keys for every variant.")
        say()
        say("Everything runs on the same machine: the pgbench client, the picoroute node and the "
            "emulated instances share its cores, so a variant that uses more processes per "
            "statement also pays for their CPU, and a saved hop shows as CPU, not as time. Two "
            "measures do not depend on that: the node's CPU per statement, and the round trips "
            "counted on the wire, from which the latency at a datacenter's round trip is modelled.")
        say()
        say("What is timed: transactions per second of whole pgbench runs (point statements) and "
            "the time of whole scans, as seen by the client. The path of every variant: "
            "pgbench -> the node (picoroute, pg_fdw, pg_fdw_coord, plproxy) or pgbench directly "
            "(forward, direct) -> the instances' private PostgreSQL ports, with no test machinery "
            "in between (the emulator's Picodata fronts are bypassed by all alike; see "
            "Configuration). The same remote statement for every point SELECT: "
            "`SELECT id, name, v FROM users WHERE id = $1` (the key bound, no `bucket_id`), which "
            "the instance routes by its key, so the instance's work is the same for every variant "
            "and the ratios show the node and the hops.")
        say()
        for title, samples, names, how in (
                ("Point SELECT by key", sel, SELECT_VARIANTS,
                 f"-c {a.clients} -j {a.threads} -T {a.seconds}"),
                ("Point SELECT by key, one client (latency-bound)", sel1,
                 SELECT_VARIANTS, f"-c 1 -j 1 -T {a.seconds1}"),
                ("Point INSERT (a fresh primary key per transaction)", ins, INSERT_VARIANTS,
                 f"-c {a.clients} -j {a.threads} -t {a.insert_tx}")):
            if samples is None:  # --only scan
                continue
            say(f"### {title} (pgbench {how})")
            say()
            say("| variant | tps median | min | max | latency ms median | min | max "
                "| node CPU us/statement median | min | max |")
            say("|---|---|---|---|---|---|---|---|---|---|")
            for n in names:
                t, tmin, tmax = stat(samples[n], "tps")
                lt, lmin, lmax = stat(samples[n], "lat")
                cpu = ("| %.1f | %.1f | %.1f" % stat(samples[n], "node_cpu")
                       if "node_cpu" in samples[n][0] else "| - | - | -")
                say(f"| {n} | {t:.0f} | {tmin:.0f} | {tmax:.0f} | {lt:.3f} | {lmin:.3f} | "
                    f"{lmax:.3f} {cpu} |")
            say()
            tps = {n: med([s["tps"] for s in samples[n]]) for n in names}

            def cpu_ratio(x, y):  # within each run, then the median (min-max)
                rs = [p["node_cpu"] / q["node_cpu"] for p, q in zip(samples[x], samples[y])]
                return med(rs), min(rs), max(rs)
            say("| ratio | value (min-max over runs) | target |")
            say("|---|---|---|")
            p = tps["picoroute"]
            main = title == "Point SELECT by key"
            what = "point INSERT" if "INSERT" in title else "point SELECT"
            rows = [(f"{what} tps, picoroute / postgres_fdw to the owner",
                     (p / tps["pg_fdw"], None), ">= 1.3"),
                    (f"{what} tps, picoroute / a forwarding instance",
                     (p / tps["forward"], None), ">= 1.2"),
                    (f"node CPU per {what}, picoroute / PL/Proxy",
                     cpu_ratio("picoroute", "plproxy"), "<= 1.0"),
                    (f"node CPU per {what}, picoroute / postgres_fdw",
                     cpu_ratio("picoroute", "pg_fdw"), "<= 0.5"),
                    ("tps, picoroute / PL/Proxy", (p / tps["plproxy"], None), None)]
            if "pg_fdw_coord" in tps:
                rows.append(("tps, picoroute / postgres_fdw through a coordinator",
                             (p / tps["pg_fdw_coord"], None), None))
            rows.append(("tps, picoroute / direct (the floor)", (p / tps["direct"], None), None))
            for label, (value, *rng), goal in rows:
                shown = f"{value:.2f}" + (f" ({rng[0]:.2f}-{rng[1]:.2f})" if rng and rng[0] else "")
                if goal and main:
                    ok = value >= float(goal[3:]) if goal.startswith(">=") else \
                        value <= float(goal[3:])
                    verdict = "met" if ok else "**missed**"
                    self.verdicts.append((label, value, goal, verdict))
                    say(f"| {label} | {shown} | {goal}: {verdict} |")
                else:
                    say(f"| {label} | {shown} | (information) |")
            say()
        if rts:
            self.report_round_trips(rts, sel1)
        self.report_scans(scan, prof)

    def report_round_trips(self, rts, sel1):
        say = self.say
        med = statistics.median
        say("### Round trips per point SELECT, counted on the wire, and the latency they model")
        say()
        say("A separate counting pass after the timed runs (never timed): one client per "
            "variant, counting TCP relays (`bench/wire.py`) in front of the node and of every "
            "instance (the node's map, postgres_fdw's and PL/Proxy's servers pointed at them); "
            "a round trip is counted each time a client sends after its server spoke last. Per "
            f"statement: {self.args.count_tx} executions of the statement, prepared (as pgbench `-M "
            "prepared` runs it), in a session that ran it 10 times before (its connections open, "
            "picoroute's remote statement prepared, the node's plan generic). `client` is pgbench's hop (to the node, or to the instance), "
            "`node` the node's hops to the instances. `in the cluster` is the hop a coordinator "
            "makes to the owner for a statement it does not own: on Picodata one call to the "
            "owner's replicaset per statement (`one_step_dispatch` sends it with one "
            "`rs:callrw('.proc_sql_execute', ...)` per replicaset, the storage reference taken by "
            "that same call: `src/sql/dispatch.lua:255` and `:304` at 26.1.6); the "
            "emulator's coordinator makes it through postgres_fdw, whose round trips are not "
            "Picodata's and are not counted.")
        say()
        rtt = self.args.rtt
        say(f"Model (not a measurement): latency at a datacenter round trip of {rtt} ms = the "
            "measured one-client latency (loopback, above: 1000 / tps) + round trips x "
            f"{rtt} ms; every hop is taken to cross machines (the application to the node "
            "included).")
        say()
        say("| variant | client | node | in the cluster | total | bytes node->instances / "
            "instances->node per statement | Parse per statement (node hop) | node plans "
            "generic/custom after 10 | measured latency ms (1 client) | "
            f"modelled latency ms at RTT {rtt} ms |")
        say("|---|---|---|---|---|---|---|---|---|---|")
        model = {}
        for n in SELECT_VARIANTS:
            r = rts[n]
            cluster = 1 if n in ("forward", "pg_fdw_coord") else 0
            total = r["client"]["rt"] + r["node"]["rt"] + cluster
            lat = 1000.0 / med([x["tps"] for x in sel1[n]])  # one client: ms per statement
            model[n] = lat + total * rtt
            say(f"| {n} | {r['client']['rt']:.2f} | {r['node']['rt']:.2f} | {cluster} | "
                f"{total:.2f} | {r['node']['up']:.0f} / {r['node']['down']:.0f} | "
                f"{r['node']['parses']:.2f} | {self.node_plans.get(n, '-')} | {lat:.3f} | "
                f"{model[n]:.2f} |")
        say()
        ratio = model["pg_fdw_coord"] / model["picoroute"]
        verdict = "met" if ratio >= 3 else "**missed**"
        self.verdicts.append(("modelled latency at RTT 0.5 ms, postgres_fdw through a "
                              "coordinator / picoroute", ratio, ">= 3", verdict))
        say("| ratio of modelled latencies | value | target |")
        say("|---|---|---|")
        say(f"| postgres_fdw through a coordinator / picoroute | {ratio:.2f} | >= 3: {verdict} |")
        for n in ("pg_fdw", "plproxy", "forward", "direct"):
            say(f"| {n} / picoroute | {model[n] / model['picoroute']:.2f} | (information) |")
        say()

    def report_scans(self, scan, prof):
        a = self.args
        say = self.say
        med = statistics.median
        say(f"### Scan of all {a.rows} rows (`SELECT count(*), sum(v), max(name)` on the node; "
            f"median of {a.scan_reps} executions per run after one warm-up)")
        say()
        say("| variant | ms median | min | max |")
        say("|---|---|---|---|")
        for n in SCAN_VARIANTS:
            say(f"| {n} | {med(scan[n]):.1f} | {min(scan[n]):.1f} | {max(scan[n]):.1f} |")
        say()
        best_fdw = min(med(scan["pg_fdw"]), med(scan["pg_fdw_10k"]))
        # picoroute's best configuration: the faster of its two scatters (server option scatter)
        best_pr = min(("picoroute", "picoroute_masters"), key=lambda n: med(scan[n]))
        best_name = {"picoroute": "scatter 'coordinator'",
                     "picoroute_masters": "scatter 'masters'"}[best_pr]
        r = best_fdw / med(scan[best_pr])
        verdict = "met" if r >= 1.0 else "**missed**"
        self.verdicts.append((f"scan: postgres_fdw async (best fetch_size) / picoroute (best "
                              f"scatter: {best_name})", r, ">= 1", verdict))
        say("| ratio (time, medians) | value | target |")
        say("|---|---|---|")
        say(f"| postgres_fdw async, best fetch_size / picoroute, best scatter ({best_name}, "
            f"`{best_pr}`) | {r:.2f} | >= 1 (picoroute at least as fast): {verdict} |")
        say(f"| postgres_fdw async, best fetch_size / picoroute (scatter 'coordinator') | "
            f"{best_fdw / med(scan['picoroute']):.2f} | |")
        say(f"| postgres_fdw async, best fetch_size / picoroute (scatter 'masters') | "
            f"{best_fdw / med(scan['picoroute_masters']):.2f} | |")
        say(f"| postgres_fdw async, default fetch_size / picoroute | "
            f"{med(scan['pg_fdw']) / med(scan['picoroute']):.2f} | |")
        say(f"| postgres_fdw through one coordinator, picoroute's path (like-for-like) / "
            f"picoroute | {med(scan['pg_fdw_coord']) / med(scan['picoroute']):.2f} | |")
        say(f"| picoroute with scatter 'masters' / picoroute | "
            f"{med(scan['picoroute_masters']) / med(scan['picoroute']):.2f} | |")
        say(f"| the coordinator alone (COPY to a client that discards it) / picoroute | "
            f"{med(scan['coordinator']) / med(scan['picoroute']):.2f} | |")
        say(f"| direct parallel reads / picoroute | "
            f"{med(scan['direct']) / med(scan['picoroute']):.2f} | |")
        say()
        route = getattr(self, "scan_route", {})
        say("picoroute's scan (the default server, scatter 'coordinator') runs, as Picodata runs "
            "a statement without a key, on one coordinator that gathers the other replicaset's "
            f"rows before they reach the node (`{route.get('pr_users_c', '?')}`): `pg_fdw_coord` "
            "takes the same path, `coordinator` is that coordinator's own time to gather and "
            "send the rows without a node. `pg_fdw`/`pg_fdw_10k` read each master's storage "
            "table in parallel, which a statement through one coordinator cannot. "
            "`picoroute_masters` reads each master's own buckets, the masters at once "
            f"(`{route.get('pr_users_m', '?')}`): each statement names at most 512 buckets "
            "(`bucket_id IN (...)`, Picodata's limit of OR-of-AND chains), a master's statements "
            "run one after the other on its connection while the other master's run, and the "
            "node reads the answers in turn. Each statement reads only its buckets' rows, "
            "through the storage's index on `bucket_id` (as Picodata's storages have one, and "
            "Tarantool's planner uses it for a list of `bucket_id` equalities); on the emulator "
            "its rows lie on every page of the storage table (stored in load order), and each "
            "statement is also planned through the emulator's view, so there several "
            "statements per master cost more than one scan of the storage table. The verdict "
            "takes picoroute's faster scatter.")
        say()
        say("### Targets")
        say()
        say("| target | value | goal | verdict |")
        say("|---|---|---|---|")
        for label, value, goal, verdict in self.verdicts:
            say(f"| {label} | {value:.2f} | {goal} | {verdict} |")
        say()
        self.configuration()
        if prof:
            self.report_profile(prof)
        if getattr(self, "cpu", None):
            self.report_cpu(self.cpu)

    def configuration(self):
        o, p = self.owner, self.other
        say = self.say
        say("### Configuration of each variant")
        say()
        say(f"- Every remote connection (picoroute, postgres_fdw, PL/Proxy, pgbench) logs in to "
            f"the instances as the emulator's superuser `{EMU_USER}` (scram-sha-256). Every "
            f"variant keeps its remote connections for the whole pgbench session (picoroute: "
            f"its per-session cache; postgres_fdw: its per-session cache; PL/Proxy: "
            f"connection_lifetime 3600 s); pgbench connects once per client (no -C).")
        say("- pgbench runs with `-M prepared` everywhere; the node plans as PostgreSQL does by "
            "default (five custom plans, then a generic one when it costs no more: the table "
            "of round trips shows the counts). The same remote statement for every point "
            "SELECT: `SELECT id, name, v FROM users WHERE id = $1`, the key bound, no "
            "`bucket_id`, which the instance routes by its key (`picoemu up "
            "--private-pgproto`: on a private port a bound key is routed as through a Picodata "
            "front, every execution with its own key). picoroute (server `pico`, "
            "`execution_options` on, as on Picodata) sends Picodata's startup options "
            "(`read_preference=leader,pico_stmt_invalidation=true`, which the private ports take) "
            "and runs the statement as a named prepared statement, prepared at its second "
            "execution on each connection (one Bind/Execute/Sync per execution: the Parse count "
            "per statement in the round-trip table); postgres_fdw sends it inside a remote "
            "transaction and a cursor (`DECLARE c1 CURSOR FOR SELECT ... WHERE ((id = "
            "$1::bigint))`, FETCH, CLOSE, COMMIT; for INSERT a prepared INSERT per statement), "
            "which the instance routes by its key too; PL/Proxy sends its SELECT with the key "
            "as a parameter; `forward` and `direct` are pgbench's own prepared statements on "
            "the instance.")
        say(f"- Routing by hand for the peers: the keys all belong to `{o}`, so `pg_fdw`'s "
            f"foreign tables point at `{o}`'s master, `pg_fdw_coord`'s at `{p}`'s master "
            f"(a coordinator that forwards to `{o}`, as `forward` does), and the PL/Proxy "
            f"function runs `RUN ON px_part(b)`, where `b` is the bucket passed by the client "
            f"and `px_part` maps it to a partition with the cluster's bucket ranges, "
            f"precomputed into an SQL CASE (PL/Proxy's own hash cannot reproduce Picodata's); "
            f"its remote SELECT is by key only. picoroute alone is given only the key and "
            f"computes the bucket itself. A forwarding instance forwards through its own "
            f"postgres_fdw foreign table (fetch_size 10000): on a datacenter network its round "
            f"trips are not Picodata's, so the latency model counts Picodata's one call instead.")
        say("- Point INSERTs all go through the instance's `public.events` view and its INSTEAD "
            "OF trigger (PL/Proxy: through `public.px_insert`, an SQL function on the masters "
            "that runs the same INSERT); `events` has primary key `id` and sharding key `sk`, "
            "`sk` drawn from the key pool, `id` fresh (a per-client counter); the owner's "
            "storage is truncated after each INSERT run.")
        say("- Node CPU per statement: the CPU time (`/proc/PID/schedstat`, nanoseconds on a "
            "CPU) of the node backends that served the run, from their start to their exit "
            "(their connection's set-up included, about 1% of a run), divided by the run's "
            "transactions; the ratios are taken within each run.")
        say("- postgres_fdw: default options except `async_capable 'true'` on its servers "
            "(used by the scan; a point statement has nothing to overlap); `fetch_size` "
            "default 100 (`pg_fdw`) and 10000 (`pg_fdw_10k`, table option) for the scan; "
            "`batch_size` default 1 (one row per INSERT anyway); `use_remote_estimate` off. "
            "The scan partitions read each master's storage table `_picoemu_local.users` "
            "directly (the `public.users` view is global on every instance); `pg_fdw_coord` "
            "(fetch_size 10000) reads one master's `public.users` view, which gathers the other "
            "replicaset's part through the emulator's postgres_fdw, as picoroute's coordinator "
            "does. No aggregate is pushed down (enable_partitionwise_aggregate off, and a "
            "sanity check): every variant fetches every row.")
        say("- picoroute: `picoroute.refresh_interval` default (1 s), read_preference leader; "
            "no option tuned. The scans run on `pico_off` (`execution_options 'off'`): a keyless "
            "statement carries Picodata's `OPTION (...)` clause otherwise, which no PostgreSQL "
            "server parses (the limits are turned off in the cluster instead). `picoroute` "
            "scans through the default server (scatter 'coordinator'), `picoroute_masters` with "
            "scatter 'masters' (with 3000 buckets over two replicasets each master's bucket "
            "list is over Picodata's 512 OR-of-AND chains, so each master gets 3 statements).")
        say(f"- Paths: every variant reaches the instances' private PostgreSQL ports, with "
            f"nothing in between. The emulator advertises them (`picoemu up "
            f"--advertise-private --private-pgproto`): picoroute's map, read from the catalog, "
            f"holds them, and `forward`, `direct`, postgres_fdw and PL/Proxy are given them. "
            f"Before timing, a sanity pass ran picoroute's point SELECT and INSERT "
            f"(pgbench, 5 transactions each) and its scan through the instances' Picodata "
            f"fronts (the node's map pushed with the fronts' addresses), and the fronts "
            f"refused nothing (`picoemu audit`: {getattr(self, 'front_audit', '?')}). The "
            f"cluster settings `sql_motion_row_max` and `sql_vdbe_opcode_max` are 0 (off) for "
            f"the whole bench: picoroute's scatter scan returns and examines more rows per "
            f"master than Picodata's defaults allow.")
        say("- `direct` scan: one psql per master, connected beforehand, reading "
            "`_picoemu_local.users` unaligned to /dev/null; time from sending both queries "
            "to both end markers.")
        say("- Node: PostgreSQL 15, shared_buffers 128MB, jit off. Emulated instances: the "
            "emulator's configuration (fsync off, shared_buffers 16MB, constraint_exclusion "
            "on, plan_cache_mode force_custom_plan). Sanity checks before timing: in the "
            "emulator's strict mode (`forward=off`) every routed variant's SELECT and INSERT "
            "succeeded (so each reached the owner), the rows came back equal, and every scan "
            "returned each row once.")
        say()

    def report_profile(self, prof):
        say = self.say
        say("### Profile: the picoroute node's backends during a picoroute point-SELECT load")
        say()
        if "error" in prof:
            say(f"perf record failed: `{prof['error'].strip()}`")
            say()
            return
        say(f"`perf record -g -F 999 -p {','.join(prof['pids'])}` (the {len(prof['pids'])} "
            f"node backends serving pgbench, {self.args.seconds // 2} s) during a "
            f"{self.args.seconds + 4} s pgbench run ({prof['pgbench']['tps']:.0f} tps); "
            f"`perf report --no-children --stdio`, by shared object, then the top entries by "
            f"symbol (>= 0.4%, at most 30):")
        say()
        say("```")
        for key in ("dsos", "flat"):
            shown = 0
            for line in prof[key].splitlines():
                if line.startswith("#") or not line.strip() or shown >= 30:
                    continue
                say(re.sub(r"\s+-\s+-\s*$", "", line).rstrip())
                shown += 1
            say()
        say("```")
        say()
        # CPU split by process role, system-wide.
        shares = {}
        for line in prof["split"].splitlines():
            m = re.match(r"\s*([0-9.]+)%\s+(\d+):(\S+)", line)
            if not m:
                continue
            pct, pid, comm = float(m.group(1)), int(m.group(2)), m.group(3)
            role = prof["roles"].get(pid)
            if role is None:
                role = "pgbench" if comm.startswith("pgbench") else (
                    "idle" if pid == 0 else f"other ({comm})")
            elif role == "node":
                role = "node backends" if str(pid) in prof["pids"] else "node, other processes"
            else:
                role += " backends"
            shares[role] = shares.get(role, 0.0) + pct
        if shares:
            say("System-wide CPU samples during the same load (`perf record -a`), by process "
                "(a share of all cores' samples, idle included):")
            say()
            say("| processes | share of samples |")
            say("|---|---|")
            for role, pct in sorted(shares.items(), key=lambda kv: -kv[1]):
                say(f"| {role} | {pct:.1f}% |")
            say()

    def main(self):
        a = self.args
        self.verdicts = []
        self.setup()
        self.log("sanity pass through the Picodata fronts: picoroute's statements, audit empty")
        self.front_audit = front_pass(self.emu, self.node, self.front_statements)
        self.log(f"front pass: {self.front_audit}; the node now reads the catalog (private ports)")
        self.sanity()
        if a.only == "scan":  # the scan alone: no point runs, no round trips, no profile
            self.log(f"scan: {a.runs} runs x {len(SCAN_VARIANTS)} variants")
            self.report(None, None, None, self.scans(a.runs, a.scan_reps), None, None)
            write_verdicts(a.verdicts, self.verdicts)
            return
        self.log(f"point SELECT: {a.runs} runs x {len(SELECT_VARIANTS)} variants x {a.seconds} s")
        sel = self.point("select", self.select_scripts(), a.runs, seconds=a.seconds)
        self.log(f"point SELECT, 1 client: {a.runs} runs x {len(SELECT_VARIANTS)} variants x "
                 f"{a.seconds1} s")
        sel1 = self.point("select", self.select_scripts(), a.runs, seconds=a.seconds1,
                          clients=1)
        self.log(f"point INSERT: {a.runs} runs x {len(INSERT_VARIANTS)} variants x "
                 f"{a.insert_tx} transactions per client")
        ins = self.point("insert", self.insert_scripts(), a.runs, transactions=a.insert_tx)
        self.log(f"scan: {a.runs} runs x {len(SCAN_VARIANTS)} variants")
        scan = self.scans(a.runs, a.scan_reps)
        self.log("round trips: a counting pass through relays (not timed)")
        rts = self.count_round_trips(a.count_tx)
        prof = None
        if a.profile:
            self.log("CPU per point SELECT by process, system-wide perf, per variant")
            self.cpu = self.cpu_per_statement(a.seconds)
        self.report(sel, sel1, ins, scan, prof, rts)
        write_verdicts(a.verdicts, self.verdicts)


def write_verdicts(path, verdicts):
    """Appends (measure, value, target, verdict) rows to `path` (JSON lines), for bench/run.sh's
    verdict table."""
    if path:
        with open(path, "a") as f:
            for row in verdicts:
                f.write(json.dumps(list(row)) + "\n")


def children(pid):
    """The child processes of pid (/proc/PID/task/PID/children)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def is_client_backend(pid):
    """A backend serving a TCP client ("postgres: user db 127.0.0.1(port) ..."), not a worker."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f"{HOST}(".encode() in f.read()
    except OSError:
        return False


def schedstat_ns(pid):
    """The CPU time of a process so far in nanoseconds (/proc/PID/schedstat), None once it is gone."""
    try:
        with open(f"/proc/{pid}/schedstat") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def HOST_KV(port):
    return f"host={HOST} port={port} dbname={EMU_DB}"


def run_main(bench, out):
    """Runs bench.main() (SIGTERM and SIGHUP end it as an exit, so that its servers are stopped),
    cleans up whatever happens, then writes the report to `out` when given. Shared by the
    benchmarks that import this module."""
    def on_signal(signum, frame):
        raise SystemExit(f"interrupted by signal {signum}")

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    start = time.time()
    try:
        bench.main()
    finally:
        bench.cleanup()
    bench.log(f"done in {time.time() - start:.0f} s")
    if out:
        with open(out, "w") as f:
            f.write("\n".join(bench.lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true",
                    help="a short smoke run (well under 2 minutes); figures are not meaningful")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=8,
                    help="pgbench -T of a point SELECT run")
    ap.add_argument("--seconds1", type=int, default=5,
                    help="pgbench -T of a one-client point SELECT run")
    ap.add_argument("--insert-tx", type=int, default=2500,
                    help="pgbench -t (per client) of a point INSERT run")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--pool", type=int, default=4096, help="keys in the pgbench key pool")
    ap.add_argument("--scan-reps", type=int, default=3)
    ap.add_argument("--base-port", type=int, default=None,
                    help="emulator base port (below 32768, outside the ephemeral range; default: a "
                    "free range)")
    ap.add_argument("--node-port", type=int, default=None, help="default: base port + 100")
    ap.add_argument("--no-profile", dest="profile", action="store_false")
    ap.add_argument("--count-tx", type=int, default=400,
                    help="transactions of a variant's counting pass (round trips)")
    ap.add_argument("--rtt", type=float, default=0.5, help="modelled round trip, ms")
    ap.add_argument("--verdicts", default=None, help="append the verdict rows here (JSON lines)")
    ap.add_argument("--out", default=None, help="also write the report (markdown) here")
    ap.add_argument("--only", choices=["scan"], default=None,
                    help="run only this part (the setup and sanity pass still run)")
    args = ap.parse_args()
    args.base_port, args.node_port = free_ports(args.base_port, args.node_port)
    if args.quick:
        args.runs, args.seconds, args.seconds1, args.insert_tx, args.rows = 1, 2, 1, 100, 20000
        args.pool, args.scan_reps, args.profile, args.count_tx = 512, 1, False, 50

    run_main(Bench(args), args.out)

if __name__ == "__main__":
    sys.exit(main())
