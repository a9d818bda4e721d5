"""What `picoemu status`, `conninfo` and `audit` show: the status document (`status --json`), its
human tables, a connection string and the fronts' audit."""

import json
import os
from typing import Any, Dict, List, Optional

from .. import caps as emu_caps
from .. import pg
from ..cluster import Cluster
from ..state import (ADMIN_PASSWORD, ADMIN_USER, CLIENT_PASSWORD, CLIENT_USER, DB_NAME, VERSIONS, Inst)

SETTINGS = {"sql_motion_row_max": 5000, "sql_vdbe_opcode_max": 45000,  # Picodata's defaults
            "pg_statement_max": 100000,
            # src/config/mod.rs (config_default): ReadPreference::default() is leader (26.1.1+),
            # DEFAULT_SQL_PREEMPTION false (25.5.1 to 26.3.0)
            "read_preference": "leader", "sql_preemption": False}
PASSWORDS = {ADMIN_USER: ADMIN_PASSWORD, CLIENT_USER: CLIENT_PASSWORD}


def front_port(i: Inst) -> int:
    port: int = i.get("pgproto_port", i["port"])
    return port


def read_audit(cl: Cluster) -> List[Dict[str, Any]]:
    path = os.path.join(cl.dir, "audit.jsonl")
    out: List[Dict[str, Any]] = []
    try:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except ValueError:
                        out.append({"message": "unreadable audit line", "statement": line})
    except FileNotFoundError:
        pass
    return out


def status_dict(cl: Cluster) -> Dict[str, Any]:
    st = cl.st
    if st is None:
        return {"exists": False, "dir": cl.dir}
    insts = []
    for i in st.instances:
        rs = st.replicaset(i["replicaset"])
        host = "0.0.0.0" if st.d["advertise_wildcard"] else "127.0.0.1"
        insts.append({
            "name": i["name"], "uuid": i["uuid"], "raft_id": i["raft_id"], "replicaset": i["replicaset"],
            "replicaset_uuid": rs["uuid"], "tier": i["tier"], "host": pg.HOST, "port": st.advertised_port(i),
            "pgproto_address": "%s:%d" % (host, st.advertised_port(i)), "private_port": i["port"],
            "front_port": front_port(i), "front_running": cl.front_running(i),
            "iproto_address": "127.0.0.1:%d" % i["iproto_port"],
            "role": "master" if rs["master"] == i["name"] else "replica",
            "running": cl.running(i),
            "state": "Expelled" if i["expelled"] else i["state"], "incarnation": i["incarnation"],
            "expelled": i["expelled"], "datadir": cl.datadir(i), "log": cl.logfile(i)})
    rss = [{"name": r["name"], "uuid": r["uuid"], "tier": r["tier"], "master": r["master"],
            "weight": r["weight"], "state": r["state"],
            "instances": [i["name"] for i in st.members(r["name"])],
            "bucket_count": sum(b - a + 1 for a, b, o in st.d["buckets"][r["tier"]] if o == r["name"])}
           for r in st.replicasets]
    uuid_of = {r["name"]: r["uuid"] for r in st.replicasets}
    tiers = [{"name": t["name"], "replication_factor": t["replication_factor"],
              "bucket_count": t["bucket_count"], "is_default": t["is_default"],
              "buckets": [{"start": a, "end": b, "replicaset": o, "replicaset_uuid": uuid_of[o]}
                          for a, b, o in st.d["buckets"][t["name"]]]} for t in st.tiers]
    tables = [{"name": t["name"], "global": t["global"], "tier": t["tier"],
               "columns": [{"name": c["name"], "type": c["type"]} for c in t["columns"]],
               "primary_key": t["primary_key"], "sharding_key": t["sharding_key"],
               "unlogged": bool(t.get("unlogged"))} for t in st.tables]
    return {"exists": True, "dir": cl.dir, "dbname": DB_NAME, "host": pg.HOST,
            "picodata_version": st.version, "version_function": emu_caps.version_function_text(st.version),
            "capabilities": dict(VERSIONS[st.version]),
            "base_port": st.d["base_port"], "auth": st.d["auth"],
            "users": {ADMIN_USER: {"password": ADMIN_PASSWORD, "superuser": True},
                      CLIENT_USER: {"password": CLIENT_PASSWORD, "superuser": False}},
            "strict": st.d["strict"], "bucket_function": st.d["bucket_function"],
            "settings": {k: st.d.get(k, d) for k, d in SETTINGS.items()},
            "audit_entries": len(read_audit(cl)),
            "advertise_wildcard": st.d["advertise_wildcard"],
            "advertise_private": bool(st.d.get("advertise_private")), "grants": st.d["grants"],
            "wrong_hash": st.d.get("wrong_hash"), "private_pgproto": bool(st.d.get("private_pgproto")),
            "instances": insts, "replicasets": rss, "tiers": tiers, "tables": tables}


def print_status(cl: Cluster) -> None:
    s = status_dict(cl)
    if not s["exists"]:
        print("no cluster in %s" % s["dir"])
        return
    print("cluster %s  dbname=%s  users: %s/%s (superuser), %s/%s  auth=%s" % (
        s["dir"], DB_NAME, ADMIN_USER, ADMIN_PASSWORD, CLIENT_USER, CLIENT_PASSWORD, s["auth"]))
    print("picodata %s (capabilities: %s)  strict=%s  _pico_bucket=%s  pgproto address=%s" % (
        s["picodata_version"], ", ".join(k for k, v in s["capabilities"].items() if v) or "none",
        "on" if s["strict"] else "off", "present" if s["bucket_function"] else "dropped",
        ("0.0.0.0 (wildcard)" if s["advertise_wildcard"] else "127.0.0.1")
        + (", the private ports (fronts bypassed)" if s["advertise_private"] else "")
        + ("; private ports take Picodata sessions" if s["private_pgproto"] else "")))
    print("settings: %s" % ", ".join("%s=%s" % kv for kv in sorted(s["settings"].items())))
    fmt = "%-14s %-12s %-9s %-11s %-8s %-14s %-8s %s"
    print()
    print(fmt % ("INSTANCE", "REPLICASET", "TIER", "PORT/PRIV", "ROLE", "STATE", "RUNNING", "UUID"))
    for i in s["instances"]:
        print(fmt % (i["name"], i["replicaset"], i["tier"], "%d/%d" % (i["port"], i["private_port"]), i["role"],
                     "%s,%d" % (i["state"], i["incarnation"]), "yes" if i["running"] else "no", i["uuid"]))
    print()
    fmt = "%-12s %-9s %-14s %-14s %-7s %-8s %s"
    print(fmt % ("REPLICASET", "TIER", "STATE", "MASTER", "WEIGHT", "BUCKETS", "UUID"))
    for r in s["replicasets"]:
        print(fmt % (r["name"], r["tier"], r["state"], r["master"], "%g" % r["weight"], r["bucket_count"], r["uuid"]))
    for t in s["tiers"]:
        print()
        print("tier %s: bucket_count %d, replication_factor %d%s" % (
            t["name"], t["bucket_count"], t["replication_factor"], " (default)" if t["is_default"] else ""))
        for b in t["buckets"]:
            print("  %5d-%-5d %s" % (b["start"], b["end"], b["replicaset"]))
    if s["tables"]:
        print()
        for t in s["tables"]:
            dist = "global" if t["global"] else "sharded by (%s) in tier %s" % (", ".join(t["sharding_key"]), t["tier"])
            print("table %s (%s): %s" % (t["name"], ", ".join("%s %s" % (c["name"], c["type"]) for c in t["columns"]), dist))


def conninfo(cl: Cluster, user: str, instance: Optional[str]) -> str:
    st = cl.require()
    insts = [st.instance(instance)] if instance else st.active_instances()
    pw = PASSWORDS.get(user)
    parts = ["host=" + ",".join(pg.HOST for _ in insts), "port=" + ",".join(str(st.advertised_port(i)) for i in insts),
             "dbname=" + DB_NAME, "user=" + user]
    if pw:
        parts.append("password=" + pw)
    return " ".join(parts)
