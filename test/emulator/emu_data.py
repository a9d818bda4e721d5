"""Sharded and global tables of the emulator: create/drop, loading rows into the replicaset that owns
each row's bucket (bucket computed in Python by test/tools/bucket_hash_reference.py and checked again
by the storage trigger in PL/pgSQL), and per-instance access counters."""

import datetime
import decimal
import json
import os
import sys
import uuid

import emu_pg as pg
import emu_sql as sqlgen
from emu_state import EmuError, expand

MAX_ROWS = 1_000_000
BATCH = 50_000


def reference():
    tools = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    try:
        import bucket_hash_reference
    except ImportError as exc:
        raise EmuError("cannot import test/tools/bucket_hash_reference.py: %s" % exc)
    return bucket_hash_reference


def create_table(cl, name, columns, primary_key=None, sharding_key=None, is_global=False, tier=None):
    st = cl.require()
    if not sqlgen.NAME_RE.match(name) or name.startswith("_pico"):
        raise EmuError("bad table name %r (lower-case identifier not starting with _pico)" % name)
    if any(t["name"] == name for t in st.tables):
        raise EmuError("table %s already exists" % name)
    cols = sqlgen.parse_columns(columns)
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
            if c["cls"] not in sqlgen.ENCODER:
                raise EmuError("column %s of type %s cannot be part of a sharding key" % (k, c["type"]))
    st.d["schema_version"] += 1
    table = {"name": name, "id": st.d["next_table_id"], "columns": cols, "primary_key": pk,
             "sharding_key": [] if is_global else sk, "global": bool(is_global), "tier": tier_name,
             "schema_version": st.d["schema_version"]}
    st.d["next_table_id"] += 1
    st.tables.append(table)
    cl.save()
    cl.sync()
    return table


def drop_table(cl, name):
    st = cl.require()
    t = st.table(name)
    st.tables.remove(t)
    st.d["schema_version"] += 1
    cl.save()
    cl.sync(wait=False)
    for r in st.live_replicasets():
        m = st.master(r["name"])
        if cl.running(m):
            pg.psql(m["port"], "DROP VIEW IF EXISTS public.%s CASCADE; DROP TABLE IF EXISTS "
                    "_picoemu_local.%s CASCADE; DROP FUNCTION IF EXISTS _picoemu.%s(); DROP FUNCTION "
                    "IF EXISTS _picoemu.%s();" % (sqlgen.ident(name), sqlgen.ident(name),
                                                   sqlgen.ident("store__" + name),
                                                   sqlgen.ident("route__" + name)),
                    what="master %s" % m["name"])
    cl.wait_replicas()


# ---- values ----------------------------------------------------------------------------------------
def convert(col, value):
    """A JSON value -> the Python value stored (and hashed) for this column."""
    if value is None:
        return None
    cls = col["cls"]
    try:
        if cls == "int":
            if isinstance(value, bool) or isinstance(value, float):
                raise ValueError("not an integer")
            if isinstance(value, decimal.Decimal):
                if value != value.to_integral_value():
                    raise ValueError("not an integer")
                return int(value)
            return int(value)
        if cls == "text":
            if not isinstance(value, str):
                raise ValueError("not a string")
            return value
        if cls == "bool":
            if not isinstance(value, bool):
                raise ValueError("not a boolean")
            return value
        if cls == "double":
            if isinstance(value, bool):
                raise ValueError("not a number")
            return float(value)
        if cls == "decimal":
            if isinstance(value, (bool, float)):
                raise ValueError("give decimals as strings or JSON numbers")
            d = decimal.Decimal(str(value))
            if not d.is_finite():
                raise ValueError("not finite")
            if col["scale"] is not None:
                d = d.quantize(decimal.Decimal(1).scaleb(-col["scale"]))
            elif d.as_tuple().exponent > 0:
                d = d.quantize(decimal.Decimal(1))
            return d
        if cls == "uuid":
            return uuid.UUID(str(value))
        if cls == "datetime":
            return str(value)
    except (ValueError, TypeError, decimal.InvalidOperation) as exc:
        raise EmuError("bad value %r for column %s (%s): %s" % (value, col["name"], col["type"], exc))
    raise EmuError("unsupported column class %s" % cls)


def copy_text(value):
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, float):
        return repr(value)
    s = str(value)
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def parse_values(table, texts):
    rows = []
    for text in texts:
        try:
            v = json.loads(text, parse_float=decimal.Decimal)
        except ValueError as exc:
            raise EmuError("--values %r is not JSON: %s" % (text, exc))
        cols = table["columns"]
        if isinstance(v, dict):
            unknown = set(v) - {c["name"] for c in cols}
            if unknown:
                raise EmuError("unknown column(s) %s" % ", ".join(sorted(unknown)))
            v = [v.get(c["name"]) for c in cols]
        if not isinstance(v, list) or len(v) != len(cols):
            raise EmuError("--values %r: expected a JSON array of %d values (%s) or an object"
                           % (text, len(cols), ", ".join(c["name"] for c in cols)))
        rows.append(v)
    return rows


def generate_rows(table, start, count):
    """Deterministic rows: row i has i in integer key columns, '<column>_<i>' in text columns, ..."""
    rows = []
    base = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    for i in range(start, start + count):
        row = []
        for c in table["columns"]:
            cls, key = c["cls"], c["name"] in table["primary_key"]
            if cls == "int":
                row.append(i if key else (i * 7) % 1000)
            elif cls == "text":
                row.append("%s_%d" % (c["name"], i))
            elif cls == "bool":
                row.append(i % 2 == 0)
            elif cls == "double":
                row.append(i * 0.5)
            elif cls == "decimal":
                row.append(str(decimal.Decimal(i).scaleb(-2)))
            elif cls == "uuid":
                row.append(str(uuid.uuid5(uuid.NAMESPACE_OID, "%s.%s.%d" % (table["name"], c["name"], i))))
            else:
                row.append((base + datetime.timedelta(seconds=i)).isoformat())
        rows.append(row)
    return rows


def store_rows(cl, table, raw_rows):
    """Converts, hashes and stores rows; returns {replicaset: count}."""
    st = cl.require()
    cols = table["columns"]
    rows = [[convert(c, v) for c, v in zip(cols, r)] for r in raw_rows]
    for r in rows:
        for c, v in zip(cols, r):
            if v is None and (c["not_null"] or c["name"] in table["primary_key"]):
                raise EmuError("column %s of table %s cannot be NULL" % (c["name"], table["name"]))
    rel = "_picoemu_local.%s" % sqlgen.ident(table["name"])
    per_rs = {}
    if table["global"]:
        targets = [r["name"] for r in st.live_replicasets()]
        lines = ["\t".join(copy_text(v) for v in r) for r in rows]
        for rs in targets:
            per_rs[rs] = lines
    else:
        ref = reference()
        tier = st.tier(table["tier"])
        owners = expand(st.d["buckets"][table["tier"]], tier["bucket_count"])
        idx = [[c["name"] for c in cols].index(k) for k in table["sharding_key"]]
        rule = st.hash_rule()
        for r in rows:
            b = ref.bucket_id([r[k] for k in idx], tier["bucket_count"], rule)
            per_rs.setdefault(owners[b], []).append("\t".join([copy_text(v) for v in r] + [str(b)]))
    for rs, lines in per_rs.items():
        m = st.master(rs)
        if not cl.running(m):
            raise EmuError("master %s of replicaset %s is stopped; cannot store rows there" % (m["name"], rs))
    collist = ", ".join(sqlgen.ident(c["name"]) for c in cols) + ("" if table["global"] else ", bucket_id")
    for rs, lines in per_rs.items():
        m = st.master(rs)
        for k in range(0, len(lines), BATCH):
            pg.copy_in(m["port"], "%s (%s)" % (rel, collist), "\n".join(lines[k:k + BATCH]) + "\n",
                       what="master %s" % m["name"])
    cl.wait_replicas()
    return {rs: len(lines) for rs, lines in per_rs.items()}


def load(cl, name, count, start=1):
    if not (0 < count <= MAX_ROWS):
        raise EmuError("--rows must be between 1 and %d" % MAX_ROWS)
    table = cl.require().table(name)
    return store_rows(cl, table, generate_rows(table, start, count))


def insert(cl, name, value_texts):
    table = cl.require().table(name)
    return store_rows(cl, table, parse_values(table, value_texts))


COUNTER_QUERY = ("SELECT relname, seq_scan, coalesce(idx_scan, 0), n_tup_ins, n_tup_upd, n_tup_del, "
                 "n_live_tup FROM pg_stat_user_tables WHERE schemaname = '_picoemu_local'%s ORDER BY relname")


def counters(cl, name=None):
    st = cl.require()
    if name:
        st.table(name)
    out = {}
    for i in st.active_instances():
        if not cl.running(i):
            continue
        rows = pg.psql(i["port"], COUNTER_QUERY % (" AND relname = %s" % sqlgen.lit(name) if name else ""),
                       what="instance %s" % i["name"])
        out[i["name"]] = {r[0]: {"seq_scan": int(r[1]), "idx_scan": int(r[2]), "n_tup_ins": int(r[3]),
                                 "n_tup_upd": int(r[4]), "n_tup_del": int(r[5]), "n_live_tup": int(r[6])}
                          for r in rows}
    return out
