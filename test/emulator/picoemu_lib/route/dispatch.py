"""A dead master stalls the tier: which statements wait for it, and Picodata's text when their
deadline has passed."""

from typing import Dict, List, Optional, Sequence

from .. import caps as emu_caps
from ..dialect import Token
from ..state import Doc
from .bucketset import ClusterMap
from .syntax import table_refs

Plan = Dict[str, List[str]]  # {"tiers": the tiers whose masters it waits for, "targets": replicasets}

# Picodata's coordinator sends a statement to the storages through Lua (src/sql/dispatch.lua,
# one_step_dispatch and two_step_dispatch, 25.5.1 to 26.3.0): reads and writes, one step or two,
# first call vshard's wait_masters_connect on router:routeall(), every replicaset of the tier, with
# the statement's deadline, and ignore its result. A master that cannot be reached makes the wait
# last the whole deadline (DEFAULT_QUERY_TIMEOUT, 360 s, src/sql/router.rs; no statement or cluster
# option changes it): then the statement is sent to the masters it needs with no time left, and the
# collection fails with "dql timeout exceeded" (future_wait) after the live ones received it (a
# write is applied there). The 26.1.1+ local fast path (capability local_execution:
# should_single_rs_dispatch_locally / should_single_rs_buckets_dispatch_locally in
# src/sql/dispatch.rs, 26.1.1 to 26.3.0) runs a statement whose buckets all belong to this
# instance's replicaset on this instance, without Lua: at its master (read_preference leader, the
# default, and every write), at a replica for read_preference replica, anywhere in it for any; a
# statement without a sharding key (all buckets) only when the tier has that one replicaset.
# Global tables and the catalog are not dispatched (their bucket set is "any").

def dispatch_plan(state: Doc, instance: str, version: str, toks: List[Token], params: Optional[Sequence[Optional[str]]],
                  read_preference: Optional[str], write: bool) -> Optional[Plan]:
    """How the coordinator `instance` runs a statement (state: state.json): None when no Lua
    dispatch happens (no sharded table, or the local fast path), else {"tiers": the tiers whose
    masters it waits for, "targets": the replicasets it is sent to, by name}."""
    cluster = ClusterMap(state, version)
    tables = cluster.tables
    buckets = cluster.bucket_set(toks, params)
    if buckets == "any":
        return None
    inst = next(i for i in state["instances"] if i["name"] == instance)
    my_rs = inst["replicaset"]
    rs_of = {r["name"]: r for r in state.get("replicasets", []) if r.get("state") != "expelled"}
    is_replica = rs_of.get(my_rs, {}).get("master") != instance
    pref = "leader" if write else (read_preference or "leader").lower()
    here = {"leader": not is_replica, "replica": is_replica, "any": True}.get(pref, False)
    if isinstance(buckets, set):
        used = sorted({t for t, _ in buckets})
        targets = sorted(o for o in {cluster.owner(t, b) for t, b in buckets} if o is not None)
        if (emu_caps.has("local_execution", version) and here and targets == [my_rs]
                and len(used) == 1):
            return None
        return {"tiers": used, "targets": targets}
    used = sorted({tables[n]["tier"] for _, n in table_refs(toks)
                   if n in tables and not tables[n]["global"]})
    targets = sorted(r for r, v in rs_of.items() if v["tier"] in used)
    if (buckets == "all" and emu_caps.has("local_execution", version) and here and targets == [my_rs]):
        return None
    return {"tiers": used, "targets": targets}


def stopped_masters(state: Doc, tiers: Sequence[str]) -> List[str]:
    """The replicasets of `tiers` whose master the catalog shows Offline (picoemu stop), by name."""
    inst = {i["name"]: i for i in state.get("instances", [])}
    return sorted(r["name"] for r in state.get("replicasets", [])
                  if r.get("state") != "expelled" and r["tier"] in tiers
                  and inst.get(r.get("master"), {}).get("state") == "Offline")


def dql_timeout_text(state: Doc, plan: Plan) -> str:
    """Picodata's error once the deadline has passed: the Lua error of one_step_dispatch /
    two_step_dispatch, `Error on replicaset <uuid>: dql timeout exceeded` (dispatch.lua, future_wait
    and the fail label, 25.5.1 to 26.3.0), a box error of type ClientError (PROC_LUA, made by
    vshard's error.make) that tlua reads through its __tostring, json.encode; Rust wraps it as
    TarantoolError ProcLua ("box error: ProcLua: ...", tarantool/src/error.rs), then
    SbroadError::DispatchError (sql/dispatch.rs, lua_*_plan_dispatch callers), then "sbroad: "
    (src/traft/error.rs), at every tag. The replicaset named is one the statement was sent to that
    is running (the first by name here; Picodata names the first whose future it waited for), else
    the stopped one. The JSON's other fields (trace, base_type, ...) and their order are Picodata's
    hash order: the emulator gives type, code and message only; match the message."""
    rs_of = {r["name"]: r for r in state.get("replicasets", [])}
    stopped = set(stopped_masters(state, plan["tiers"]))
    live = [r for r in plan["targets"] if r not in stopped]
    names: List[Optional[str]] = [*(live or plan["targets"] or sorted(stopped)), None]
    uuid = rs_of.get(names[0], {}).get("uuid", "?") if names[0] is not None else "?"
    return ('sbroad: box error: ProcLua: {"type":"ClientError","code":32,"message":"Error on replicaset '
            '%s: dql timeout exceeded"}' % uuid)
