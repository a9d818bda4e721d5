"""The life of a cluster: up (a new cluster, or the instances that should run restarted), down (every
server stopped and the directory removed), stop and start of one instance."""

import os
from typing import Optional, Sequence

from .. import buckets, pg
from ..errors import EmuError
from ..state import TierSpec, new_state
from .core import Cluster, log, now_iso
from .private_pgproto import build as build_private_pgproto
from .servers import (check_port, create_master, create_replica, make_template, start_front, start_server,
                      stop_front_pidfile, stop_server)
from .sync import sync, wait_replicas


def restart(cl: Cluster) -> None:
    """`up` on an existing cluster: the instances that should be Online but are not running, and the
    fronts of running servers, are started again."""
    st = cl.require()
    started = []
    for i in st.active_instances():
        if i["state"] == "Online" and not cl.running(i):
            check_port(cl, i, wait=70)
            start_server(cl, i)
            started.append(i["name"])
        elif cl.running(i) and not cl.front_running(i):
            start_front(cl, i)
            started.append(i["name"] + " (front)")
    if started:
        log("restarted %s" % ", ".join(started))
        sync(cl)
    log("cluster already exists in %s (options ignored; `picoemu down` to rebuild)" % cl.dir)


def up(cl: Cluster, tiers: Optional[Sequence[TierSpec]], base_port: int, advertise_wildcard: bool, auth: str,
       picodata_version: str, advertise_private: bool = False, wrong_hash: Optional[str] = None,
       private_pgproto: bool = False) -> None:
    if cl.st is not None:
        restart(cl)
        return
    if tiers is None:
        raise EmuError("no tier to create in %s" % cl.dir)
    cl.ensure_dir()
    st = cl.st = new_state(cl.state_path, base_port, tiers, advertise_wildcard, auth, picodata_version,
                           advertise_private)
    if wrong_hash:  # a test device (explain.buckets.hash_rule): fixed for the life of the cluster
        st.d["wrong_hash"] = wrong_hash
    if private_pgproto:  # fixed for the life of the cluster, like advertise_private
        st.d["private_pgproto"] = True
        build_private_pgproto(cl)
    for tier in st.tiers:
        for _ in range(tier["replicasets"]):
            rs = st.new_replicaset(tier)
            for j in range(1, tier["replication_factor"] + 1):
                inst = st.new_instance(rs, tier, j, pg.port_is_free)
                if j == 1:
                    rs["master"] = inst["name"]
        n = tier["bucket_count"]
        if n > 0:
            if tier["replicasets"] < 1:
                raise EmuError("tier %s has buckets but no replicaset" % tier["name"])
            targets = buckets.target_counts(n, [(r["name"], 1.0) for r in st.live_replicasets(tier["name"])])
            st.d["buckets"][tier["name"]] = buckets.compress(buckets.rebalance([None] * (n + 1), targets))
    for i in st.instances:
        check_port(cl, i)
    for i in st.instances:
        i["state_change_time"] = now_iso()
    cl.save()
    make_template(cl)
    for r in st.replicasets:
        create_master(cl, st.master(r["name"]))
    sync(cl, wait=False)
    for r in st.replicasets:
        m = st.master(r["name"])
        for i in st.members(r["name"]):
            if i is not m:
                create_replica(cl, i, m)
    wait_replicas(cl)


def down(cl: Cluster) -> None:
    if not os.path.isdir(cl.dir):
        log("nothing to stop in %s" % cl.dir)
        return
    if not os.path.exists(cl.state_path) and not os.path.isdir(cl.template_dir()):
        # refuse to delete a directory that picoemu did not create
        if os.listdir(cl.dir) and not os.path.exists(os.path.join(cl.dir, ".lock")):
            raise EmuError("%s does not look like a picoemu directory (no state.json); not removing it"
                           % cl.dir)
    stopped = 0
    for entry in sorted(os.listdir(cl.dir)):
        stop_front_pidfile(os.path.join(cl.dir, entry, "front.pid"))
        data = os.path.join(cl.dir, entry, "data")
        if pg.is_running(data):
            pg.pg_stop(data, cl.dir)
            stopped += 1
    pg.remove_tree(cl.dir)
    cl.st = None
    log("stopped %d server(s), removed %s" % (stopped, cl.dir))


def stop(cl: Cluster, name: str) -> None:
    st = cl.require()
    inst = st.instance(name)
    if inst["expelled"]:
        raise EmuError("instance %s is expelled" % name)
    if cl.running(inst) or cl.front_running(inst):
        stop_server(cl, inst)
    if inst["state"] != "Offline":
        inst["state"] = "Offline"
        inst["state_change_time"] = now_iso()
        cl.save()
    sync(cl)


def start(cl: Cluster, name: str) -> None:
    st = cl.require()
    inst = st.instance(name)
    if inst["expelled"]:
        raise EmuError("instance %s is expelled" % name)
    if not cl.running(inst):
        check_port(cl, inst, wait=70)  # a client socket in TIME_WAIT may hold it for 60 s
        start_server(cl, inst)
    elif not cl.front_running(inst):
        start_front(cl, inst)
    if inst["state"] != "Online":
        inst["state"] = "Online"
        inst["incarnation"] += 1
        inst["state_change_time"] = now_iso()
        cl.save()
    sync(cl)
