"""The picoemu command: its arguments (one sub-parser per command, bound to its handler in commands.py)
and main(), which runs a command that changes something under the state directory's lock."""

import argparse
import os
import re
import sys
from typing import Callable, Dict, List, Optional

from ..cluster import Cluster
from ..errors import EmuError
from ..state import ADMIN_USER, CLIENT_USER, DEFAULT_VERSION, VERSIONS, TierSpec
from . import commands
from .status import SETTINGS

DEFAULT_DIR = "/tmp/picoemu"
DEFAULT_BASE_PORT = 55400
Handler = Callable[[Cluster, argparse.Namespace], Optional[int]]


def parse_tier(text: str) -> TierSpec:
    m = re.fullmatch(r"([a-z_][a-z0-9_]*):(\d+):(\d+):(\d+)", text)
    if not m:
        raise argparse.ArgumentTypeError("expected NAME:REPLICASETS:REPLICATION_FACTOR:BUCKET_COUNT, got %r" % text)
    name, r, f, n = m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))
    if f < 1:
        raise argparse.ArgumentTypeError("replication factor must be at least 1")
    return name, r, f, n


def parse_weights(text: str) -> Dict[str, float]:
    out: Dict[str, float] = {}
    for part in text.split(","):
        name, sep, w = part.partition("=")
        try:
            out[name.strip()] = float(w)
        except ValueError:
            sep = ""
        if not sep or out[name.strip()] < 0:
            raise argparse.ArgumentTypeError("expected rs=weight,rs=weight with weights >= 0, got %r" % text)
    return out


def build_parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--dir", default=argparse.SUPPRESS,
                        help="state directory (env PICOEMU_DIR, default %s)" % DEFAULT_DIR)
    common.add_argument("--base-port", type=int, default=argparse.SUPPRESS,
                        help="first port (env PICOEMU_BASE_PORT, default %d)" % DEFAULT_BASE_PORT)
    p = argparse.ArgumentParser(prog="picoemu", parents=[common],
                                description="Local Picodata cluster emulator (PostgreSQL 15 servers on 127.0.0.1)")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND")
    sub.required = True

    def cmd(name: str, func: Handler, help_: str, locked: bool = True) -> argparse.ArgumentParser:
        """A sub-command run by func(cluster, args); locked: under the state directory's lock."""
        c = sub.add_parser(name, parents=[common], help=help_, description=help_)
        c.set_defaults(func=func, locked=locked)
        return c

    c = cmd("up", commands.cmd_up, "start a cluster (harmless when one runs)")
    c.add_argument("--replicasets", type=int, default=2)
    c.add_argument("--replication-factor", type=int, default=2)
    c.add_argument("--bucket-count", type=int, default=3000)
    c.add_argument("--tier", type=parse_tier, action="append", metavar="NAME:R:F:N",
                   help="a tier (repeatable; replaces the default tier; the first is the default tier)")
    c.add_argument("--advertise-wildcard", action="store_true",
                   help="store pgproto addresses as 0.0.0.0:port (clients must use the iproto host)")
    c.add_argument("--advertise-private", action="store_true",
                   help="advertise each instance's private PostgreSQL port as its pgproto address "
                        "(clients bypass the fronts, which still run on their own ports)")
    c.add_argument("--private-pgproto", action="store_true",
                   help="the private ports take Picodata startup options and route bound keys, as the "
                        "fronts pass them on (for timing; private_pgproto.c)")
    c.add_argument("--auth", choices=["scram-sha-256", "md5"], default="scram-sha-256")
    c.add_argument("--picodata", choices=list(VERSIONS), default=None,
                   help="emulated Picodata build, a shipped release (env PICOEMU_PICODATA, default %s, the "
                        "newest)" % DEFAULT_VERSION)
    c.add_argument("--wrong-hash", choices=["double"], default=None,
                   help="a test device: the cluster hashes double key values by the other release line's "
                        "rule, 25.5's or 26.1's (where rows are stored and in EXPLAIN alike)")
    cmd("down", commands.cmd_down, "stop every server and remove the state directory (harmless when nothing runs)")
    c = cmd("status", commands.cmd_status, "print the cluster", locked=False)
    c.add_argument("--json", action="store_true")
    c = cmd("versions", commands.cmd_versions, "the emulated Picodata builds and their capabilities", locked=False)
    c.add_argument("--json", action="store_true")
    c = cmd("conninfo", commands.cmd_conninfo, "print a libpq connection string", locked=False)
    c.add_argument("--user", default=CLIENT_USER)
    c.add_argument("--instance")
    c = cmd("stop", commands.cmd_stop, "stop an instance (real process stop; catalog state Offline)")
    c.add_argument("instance")
    c = cmd("start", commands.cmd_start, "start an instance (catalog state Online, incarnation + 1)")
    c.add_argument("instance")
    c = cmd("move", commands.cmd_move, "move buckets START..END of TIER to REPLICASET (rows move along)")
    c.add_argument("tier")
    c.add_argument("start", type=int)
    c.add_argument("end", type=int)
    c.add_argument("replicaset")
    c = cmd("rebalance", commands.cmd_rebalance, "rebalance buckets evenly, or by --weights (minimal movement)")
    c.add_argument("--tier")
    c.add_argument("--weights", type=parse_weights, metavar="RS=W,...")
    c = cmd("add-replicaset", commands.cmd_add_replicaset, "add a replicaset (master + replicas), then rebalance its tier")
    c.add_argument("--tier")
    c.add_argument("--replication-factor", type=int)
    c.add_argument("--no-rebalance", action="store_true")
    c = cmd("expel", commands.cmd_expel, "move a replicaset's buckets away, mark it expelled, stop its servers")
    c.add_argument("replicaset")
    c = cmd("switch-master", commands.cmd_switch_master, "promote a replica; the old master becomes its standby")
    c.add_argument("replicaset")
    c.add_argument("--to", metavar="INSTANCE")
    for name, func, help_ in (("revoke", commands.cmd_revoke, "revoke SELECT on a catalog table"),
                              ("grant", commands.cmd_grant, "grant SELECT on a catalog table")):
        c = cmd(name, func, help_)
        c.add_argument("table")
        c.add_argument("--user", default=CLIENT_USER)
    cmd("drop-bucket-function", commands.cmd_drop_bucket_function, "drop _pico_bucket (a server older than 25.5.2)")
    cmd("restore-bucket-function", commands.cmd_restore_bucket_function, "recreate _pico_bucket")
    c = cmd("strict", commands.cmd_strict, "strict mode (Picodata's forward=off) on every instance")
    c.add_argument("mode", choices=["on", "off"])
    c = cmd("create-table", commands.cmd_create_table, "create a sharded (or --global) table on every instance")
    c.add_argument("name")
    c.add_argument("--columns", required=True, help='e.g. "id int8, name text"')
    c.add_argument("--primary-key", help="comma-separated (default: the first column)")
    c.add_argument("--sharding-key", help="comma-separated, hashing order (default: the primary key)")
    c.add_argument("--global", dest="is_global", action="store_true")
    c.add_argument("--tier")
    c.add_argument("--unlogged", action="store_true",
                   help="CREATE UNLOGGED TABLE (26.1+): not replicated, emptied on a new master")
    c = cmd("drop-table", commands.cmd_drop_table, "drop a table created by create-table")
    c.add_argument("name")
    c = cmd("load", commands.cmd_load, "store N deterministic generated rows")
    c.add_argument("name")
    c.add_argument("--rows", type=int, required=True)
    c.add_argument("--start", type=int, default=1, help="number of the first generated row (default 1)")
    c = cmd("insert", commands.cmd_insert, "store rows given as JSON arrays (column order) or objects")
    c.add_argument("name")
    c.add_argument("--values", action="append", required=True, metavar="JSON")
    c = cmd("locate", commands.cmd_locate, "print the bucket and owner of a sharding key", locked=False)
    c.add_argument("name")
    c.add_argument("--key", required=True, action="append", metavar="JSON",
                   help="JSON array of the sharding-key values; repeated: a JSON list of the answers, in order")
    c = cmd("counters", commands.cmd_counters, "per-instance access counters of the storage tables", locked=False)
    c.add_argument("name", nargs="?")
    c.add_argument("--json", action="store_true")
    c = cmd("set", commands.cmd_set, "set a cluster setting (ALTER SYSTEM): a limit (0 = off), read_preference "
                            "leader|replica|any, sql_preemption true|false")
    c.add_argument("setting", choices=sorted(SETTINGS))
    c.add_argument("value")
    c = cmd("audit", commands.cmd_audit, "print the statements the fronts refused; exit 1 when there is any", locked=False)
    c.add_argument("--clear", action="store_true", help="empty the audit (after printing it)")
    c.add_argument("--json", action="store_true")
    c = cmd("psql", commands.cmd_psql, "run psql on an instance's private PostgreSQL port, bypassing its front "
                              "(extra arguments after --)", locked=False)
    c.add_argument("instance")
    c.add_argument("--user", default=ADMIN_USER)
    return p


def main(argv: List[str]) -> int:
    extra = []
    if "psql" in argv and "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1:]
    args = build_parser().parse_args(argv)
    args.extra = extra
    directory = getattr(args, "dir", None) or os.environ.get("PICOEMU_DIR") or DEFAULT_DIR
    args.base_port = (getattr(args, "base_port", None)
                      or int(os.environ.get("PICOEMU_BASE_PORT") or DEFAULT_BASE_PORT))
    cl = Cluster(directory)
    func: Handler = args.func
    if not args.locked:
        return func(cl, args) or 0
    with cl.locked():
        return func(cl, args) or 0


def run(argv: List[str]) -> int:
    """main() with picoemu's errors reported as the contract says: `picoemu: error: ...` and exit 1."""
    try:
        return main(argv)
    except EmuError as exc:
        print("picoemu: error: %s" % exc, file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        print("picoemu: interrupted", file=sys.stderr)
        return 130
