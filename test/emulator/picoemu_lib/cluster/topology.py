"""Changes of a running cluster's topology and catalog: add-replicaset, expel, switch-master, and the
catalog toggles (grants, strict mode, the bucket function, read_preference)."""

import time
from typing import Optional

from .. import buckets, pg
from ..errors import EmuError
from ..sqlgen.text import ident, lit
from ..state import VERSIONS, Replicaset
from .core import Cluster, log, now_iso
from .movement import apply_bucket_map, rebalance
from .servers import check_port, create_master, create_replica, make_template, stop_server, write_conf
from .sync import sync, wait_replay, wait_replicas


def add_replicaset(cl: Cluster, tier_name: Optional[str] = None, rf: Optional[int] = None,
                   do_rebalance: bool = True) -> Replicaset:
    st = cl.require()
    tier = st.tier(tier_name) if tier_name else st.default_tier()
    rf = rf or tier["replication_factor"]
    if rf < 1:
        raise EmuError("--replication-factor must be at least 1")
    rs = st.new_replicaset(tier)
    members = [st.new_instance(rs, tier, j, pg.port_is_free) for j in range(1, rf + 1)]
    rs["master"] = members[0]["name"]
    for i in members:
        i["state_change_time"] = now_iso()
        check_port(cl, i)
    cl.save()
    make_template(cl)
    create_master(cl, members[0])
    sync(cl, wait=False)
    globals_ = [t for t in st.tables if t["global"]]
    if globals_:
        src = next((st.master(r["name"]) for r in st.live_replicasets()
                    if r["name"] != rs["name"] and cl.running(st.master(r["name"]))), None)
        if src is None:
            raise EmuError("no running master to copy global tables from")
        for t in globals_:
            rel = "_picoemu_local.%s" % ident(t["name"])
            data = pg.copy_out(src["port"], "SELECT * FROM %s" % rel, what="master %s" % src["name"])
            if data:
                pg.copy_in(members[0]["port"], rel, data, what="master %s" % members[0]["name"])
    for i in members[1:]:
        create_replica(cl, i, members[0])
    wait_replicas(cl)
    log("added replicaset %s (%s)" % (rs["name"], ", ".join(i["name"] for i in members)))
    if do_rebalance and tier["bucket_count"] > 0:
        rebalance(cl, tier["name"], weights={})
    return rs


def expel(cl: Cluster, rs_name: str) -> None:
    st = cl.require()
    rs = st.replicaset(rs_name)
    if rs["state"] == "expelled":
        log("replicaset %s is already expelled" % rs_name)
        return
    tier = st.tier(rs["tier"])
    others = [r for r in st.live_replicasets(rs["tier"]) if r["name"] != rs_name]
    owned = [x for x in st.d["buckets"][rs["tier"]] if x[2] == rs_name]
    if owned and not others:
        raise EmuError("cannot expel %s: it is the last replicaset of tier %s and holds its buckets"
                       % (rs_name, rs["tier"]))
    if others and [t for t in st.tables if t["global"]] and len(st.live_replicasets()) < 2:
        raise EmuError("cannot expel the last replicaset holding global tables")
    rs["state"] = "to-be-expelled"
    rs["weight"] = 0.0
    cl.save()
    if owned:
        targets = buckets.target_counts(tier["bucket_count"], [(r["name"], r["weight"]) for r in others])
        old = buckets.expand(st.d["buckets"][rs["tier"]], tier["bucket_count"])
        apply_bucket_map(cl, rs["tier"], buckets.rebalance(old, targets))
    for i in st.members(rs_name):
        if cl.running(i) or cl.front_running(i):
            stop_server(cl, i)
        i["expelled"] = True
        i["state"] = "Offline"
        i["state_change_time"] = now_iso()
    rs["state"] = "expelled"
    cl.save()
    sync(cl)
    log("expelled replicaset %s" % rs_name)


def switch_master(cl: Cluster, rs_name: str, to: Optional[str] = None) -> None:
    st = cl.require()
    rs = st.replicaset(rs_name)
    if rs["state"] == "expelled":
        raise EmuError("replicaset %s is expelled" % rs_name)
    old = st.master(rs_name)
    cands = [i for i in st.members(rs_name) if i is not old and not i["expelled"]]
    if to:
        target = st.instance(to)
        if target not in cands:
            raise EmuError("instance %s is not a replica of replicaset %s" % (to, rs_name))
    else:
        running = [i for i in cands if cl.running(i)]
        if not running:
            raise EmuError("replicaset %s has no running replica to promote" % rs_name)
        target = running[0]
    if not cl.running(target):
        raise EmuError("instance %s is stopped: start it before promoting it" % target["name"])
    was_running = cl.running(old)
    if was_running:
        lsn = pg.psql_value(old["port"], "SELECT pg_current_wal_insert_lsn()", what="master %s" % old["name"])
        wait_replay(cl, target, lsn)
        stop_server(cl, old)
    pg.pg_promote(cl.datadir(target), cl.dir)
    deadline = time.time() + pg.START_TIMEOUT
    while pg.psql_value(target["port"], "SELECT pg_is_in_recovery()", what=target["name"]) != "f":
        if time.time() > deadline:
            raise EmuError("instance %s did not leave recovery after promotion" % target["name"])
        time.sleep(0.1)
    write_conf(cl, target)  # drops primary_conninfo; PostgreSQL removed standby.signal itself
    pg.psql(target["port"], "SELECT pg_reload_conf()", what=target["name"])
    rs["master"] = target["name"]
    rs["master_change_counter"] += 1
    rs["config_version"] += 1
    if was_running:
        old["incarnation"] += 1
        old["state_change_time"] = now_iso()
    cl.save()
    # publish the new master at once, as Picodata does: coordinators stop asking the stopped one
    # while the standbys are rebuilt
    sync(cl, wait=False)
    for i in cands:
        if i is not target:
            create_replica(cl, i, target, start=cl.running(i))
    create_replica(cl, old, target, start=was_running)
    sync(cl)
    log("replicaset %s: master %s -> %s" % (rs_name, old["name"], target["name"]))


def set_grant(cl: Cluster, table: str, user: str, grant: bool) -> None:
    st = cl.require()
    if table not in st.d["grants"]:
        raise EmuError("%s is not a catalog table (%s)" % (table, ", ".join(st.d["grants"])))
    users = st.d["grants"][table]
    if user != "PUBLIC":
        m = next((st.master(r["name"]) for r in st.live_replicasets() if cl.running(st.master(r["name"]))), None)
        if m is None:
            raise EmuError("no running master to check role %s on" % user)
        if pg.psql_value(m["port"], "SELECT count(*) FROM pg_roles WHERE rolname = %s" % lit(user),
                         what="master %s" % m["name"]) != "1":
            raise EmuError("role %s does not exist (known: admin, %s, PUBLIC)" % (user, "picoroute"))
    if grant:
        if user not in users:
            users.append(user)
    else:
        if user in users:
            users.remove(user)
        if "PUBLIC" in users and user != "PUBLIC":
            users.remove("PUBLIC")
            log("note: %s was readable by PUBLIC; revoked from PUBLIC too" % table)
    cl.save()
    sync(cl)


def set_flag(cl: Cluster, key: str, value: object) -> None:
    st = cl.require()
    if key == "strict" and value and not st.cap("forward"):
        raise EmuError("strict mode (forward=off) does not exist in Picodata %s: it appeared in 26.2.1-rc1 "
                       "(create the cluster with `up --picodata` one of %s)"
                       % (st.version, ", ".join(v for v in VERSIONS if VERSIONS[v]["forward"])))
    st.d[key] = value
    cl.save()
    sync(cl)
