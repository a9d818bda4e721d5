"""Moving sharded rows with their buckets (`move`, `rebalance`, and the moves of `add-replicaset` and
`expel`): no acknowledged write is lost, none is stored twice, no client sees an error because of a
move (see the README's "Moving buckets")."""

import json
import os
from typing import Dict, List, Mapping, Optional, Sequence

from .. import buckets, pg
from ..errors import EmuError
from ..sqlgen.text import ident
from ..sqlgen.topology import bucket_pred
from ..state import State, Table
from .core import Cluster, log
from .sync import run_again_on_deadlock, sync, wait_replicas

TRANSFER_FILE = "picoemu_transfer.json"


def _copy(st: State, pairs: buckets.Transfers, tables: Sequence[Table]) -> None:
    """Per table, in one transaction on the old owner: LOCK TABLE ... IN SHARE MODE waits for the
    writers already in flight, then COPY sees their rows; into the new owner's storage with
    triggers bypassed."""
    for (src, dst), ranges in pairs.items():
        ms, md = st.master(src), st.master(dst)
        for t in tables:
            rel = "_picoemu_local.%s" % ident(t["name"])
            cols = ", ".join([ident(c["name"]) for c in t["columns"]] + ["bucket_id"])
            data = pg.copy_out(ms["port"], "SELECT %s FROM %s WHERE %s" % (cols, rel, bucket_pred(ranges)),
                               what="master %s" % ms["name"], lock_share=rel)
            # rows left behind at the destination by an interrupted move are not visible
            # anywhere (it did not own the buckets); drop them before copying
            pg.psql(md["port"], "SET session_replication_role = replica; DELETE FROM %s WHERE %s;"
                    % (rel, bucket_pred(ranges)), what="master %s" % md["name"])
            if data:
                pg.copy_in(md["port"], "%s (%s)" % (rel, cols), data, what="master %s" % md["name"],
                           bypass_triggers=True)


def _delete(st: State, pairs: buckets.Transfers, tables: Sequence[Table]) -> None:
    """The moved rows, deleted from the old owners."""
    for (src, dst), ranges in pairs.items():
        ms = st.master(src)
        script = "".join("DELETE FROM _picoemu_local.%s WHERE %s;\n"
                         % (ident(t["name"]), bucket_pred(ranges)) for t in tables)
        if script:
            port, what = ms["port"], "master %s" % ms["name"]
            run_again_on_deadlock(lambda: pg.psql(
                port, "SET session_replication_role = replica;\n" + script, what=what, single_transaction=True))


def apply_bucket_map(cl: Cluster, tier_name: str, new_owners: buckets.Owners) -> int:
    """Moves the rows of every bucket whose owner changes, then publishes the new map. Nothing
    acknowledged is lost: (1) each old owner's master is told that the buckets are in flight
    (the file picoemu_transfer.json, phase "copy", read by its storage triggers: a write to them
    waits for the move, then runs again through the new map, see check_transfer in
    sql/strict.sql); (2) under a SHARE lock, which waits for the writers already in flight, the
    rows are copied to the new owner; (3) the mark's phase becomes "publish" and the new map is
    published (a reader sees each bucket on exactly one side: the coordinator's view reads it
    from its owner only); (4) the rows are deleted from the old owner and the mark is removed.
    Returns how many buckets moved."""
    st = cl.require()
    tier = st.tier(tier_name)
    old = buckets.expand(st.d["buckets"][tier_name], tier["bucket_count"])
    segs = buckets.segments(old, new_owners)
    if not segs:
        log("tier %s: nothing to move" % tier_name)
        return 0
    involved = sorted({s[0] for s in segs if s[0]} | {s[1] for s in segs if s[1]})
    for rs in involved:
        m = st.master(rs)
        if not cl.running(m):
            raise EmuError("cannot move buckets of replicaset %s: its master %s is stopped (start it "
                           "or switch the master first)" % (rs, m["name"]))
    tables = [t for t in st.tables if not t["global"] and t["tier"] == tier_name]
    pairs = buckets.transfers(segs)
    marks: Dict[str, List[Dict[str, object]]] = {}
    for (src, dst), ranges in pairs.items():
        marks.setdefault(src, []).extend({"tier": tier_name, "bucket_start": a, "bucket_end": b,
                                          "dst": dst} for a, b in ranges)
    mark_files = [os.path.join(cl.datadir(st.master(src)), TRANSFER_FILE) for src in marks]

    def mark(phase: str) -> None:
        for src, entries in marks.items():
            cl.write_file_atomic(os.path.join(cl.datadir(st.master(src)), TRANSFER_FILE),
                                 json.dumps([dict(x, phase=phase) for x in entries]) + "\n", 0o600)
    try:
        mark("copy")
        _copy(st, pairs, tables)
        st.d["buckets"][tier_name] = buckets.compress(new_owners)
        st.bump_tier_version(tier_name)
        cl.save()
        # writes waiting at the old owners stop waiting within 50 ms from now on: a coordinator's
        # rebuild may wait for their locks on another server, which the old owner cannot see
        mark("publish")
        # the new owners first: a coordinator that already routes a bucket to its new owner
        # finds it accepting writes; the others still send them to the old owner, where they
        # wait and run again
        sync(cl, wait=False, first={dst for _, dst in pairs})
        _delete(st, pairs, tables)
    finally:
        for f in mark_files:
            if os.path.exists(f):
                os.unlink(f)
    wait_replicas(cl)
    moved = sum(b - a + 1 for _, _, a, b in segs)
    log("tier %s: moved %d bucket(s) in %d range(s)" % (tier_name, moved, len(segs)))
    return moved


def move(cl: Cluster, tier_name: str, start: int, end: int, rs_name: str) -> None:
    st = cl.require()
    tier = st.tier(tier_name)
    n = tier["bucket_count"]
    if not (1 <= start <= end <= n):
        raise EmuError("bucket range %d..%d is outside 1..%d of tier %s" % (start, end, n, tier_name))
    rs = st.replicaset(rs_name)
    if rs["tier"] != tier_name or rs["state"] == "expelled":
        raise EmuError("replicaset %s is not a live replicaset of tier %s" % (rs_name, tier_name))
    apply_bucket_map(cl, tier_name, buckets.assign(buckets.expand(st.d["buckets"][tier_name], n), start, end, rs_name))


def rebalance(cl: Cluster, tier_name: Optional[str] = None, weights: Optional[Mapping[str, float]] = None) -> None:
    """weights None: every weight back to 1 (auto); {}: the stored weights; else those weights (user)."""
    st = cl.require()
    if weights:
        tiers = {st.replicaset(n)["tier"] for n in weights}
        if len(tiers) != 1 or (tier_name and tier_name not in tiers):
            raise EmuError("--weights must name replicasets of one tier (the --tier given)")
        tier_name = tiers.pop()
    names = [tier_name] if tier_name else [t["name"] for t in st.tiers]
    for tn in names:
        tier = st.tier(tn)
        live = st.live_replicasets(tn)
        if weights:
            for n, w in weights.items():
                r = st.replicaset(n)
                if r["state"] == "expelled":
                    raise EmuError("replicaset %s is expelled" % n)
                r["weight"], r["weight_origin"] = float(w), "user"
        elif weights is None:
            for r in live:
                r["weight"], r["weight_origin"] = 1.0, "auto"
        if tier["bucket_count"] == 0 or not live:
            cl.save()
            continue
        targets = buckets.target_counts(tier["bucket_count"], [(r["name"], r["weight"]) for r in live])
        cl.save()
        old = buckets.expand(st.d["buckets"][tn], tier["bucket_count"])
        if apply_bucket_map(cl, tn, buckets.rebalance(old, targets)) == 0:
            sync(cl)
