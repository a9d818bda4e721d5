"""The sub-commands of picoemu: one handler per command, each called with the cluster and the parsed
arguments (main.build_parser binds them); the exit code is what it returns (None: 0)."""

import argparse
import decimal
import json
import os
from typing import List, Optional

from .. import caps as emu_caps
from .. import data as emu_data
from .. import hashing, pg
from ..cluster import Cluster, lifecycle, movement, topology
from ..errors import EmuError
from ..rows import convert
from ..state import DB_NAME, DEFAULT_VERSION, VERSIONS
from .status import PASSWORDS, conninfo, print_status, read_audit, status_dict


def cmd_status(cl: Cluster, args: argparse.Namespace) -> None:
    if args.json:
        print(json.dumps(status_dict(cl), indent=1))
    else:
        print_status(cl)


def cmd_versions(cl: Cluster, args: argparse.Namespace) -> None:
    """The builds `up --picodata` emulates, each with its capabilities (no cluster needed)."""
    out = {"default": DEFAULT_VERSION, "ascending": list(VERSIONS),
           "builds": {v: {"version_function": emu_caps.version_function_text(v), "capabilities": dict(caps)}
                      for v, caps in VERSIONS.items()}}
    if args.json:
        print(json.dumps(out, indent=1))
        return
    for v, caps in VERSIONS.items():
        print("%-12s%s %s" % (v, " (default)" if v == DEFAULT_VERSION else "          ",
                              ", ".join(k for k, on in caps.items() if on) or "-"))


def cmd_conninfo(cl: Cluster, args: argparse.Namespace) -> None:
    print(conninfo(cl, args.user, args.instance))


def cmd_counters(cl: Cluster, args: argparse.Namespace) -> None:
    data = emu_data.counters(cl, args.name)
    if args.json:
        print(json.dumps(data, indent=1, sort_keys=True))
        return
    print("%-14s %-16s %8s %8s %8s %8s %8s %8s" % ("INSTANCE", "TABLE", "SEQ_SCAN", "IDX_SCAN",
                                                "INS", "UPD", "DEL", "LIVE"))
    for inst, tables in data.items():
        for t, v in tables.items():
            print("%-14s %-16s %8d %8d %8d %8d %8d %8d" % (inst, t, v["seq_scan"], v["idx_scan"],
                                                         v["n_tup_ins"], v["n_tup_upd"], v["n_tup_del"],
                                                         v["n_live_tup"]))


def cmd_audit(cl: Cluster, args: argparse.Namespace) -> int:
    entries = read_audit(cl)
    if args.json:
        print(json.dumps(entries, indent=1, sort_keys=True))
    else:
        for e in entries:
            print("%s %s %s %s user=%s app=%s peer=%s: %s\n    %s" % (
                e.get("time", "?"), e.get("instance", "?"), e.get("kind", "?"), e.get("sqlstate", "?"),
                e.get("user"), e.get("application_name"), e.get("peer"), e.get("message"),
                (e.get("statement") or "").replace("\n", " ")[:2000]))
        print("%d statement(s) refused by the fronts" % len(entries))
    if args.clear and os.path.exists(os.path.join(cl.dir, "audit.jsonl")):
        with open(os.path.join(cl.dir, "audit.jsonl"), "w"):
            pass
    return 1 if entries and not args.clear else 0


def cmd_locate(cl: Cluster, args: argparse.Namespace) -> None:
    st = cl.require()
    t = st.table(args.name)
    if t["global"]:
        raise EmuError("table %s is global: every instance holds every row" % t["name"])
    cols = {col["name"]: col for col in t["columns"]}
    tier = st.tier(t["tier"])
    found = []
    for key in args.key:
        try:
            raw = json.loads(key, parse_float=decimal.Decimal)
        except ValueError as exc:
            raise EmuError("--key is not JSON: %s" % exc)
        if not isinstance(raw, list) or len(raw) != len(t["sharding_key"]):
            raise EmuError("--key must be a JSON array of %d value(s): %s"
                           % (len(t["sharding_key"]), ", ".join(t["sharding_key"])))
        vals = [convert(cols[k], v) for k, v in zip(t["sharding_key"], raw)]
        b = hashing.bucket_id(vals, tier["bucket_count"], st.hash_rule())
        owner = next(o for a, e, o in st.d["buckets"][t["tier"]] if a <= b <= e)
        m = st.master(owner)
        found.append({"bucket_id": b, "replicaset": owner, "master": m["name"], "port": st.advertised_port(m),
                      "private_port": m["port"]})
    # one key: its object; several (--key repeated): a list of them, in the order of the keys
    print(json.dumps(found[0] if len(found) == 1 else found))


def cmd_psql(cl: Cluster, args: argparse.Namespace) -> None:
    st = cl.require()
    inst = st.instance(args.instance)
    env = dict(os.environ, PGPASSWORD=PASSWORDS.get(args.user, ""))
    os.execve(pg.pgbin("psql"), ["psql", "-X", "-h", pg.HOST, "-p", str(inst["port"]), "-U", args.user,
                                 "-d", DB_NAME] + args.extra, env)


def cmd_up(cl: Cluster, args: argparse.Namespace) -> None:
    if cl.st is None:
        tiers = args.tier or [("default", args.replicasets, args.replication_factor, args.bucket_count)]
        if len({t[0] for t in tiers}) != len(tiers):
            raise EmuError("duplicate tier name")
        if not (1024 <= args.base_port <= 65000):
            raise EmuError("--base-port must be between 1024 and 65000")
    else:
        tiers = None
    version = args.picodata or os.environ.get("PICOEMU_PICODATA") or DEFAULT_VERSION
    if version not in VERSIONS:
        raise EmuError("Picodata %s (--picodata or PICOEMU_PICODATA) is not an emulated build: one of %s"
                       % (version, ", ".join(VERSIONS)))
    lifecycle.up(cl, tiers, args.base_port, args.advertise_wildcard, args.auth, version, args.advertise_private,
                 args.wrong_hash, args.private_pgproto)
    print_status(cl)


def cmd_down(cl: Cluster, args: argparse.Namespace) -> None:
    lifecycle.down(cl)


def cmd_stop(cl: Cluster, args: argparse.Namespace) -> None:
    lifecycle.stop(cl, args.instance)


def cmd_start(cl: Cluster, args: argparse.Namespace) -> None:
    lifecycle.start(cl, args.instance)


def cmd_move(cl: Cluster, args: argparse.Namespace) -> None:
    movement.move(cl, args.tier, args.start, args.end, args.replicaset)


def cmd_rebalance(cl: Cluster, args: argparse.Namespace) -> None:
    movement.rebalance(cl, args.tier, args.weights)


def cmd_add_replicaset(cl: Cluster, args: argparse.Namespace) -> None:
    topology.add_replicaset(cl, args.tier, args.replication_factor, not args.no_rebalance)


def cmd_expel(cl: Cluster, args: argparse.Namespace) -> None:
    topology.expel(cl, args.replicaset)


def cmd_switch_master(cl: Cluster, args: argparse.Namespace) -> None:
    topology.switch_master(cl, args.replicaset, args.to)


def cmd_grant(cl: Cluster, args: argparse.Namespace) -> None:
    topology.set_grant(cl, args.table, args.user, True)


def cmd_revoke(cl: Cluster, args: argparse.Namespace) -> None:
    topology.set_grant(cl, args.table, args.user, False)


def cmd_drop_bucket_function(cl: Cluster, args: argparse.Namespace) -> None:
    topology.set_flag(cl, "bucket_function", False)


def cmd_restore_bucket_function(cl: Cluster, args: argparse.Namespace) -> None:
    topology.set_flag(cl, "bucket_function", True)


def cmd_strict(cl: Cluster, args: argparse.Namespace) -> None:
    topology.set_flag(cl, "strict", args.mode == "on")


def cmd_set(cl: Cluster, args: argparse.Namespace) -> None:
    st = cl.require()
    if args.setting == "read_preference":
        # A cluster setting from 26.1 (src/config/mod.rs:2362 at 26.1.1; absent at 25.5.10); the
        # storages read it (_picoemu.setting), so it is written like strict mode.
        if not emu_caps.has("read_preference", st.version):
            raise EmuError("read_preference is not a cluster setting of Picodata %s (from 26.1)" % st.version)
        if args.value.lower() not in ("leader", "replica", "any"):
            raise EmuError("invalid value for 'read_preference': expected 'leader', 'replica' or 'any'")
        topology.set_flag(cl, "read_preference", args.value.lower())
        return
    if args.setting == "sql_preemption":
        if args.value.lower() not in ("true", "false"):
            raise EmuError("sql_preemption expects true or false")
        st.d[args.setting] = args.value.lower() == "true"
        cl.save()
        return
    try:
        value = int(args.value)
    except ValueError:
        raise EmuError("%s expects an integer" % args.setting)
    if value < 0:
        raise EmuError("%s must be >= 0 (0 = off)" % args.setting)
    st.d[args.setting] = value
    cl.save()


def split_names(text: Optional[str]) -> Optional[List[str]]:
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def cmd_create_table(cl: Cluster, args: argparse.Namespace) -> None:
    emu_data.create_table(cl, args.name, args.columns, split_names(args.primary_key), split_names(args.sharding_key),
                          args.is_global, args.tier, unlogged=args.unlogged)


def cmd_drop_table(cl: Cluster, args: argparse.Namespace) -> None:
    emu_data.drop_table(cl, args.name)


def cmd_load(cl: Cluster, args: argparse.Namespace) -> None:
    print(json.dumps(emu_data.load(cl, args.name, args.rows, args.start), sort_keys=True))


def cmd_insert(cl: Cluster, args: argparse.Namespace) -> None:
    print(json.dumps(emu_data.insert(cl, args.name, args.values), sort_keys=True))
