"""Sharded and global tables of the emulator: create/drop, storing rows in the replicaset that owns
each row's bucket (bucket computed in Python by test/tools/bucket_hash_reference.py, see hashing.py,
and checked again by the storage trigger in PL/pgSQL), and per-instance access counters."""

from typing import Dict, List, Optional, Sequence

from . import buckets, hashing, pg
from . import caps as emu_caps
from .cluster import Cluster
from .cluster.sync import sync, wait_replicas
from .errors import EmuError
from .rows import convert, copy_text, generate_rows, parse_values
from .sqlgen.columns import ENCODER, NAME_RE, parse_columns
from .sqlgen.text import ident, lit
from .state import Table

MAX_ROWS = 1_000_000
BATCH = 50_000


def create_table(cl: Cluster, name: str, columns: str, primary_key: Optional[List[str]] = None,
                 sharding_key: Optional[List[str]] = None, is_global: bool = False, tier: Optional[str] = None,
                 unlogged: bool = False) -> Table:
    st = cl.require()
    if unlogged and not emu_caps.has("unlogged_tables", st.version):
        raise EmuError("unlogged tables do not exist in Picodata %s (from 26.1)" % st.version)
    if unlogged and is_global:  # sql-planner/src/frontend/sql.rs:1275-1278 at 26.1.1
        raise EmuError("Global tables can't be unlogged.")
    if not NAME_RE.match(name) or name.startswith("_pico"):
        raise EmuError("bad table name %r (lower-case identifier not starting with _pico)" % name)
    if any(t["name"] == name for t in st.tables):
        raise EmuError("table %s already exists" % name)
    cols = parse_columns(columns)
    names = [c["name"] for c in cols]
    pk = primary_key or [names[0]]
    sk = sharding_key or pk
    for k in pk + sk:
        if k not in names:
            raise EmuError("key column %s is not in --columns" % k)
    if is_global and sharding_key:
        raise EmuError("a --global table has no sharding key")
    tier_name = None
    if not is_global:
        t = st.tier(tier) if tier else st.default_tier()
        if t["bucket_count"] == 0:
            raise EmuError("tier %s has bucket_count 0 and cannot hold sharded tables" % t["name"])
        tier_name = t["name"]
        for k in sk:
            c = next(c for c in cols if c["name"] == k)
            if c["cls"] not in ENCODER:
                raise EmuError("column %s of type %s cannot be part of a sharding key" % (k, c["type"]))
    st.d["schema_version"] += 1
    table: Table = {"name": name, "id": st.d["next_table_id"], "columns": cols, "primary_key": pk,
             "sharding_key": [] if is_global else sk, "global": bool(is_global), "tier": tier_name,
             "schema_version": st.d["schema_version"], "unlogged": bool(unlogged)}
    st.d["next_table_id"] += 1
    st.tables.append(table)
    cl.save()
    sync(cl)
    return table


def drop_table(cl: Cluster, name: str) -> None:
    st = cl.require()
    t = st.table(name)
    st.tables.remove(t)
    st.d["schema_version"] += 1
    cl.save()
    sync(cl, wait=False)
    for r in st.live_replicasets():
        m = st.master(r["name"])
        if cl.running(m):
            pg.psql(m["port"], "DROP VIEW IF EXISTS public.%s CASCADE; DROP TABLE IF EXISTS "
                    "_picoemu_local.%s CASCADE; DROP FUNCTION IF EXISTS _picoemu.%s(); DROP FUNCTION "
                    "IF EXISTS _picoemu.%s();" % (ident(name), ident(name),
                                                   ident("store__" + name),
                                                   ident("route__" + name)),
                    what="master %s" % m["name"])
    wait_replicas(cl)


def store_rows(cl: Cluster, table: Table, raw_rows: Sequence[Sequence[object]]) -> Dict[str, int]:
    """Converts, hashes and stores rows; returns {replicaset: count}."""
    st = cl.require()
    cols = table["columns"]
    rows = [[convert(c, v) for c, v in zip(cols, r)] for r in raw_rows]
    for r in rows:
        for c, v in zip(cols, r):
            if v is None and (c["not_null"] or c["name"] in table["primary_key"]):
                raise EmuError("column %s of table %s cannot be NULL" % (c["name"], table["name"]))
    rel = "_picoemu_local.%s" % ident(table["name"])
    per_rs: Dict[str, List[str]] = {}
    if table["global"]:
        targets = [r["name"] for r in st.live_replicasets()]
        lines = ["\t".join(copy_text(v) for v in r) for r in rows]
        for rs in targets:
            per_rs[rs] = lines
    else:
        tier = st.tier(table["tier"])
        owners = buckets.expand(st.d["buckets"][table["tier"]], tier["bucket_count"])
        idx = [[c["name"] for c in cols].index(k) for k in table["sharding_key"]]
        rule = st.hash_rule()
        for r in rows:
            b = hashing.bucket_id([r[k] for k in idx], tier["bucket_count"], rule)
            owner = owners[b]
            assert owner is not None, b
            per_rs.setdefault(owner, []).append("\t".join([copy_text(v) for v in r] + [str(b)]))
    for rs, lines in per_rs.items():
        m = st.master(rs)
        if not cl.running(m):
            raise EmuError("master %s of replicaset %s is stopped; cannot store rows there" % (m["name"], rs))
    collist = ", ".join(ident(c["name"]) for c in cols) + ("" if table["global"] else ", bucket_id")
    for rs, lines in per_rs.items():
        m = st.master(rs)
        for k in range(0, len(lines), BATCH):
            pg.copy_in(m["port"], "%s (%s)" % (rel, collist), "\n".join(lines[k:k + BATCH]) + "\n",
                       what="master %s" % m["name"])
    wait_replicas(cl)
    return {rs: len(lines) for rs, lines in per_rs.items()}


def load(cl: Cluster, name: str, count: int, start: int = 1) -> Dict[str, int]:
    if not (0 < count <= MAX_ROWS):
        raise EmuError("--rows must be between 1 and %d" % MAX_ROWS)
    table = cl.require().table(name)
    return store_rows(cl, table, generate_rows(table, start, count))


def insert(cl: Cluster, name: str, value_texts: Sequence[str]) -> Dict[str, int]:
    table = cl.require().table(name)
    return store_rows(cl, table, parse_values(table, value_texts))


COUNTER_QUERY = ("SELECT relname, seq_scan, coalesce(idx_scan, 0), n_tup_ins, n_tup_upd, n_tup_del, "
                 "n_live_tup FROM pg_stat_user_tables WHERE schemaname = '_picoemu_local'%s ORDER BY relname")


def counters(cl: Cluster, name: Optional[str] = None) -> Dict[str, Dict[str, Dict[str, int]]]:
    st = cl.require()
    if name:
        st.table(name)
    out = {}
    for i in st.active_instances():
        if not cl.running(i):
            continue
        rows = pg.psql(i["port"], COUNTER_QUERY % (" AND relname = %s" % lit(name) if name else ""),
                       what="instance %s" % i["name"])
        out[i["name"]] = {r[0]: {"seq_scan": int(r[1]), "idx_scan": int(r[2]), "n_tup_ins": int(r[3]),
                                 "n_tup_upd": int(r[4]), "n_tup_del": int(r[5]), "n_live_tup": int(r[6])}
                          for r in rows}
    return out
