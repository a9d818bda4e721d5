"""SQL the emulator runs on its servers: the static schema of an instance (Picodata's catalog tables,
the hash functions, strict-mode helpers), the catalog rows generated from the state, and the
per-replicaset objects of sharded tables (storage, postgres_fdw foreign tables, views, triggers).

The functions, triggers and catalog views are written in SQL files under sql/ (see sql_file() for
their placeholders); what depends on the state (views over the bucket ranges, foreign tables, rows)
is generated here."""

import hashlib
import json
import os
import re

import emu_caps
from emu_state import (ADMIN_PASSWORD, ADMIN_USER, CLIENT_PASSWORD, CLIENT_USER,
                       DB_NAME, EmuError, compact_json)


def ident(name):
    return '"' + name.replace('"', '""') + '"'


def lit(value):
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


# ---- user table columns ----------------------------------------------------------------------------
# (regex on the lower-cased type, canonical PostgreSQL type, class used for hashing, Picodata type)
_TYPES = [
    (r"smallint|int2", "int2", "int", "integer"),
    (r"integer|int|int4", "int4", "int", "integer"),
    (r"bigint|int8", "int8", "int", "integer"),
    (r"text|string", "text", "text", "string"),
    (r"(varchar|character varying)\s*\(\s*\d+\s*\)", None, "text", "string"),
    (r"varchar|character varying", "varchar", "text", "string"),
    (r"bool|boolean", "boolean", "bool", "boolean"),
    (r"float8|double precision|double", "float8", "double", "double"),
    (r"(numeric|decimal)\s*\(\s*\d+\s*(,\s*\d+\s*)?\)", None, "decimal", "decimal"),
    (r"numeric|decimal", "numeric", "decimal", "decimal"),
    (r"uuid", "uuid", "uuid", "uuid"),
    (r"timestamptz|timestamp with time zone|datetime", "timestamptz", "datetime", "datetime"),
]
NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


def _split_top(spec):
    parts, depth, cur = [], 0, ""
    for ch in spec:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_columns(spec):
    cols = []
    for part in _split_top(spec):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s+(.+?)(\s+not\s+null)?$", part, re.I)
        if not m:
            raise EmuError("cannot parse column definition %r (expected `name type [not null]`)" % part)
        name, typ, nn = m.group(1).lower(), " ".join(m.group(2).lower().split()), bool(m.group(3))
        if not NAME_RE.match(name) or name == "bucket_id":
            raise EmuError("bad column name %r (lower-case identifier, not bucket_id)" % name)
        for rx, canon, cls, pico in _TYPES:
            if re.fullmatch(rx, typ):
                pgtype = canon or typ.replace(" ", "")
                scale = None
                if cls == "decimal":
                    sm = re.search(r",\s*(\d+)", typ)
                    scale = int(sm.group(1)) if sm else (0 if "(" in typ else None)
                cols.append({"name": name, "type": pgtype, "cls": cls, "pico": pico,
                             "not_null": nn, "scale": scale})
                break
        else:
            raise EmuError("unsupported column type %r for %s (supported: int2 int4 int8 text varchar "
                           "bool float8 numeric uuid timestamptz)" % (typ, name))
    if not cols:
        raise EmuError("--columns lists no column")
    if len({c["name"] for c in cols}) != len(cols):
        raise EmuError("duplicate column name in --columns")
    return cols


ENCODER = {"int": "_picoemu.enc_int((%s)::int8)", "text": "_picoemu.enc_text((%s)::text)",
           "bool": "_picoemu.enc_bool(%s)", "double": "_picoemu.enc_double((%s)::float8)",
           "decimal": "_picoemu.enc_decimal((%s)::numeric)", "uuid": "_picoemu.enc_uuid(%s)"}


def hash_expr(table, bucket_count, rec="NEW"):
    by_name = {c["name"]: c for c in table["columns"]}
    parts = [ENCODER[by_name[k]["cls"]] % ("%s.%s" % (rec, ident(k))) for k in table["sharding_key"]]
    return "_picoemu.bucket_id(%s, %d)" % (" || ".join(parts), bucket_count)


def distribution_json(table):
    if table["global"]:
        return compact_json({"Global": None})
    return compact_json({"ShardedImplicitly": [table["sharding_key"], "murmur3", table["tier"]]})


def opts_json(table):
    """_pico_table.opts (26.1.1+, a column only there: schema.sql): TableDef.opts, a list of
    TableOption, each a one-key map whose value is the variant's fields, [true] (src/schema.rs:77-93
    at 26.1.1; test/int/test_unlogged.py: [{"unlogged": [True]}]); [] for a table created without
    options (src/sql.rs:1569-1575 at 26.1.1)."""
    return [{"unlogged": [True]}] if table.get("unlogged") else []


def format_json(table):
    fields = [{"name": c["name"], "field_type": c["pico"],
               "is_nullable": not (c["not_null"] or c["name"] in table["primary_key"])}
              for c in table["columns"]]
    if not table["global"]:
        fields.append({"name": "bucket_id", "field_type": "unsigned", "is_nullable": True})
    return compact_json(fields)


def primary_index(table):
    """The _pico_index row of a table's primary key: index 0, `parts` one [field, type, collation,
    is_nullable, path] per key column (test/int/test_basics.py:451@25.5.10)."""
    by_name = {c["name"]: c for c in table["columns"]}
    return {"table_id": table["id"], "id": 0, "name": "%s_pkey" % table["name"], "type": "tree",
            "opts": [{"unique": True}], "parts": [[k, by_name[k]["pico"], None, False, None]
                                                  for k in table["primary_key"]],
            "operable": True, "schema_version": table["schema_version"]}


# ---- SQL files (sql/*.sql) ------------------------------------------------------------------------
SQL_DIR = os.path.join(os.path.dirname(os.path.realpath(__file__)), "sql")
_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
_file_cache = {}


def sql_file(file_name, /, **values):
    """The SQL of sql/<file_name> without its header (its documentation: the comment lines up to the
    first empty line) and final newline, each {{key}} replaced by values[key] in one pass (a value is
    never expanded again). The values are SQL already: the caller quotes names with ident() and
    values with lit(). A placeholder without a value, or a value without a placeholder, is an
    error."""
    if file_name not in _file_cache:
        try:
            with open(os.path.join(SQL_DIR, file_name)) as f:
                lines = f.read().split("\n")
        except OSError as exc:
            raise EmuError("cannot read the emulator's SQL file %s: %s" % (file_name, exc))
        if lines[0].startswith("--") and "" in lines:
            del lines[:lines.index("") + 1]
        _file_cache[file_name] = "\n".join(lines).rstrip("\n")
    text = _file_cache[file_name]
    wanted = set(_PLACEHOLDER.findall(text))
    if wanted != set(values):
        raise EmuError("sql/%s: placeholders %s, values given for %s" % (file_name, sorted(wanted), sorted(values)))
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)


def static_schema_sql(auth, version):
    """Run once on the template server (database DB_NAME), copied into every master: the roles, the
    catalog views, the emulator's tables, the hash functions, strict mode and routing by key.
    `version`: the emulated version (_pico_table has the column opts from 26.1)."""
    opts = ", opts json" if emu_caps.has("unlogged_tables", version) else ""
    schema = sql_file("schema.sql", password_encryption=lit("md5" if auth == "md5" else "scram-sha-256"),
                      admin=ident(ADMIN_USER), admin_pw=lit(ADMIN_PASSWORD),
                      client=ident(CLIENT_USER), client_pw=lit(CLIENT_PASSWORD), table_opts=opts)
    return "\n".join([schema, sql_file("hash.sql"), sql_file("strict.sql"), sql_file("key_route.sql"),
                      sql_file("truncate.sql"), sql_file("part.sql")])


# ---- catalog rows ----------------------------------------------------------------------------------
def _values(rows):
    return ",\n".join("(" + ", ".join(v for v in row) + ")" for row in rows)


def catalog_doc(st):
    """The catalog as the JSON document every instance reads (picoemu_catalog.json): one list of row
    objects per catalog table, plus the bucket ranges behind _pico_bucket."""
    rs_by_name = {r["name"]: r for r in st.replicasets}
    release = st.version  # the emulated build, as it reports itself
    insts, peers = [], []
    host = "0.0.0.0" if st.d["advertise_wildcard"] else "127.0.0.1"
    for i in st.instances:
        state = [("Expelled" if i["expelled"] else i["state"]), i["incarnation"]]
        insts.append({"name": i["name"], "uuid": i["uuid"], "raft_id": i["raft_id"],
                      "replicaset_name": i["replicaset"], "replicaset_uuid": rs_by_name[i["replicaset"]]["uuid"],
                      "current_state": state, "target_state": state, "failure_domain": {}, "tier": i["tier"],
                      "picodata_version": release, "sync_incarnation": i["incarnation"],
                      "target_state_reason": None, "target_state_change_time": i["state_change_time"]})
        peers.append({"raft_id": i["raft_id"], "address": "127.0.0.1:%d" % i["iproto_port"],
                      "connection_type": "iproto"})
        peers.append({"raft_id": i["raft_id"], "address": "%s:%d" % (host, st.advertised_port(i)),
                      "connection_type": "pgproto"})
    tier_by_name = {t["name"]: t for t in st.tiers}
    rss = []
    for r in st.replicasets:
        t = tier_by_name[r["tier"]]
        rss.append({"name": r["name"], "uuid": r["uuid"], "current_master_name": r["master"],
                    "target_master_name": r["master"], "tier": r["tier"], "weight": float(r["weight"]),
                    "weight_origin": r["weight_origin"], "state": r["state"],
                    "current_config_version": r["config_version"], "target_config_version": r["config_version"],
                    "promotion_vclock": {}, "master_change_counter": r["master_change_counter"],
                    "current_bucket_state_version": t["bucket_state_version"],
                    "target_bucket_state_version": t["bucket_state_version"]})
    tiers = [{"name": t["name"], "replication_factor": t["replication_factor"], "can_vote": t["can_vote"],
              "current_vshard_config_version": t["vshard_config_version"],
              "target_vshard_config_version": t["vshard_config_version"],
              "vshard_bootstrapped": t["bucket_count"] > 0, "bucket_count": t["bucket_count"],
              "is_default": t["is_default"], "current_bucket_state_version": t["bucket_state_version"],
              "target_bucket_state_version": t["bucket_state_version"]} for t in st.tiers]
    tables = [{"id": t["id"], "name": t["name"], "distribution": json.loads(distribution_json(t)),
               "format": json.loads(format_json(t)), "schema_version": t["schema_version"], "operable": True,
               "engine": "memtx", "owner": 1, "description": "", "opts": opts_json(t)} for t in st.tables]
    indexes = [primary_index(t) for t in st.tables]
    buckets = [{"tier": tier, "bucket_start": a, "bucket_end": b, "replicaset_name": rs,
                "replicaset_uuid": rs_by_name[rs]["uuid"]}
               for tier, ranges in st.d["buckets"].items() for a, b, rs in ranges]
    return compact_json({"_pico_instance": insts, "_pico_peer_address": peers, "_pico_replicaset": rss,
                         "_pico_tier": tiers, "_pico_table": tables, "_pico_index": indexes, "buckets": buckets,
                         "grants": st.d["grants"]}) + "\n"


def catalog_sql(st):
    """What the masters' storage triggers and strict mode read from tables: the bucket ranges and the
    strict setting."""
    rs_by_name = {r["name"]: r for r in st.replicasets}
    range_rows = []
    for tier, ranges in st.d["buckets"].items():
        for start, end, rs in ranges:
            range_rows.append([lit(tier), lit(start), lit(end), lit(rs), lit(rs_by_name[rs]["uuid"])])
    out = "DELETE FROM _picoemu.bucket_range;\n"
    if range_rows:
        out += ("INSERT INTO _picoemu.bucket_range (tier, bucket_start, bucket_end, replicaset_name, "
                "replicaset_uuid) VALUES\n%s;\n" % _values(range_rows))
    out += ("INSERT INTO _picoemu.setting VALUES ('strict', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;\n" % lit("on" if st.d["strict"] else "off"))
    # the cluster's read_preference (picoemu set read_preference): a session that names none takes
    # it (_picoemu.read_part(), strict.sql)
    out += ("INSERT INTO _picoemu.setting VALUES ('read_preference', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;\n" % lit(st.d.get("read_preference", "leader")))
    return out


# ---- per-replicaset objects -------------------------------------------------------------------------
def _pred(ranges):
    if not ranges:
        return "false"
    return "(" + " OR ".join("bucket_id BETWEEN %d::int8 AND %d::int8" % (a, b) for a, b in ranges) + ")"


def _multirange(ranges):
    return "{" + ",".join("[%d,%d]" % (a, b) for a, b in ranges) + "}"


def _branch_pred(ranges, prune):
    """The ranges of one branch of a view, on _bucket (a copy of bucket_id). With prune (26.2.1+), the
    equivalence bucket_id = _bucket lets the planner carry a query's bucket_id = N over to _bucket and
    exclude the branches that cannot hold N (constraint_exclusion = on); a range condition on
    bucket_id is not carried over, so bucket_id BETWEEN never restricts. Without prune, nothing ties
    the two columns: every branch runs and only filters."""
    if not ranges:
        return "false"
    p = "(" + " OR ".join("_bucket BETWEEN %d::int8 AND %d::int8" % (a, b) for a, b in ranges) + ")"
    return ("bucket_id = _bucket AND " + p) if prune else p


def server_name(rs_name):
    return "picoemu_" + rs_name


def remote_rel(table, rs_name):
    return "_picoemu_remote.%s" % ident("%s__%s" % (table["name"], rs_name))


LOCAL = "_picoemu_local.%s"


def _dispatch(var, targets, make_stmt, what):
    """IF var = 'rs1' THEN <stmt on rel1> ELSIF ... ELSE RAISE."""
    bucket = "OLD.bucket_id" if var == "old_owner" else "nb"
    out = []
    for n, (rs, rel) in enumerate(targets):
        out.append("%s %s = %s THEN %s;" % ("IF" if n == 0 else "ELSIF", var, lit(rs), make_stmt(rel)))
    out.append("ELSE RAISE EXCEPTION 'picoemu: %s: no replicaset for bucket %%', %s; END IF;"
               % (what, bucket))
    return "\n    ".join(out)


def _unchanged(t, rec="OLD"):
    """The row that the statement read is still there, unchanged: the primary key and bucket_id
    equal, every other column not distinct (NULLs compare equal). postgres_fdw ships it to the peer."""
    terms = ["%s = %s.%s" % (ident(k), rec, ident(k)) for k in t["primary_key"]]
    terms += ["%s IS NOT DISTINCT FROM %s.%s" % (ident(c["name"]), rec, ident(c["name"]))
              for c in t["columns"] if c["name"] not in t["primary_key"]]
    if not t["global"]:
        terms.append("bucket_id = %s.bucket_id" % rec)
    return " AND ".join(terms)


def _or_changed(t):
    """After an UPDATE or DELETE of the row the statement read (_unchanged): when no row matched, a
    concurrent write changed or removed it after the statement's snapshot. Writing the values computed
    from the old row would lose that write (PostgreSQL re-evaluates SET and WHERE on the newest row
    version only for a plain table, not behind a view's INSTEAD OF trigger), so the statement fails
    with SQLSTATE 40001, rolling back everything it did, and the front runs it again (emu_front.py,
    "retry"): as on Picodata's storage, which applies a row update atomically, the client sees one
    result computed from the row as it is when the statement applies."""
    return ("IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = %s; END IF"
            % lit("picoemu: a row of table \"%s\" changed under a concurrent write; "
                  "the statement is run again" % t["name"]))


def table_ddl(st, t, self_rs, peers, has_replica=False):
    """Objects of one user table on the master of replicaset self_rs. peers: [rs_name] of the other
    live replicasets that have a foreign server; has_replica: self_rs has a replica (the foreign
    server picoemu_replica)."""
    name = ident(t["name"])
    cols = t["columns"]
    cnames = [c["name"] for c in cols]
    col_defs = ", ".join("%s %s%s" % (ident(c["name"]), c["type"], " NOT NULL" if c["not_null"] else "")
                         for c in cols)
    sharded = not t["global"]
    out = []
    pk = ", ".join(ident(k) for k in t["primary_key"])
    if sharded:
        # _bucket repeats bucket_id: the views restrict each branch by _bucket, so that only an
        # equality on bucket_id (through the equivalence bucket_id = _bucket) can prune a branch, never
        # a range such as bucket_id BETWEEN a AND b (see _branch_pred)
        # an unlogged table (26.1+) is a PostgreSQL UNLOGGED table: not replicated to the standbys
        # (which cannot read it) and empty on a promoted standby, as Picodata's (data-temporary
        # spaces, truncated when an instance becomes read-only: src/schema.rs:77-86 at 26.1.1)
        out.append("CREATE %sTABLE IF NOT EXISTS %s (%s, bucket_id bigint NOT NULL, _bucket bigint GENERATED "
                   "ALWAYS AS (bucket_id) STORED, PRIMARY KEY (%s));"
                   % ("UNLOGGED " if t.get("unlogged") else "", LOCAL % name, col_defs, pk))
        out.append("CREATE INDEX IF NOT EXISTS %s ON %s (bucket_id);"
                   % (ident(t["name"] + "_bucket_id"), LOCAL % name))
    else:
        out.append("CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s));" % (LOCAL % name, col_defs, pk))
    all_cols = cnames + (["bucket_id"] if sharded else [])
    sel = ", ".join(ident(c) for c in all_cols)
    ft_cols = col_defs + (", bucket_id bigint, _bucket bigint GENERATED ALWAYS AS (bucket_id) STORED"
                          if sharded else "")
    tier = st.tier(t["tier"]) if sharded else None
    if sharded:
        peers = [p for p in peers if st.replicaset(p)["tier"] == t["tier"]]
    for rs in peers:
        out.append("CREATE FOREIGN TABLE %s (%s) SERVER %s OPTIONS (schema_name '_picoemu_local', "
                   "table_name %s);" % (remote_rel(t, rs), ft_cols, ident(server_name(rs)), lit(t["name"])))
    if sharded:
        for part in ["self"] + (["replica"] if has_replica else []):
            out.append("CREATE FOREIGN TABLE %s (%s) SERVER %s OPTIONS (schema_name '_picoemu_local', "
                       "table_name %s);" % (remote_rel(t, part), ft_cols, ident(server_name(part)),
                                            lit(t["name"])))
    tname = lit(t["name"])
    if sharded:
        n = tier["bucket_count"]
        # storage trigger: computes bucket_id, refuses rows of buckets this replicaset does not own,
        # and makes a write to a bucket being moved away wait for the move
        out.append(sql_file("store_trigger.sql", fn=ident("store__" + t["name"]), hash=hash_expr(t, n),
                            tname=tname, tier=lit(t["tier"]), local=LOCAL % name))
        ranges = {}
        for a, b, rs in st.d["buckets"][t["tier"]]:
            ranges.setdefault(rs, []).append((a, b))
        prune = st.cap("prune_by_bucket_id")
        own = _branch_pred(ranges.get(self_rs, []), prune)
        # this replicaset's part: the local storage, its master through picoemu_self (a standby
        # without read_preference, or a version without local execution), or a replica through
        # picoemu_replica (a master asked for replica reads); see _picoemu.read_part()
        # routing by the sharding key (every version): a branch runs only if the statement does
        # not fix the key to a literal of a bucket another replicaset owns (_picoemu.asked, a
        # one-time filter evaluated before the branch's scan starts)
        by_name = {c["name"]: c for c in cols}
        # a write split into parts (sql/part.sql): a branch runs only when its buckets meet the
        # part's, and reads only the rows of the part's buckets (both folded at planning)
        asked = lambda rs: "_picoemu.asked(%s, %s, %s, ARRAY[%s]::text[], ARRAY[%s]::text[], %d, ARRAY[%s]::int8[], %s)" % (
            tname, lit(t["tier"]), lit(rs), ", ".join(lit(k) for k in t["sharding_key"]),
            ", ".join(lit(by_name[k]["cls"]) for k in t["sharding_key"]), n,
            ", ".join("%d, %d" % r for r in ranges.get(rs, [])),
            "true" if prune else "false") + (
            " AND _picoemu.in_part(%s, %s::int8multirange) AND (_picoemu.part_rows(%s) IS NULL OR "
            "_picoemu.part_rows(%s) @> _bucket)" % (tname, lit(_multirange(ranges.get(rs, []))), tname, tname))
        branches = ["SELECT %s FROM %s WHERE %s AND _picoemu.read_part() = 'local' AND %s"
                    % (sel, LOCAL % name, own, asked(self_rs)),
                    "SELECT %s FROM %s WHERE %s AND _picoemu.read_part() = 'self' AND %s"
                    % (sel, remote_rel(t, "self"), own, asked(self_rs))]
        if has_replica:  # without one, read_part() refuses to answer 'replica' (strict.sql)
            branches.append("SELECT %s FROM %s WHERE %s AND _picoemu.read_part() = 'replica' AND %s"
                            % (sel, remote_rel(t, "replica"), own, asked(self_rs)))
        for rs in peers:
            if not ranges.get(rs):
                continue
            p = _branch_pred(ranges[rs], prune)
            branches.append("SELECT %s FROM %s WHERE %s AND %s AND NOT _picoemu.strict_enabled()"
                            % (sel, remote_rel(t, rs), p, asked(rs)))
            branches.append("SELECT %s FROM %s WHERE %s AND %s AND _picoemu.strict_enabled() AND "
                            "_picoemu.refuse(%s, %s, bucket_id)" % (sel, remote_rel(t, rs), p, asked(rs), tname,
                                                                   lit(t["tier"])))
        nulls = ", ".join("NULL::%s AS %s" % (c["type"], ident(c["name"])) for c in cols)
        branches.append("SELECT %s, g.bucket_id FROM _picoemu.guard_buckets(%s) AS g(bucket_id) WHERE "
                        "_picoemu.strict_enabled() AND _picoemu.refuse(%s, %s, g.bucket_id)"
                        % (nulls, lit(t["tier"]), tname, lit(t["tier"])))
        out.append("CREATE VIEW public.%s AS\n  %s;" % (name, "\nUNION ALL\n  ".join(branches)))
        owner_case = "CASE " + " ".join("WHEN %%s BETWEEN %d AND %d THEN %s" % (a, b, lit(rs))
                                          for a, b, rs in st.d["buckets"][t["tier"]]) + " END"
        targets = [(self_rs, LOCAL % name)] + [(rs, remote_rel(t, rs)) for rs in peers]
        key_match = _unchanged(t)
        ins = lambda rel: "INSERT INTO %s (%s) VALUES (%s)" % (
            rel, sel, ", ".join("NEW.%s" % ident(c) for c in all_cols))
        upd = lambda rel: "UPDATE %s SET %s WHERE %s; %s" % (
            rel, ", ".join("%s = NEW.%s" % (ident(c), ident(c)) for c in cnames), key_match, _or_changed(t))
        dele = lambda rel: "DELETE FROM %s WHERE %s; %s" % (rel, key_match, _or_changed(t))
        strict_check = ("IF %%s <> %s AND _picoemu.strict_enabled() THEN PERFORM _picoemu.refuse(%s, %s, %%s); END IF;"
                        % (lit(self_rs), tname, lit(t["tier"])))
        out.append(sql_file("route_sharded.sql", fn=ident("route__" + t["name"]), hash=hash_expr(t, n),
                            old_case=owner_case.replace("%s", "OLD.bucket_id"),
                            new_case=owner_case.replace("%s", "nb"),
                            old_check=strict_check % ("old_owner", "OLD.bucket_id"),
                            new_check=strict_check % ("owner", "nb"),
                            del_old=_dispatch("old_owner", targets, dele, "delete"),
                            upd=_dispatch("owner", targets, upd, "update"),
                            ins=_dispatch("owner", targets, ins, "insert"), name=name, tname=tname))
    else:
        out.append("CREATE VIEW public.%s AS SELECT %s FROM %s;" % (name, sel, LOCAL % name))
        key_match = _unchanged(t)
        # every coordinator writes the copies in the same order, the replicasets by name (its own copy
        # in its place, not first): a global write then waits for a row lock only at the first master,
        # where PostgreSQL detects any deadlock (40P01, and the front runs the statement again); in
        # any other order two coordinators lock their own copies first and wait for each other across
        # servers, which no server can see, for ever
        rels = [LOCAL % name if rs == self_rs else remote_rel(t, rs) for rs in sorted(peers + [self_rs])]
        ins = "\n    ".join("INSERT INTO %s (%s) VALUES (%s);" % (r, sel, ", ".join("NEW.%s" % ident(c) for c in cnames)) for r in rels)
        upd = "\n    ".join("UPDATE %s SET %s WHERE %s; %s;" % (r, ", ".join("%s = NEW.%s" % (ident(c), ident(c)) for c in cnames), key_match, _or_changed(t)) for r in rels)
        dele = "\n    ".join("DELETE FROM %s WHERE %s; %s;" % (r, key_match, _or_changed(t)) for r in rels)
        out.append(sql_file("route_global.sql", fn=ident("route__" + t["name"]), ins=ins, upd=upd, dele=dele,
                            name=name))
    out.append("GRANT SELECT, INSERT, UPDATE, DELETE ON public.%s TO PUBLIC;" % name)
    return "\n".join(out)


def ddl_sql(st, self_rs, serving_ports, replica_port=None):
    """Objects that depend on the topology, for the master of self_rs. serving_ports: rs -> port of
    the instance the other replicasets reach (its master, stopped or not); replica_port: the port of
    the replica of self_rs its master reads its part from when asked for replica reads (None when
    it has none)."""
    out = []
    # The views are locked first: a writer locks the view before the foreign tables and storage behind
    # it, so taking them in the same order cannot deadlock with writes in flight (they are waited for).
    out.append(sql_file("drop_topology.sql"))
    peers = [r["name"] for r in st.replicasets if r["state"] != "expelled" and r["name"] != self_rs]
    parts = peers + ["self"] + (["replica"] if replica_port is not None else [])
    for rs in parts:
        port = replica_port if rs == "replica" else serving_ports[self_rs if rs == "self" else rs]
        out.append("CREATE SERVER %s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', "
                   "port %s, dbname %s, fetch_size '10000', connect_timeout '5', "
                   "application_name %s);" % (ident(server_name(rs)), lit(str(port)),
                                              lit(DB_NAME), lit("picoemu_fdw")))
        out.append("CREATE USER MAPPING FOR PUBLIC SERVER %s OPTIONS (user %s, password %s);"
                   % (ident(server_name(rs)), lit(ADMIN_USER), lit(ADMIN_PASSWORD)))
    for t in st.tables:
        out.append(table_ddl(st, t, self_rs, peers, has_replica=replica_port is not None))
    out.append("DELETE FROM _picoemu.guard;")
    for t in st.tiers:
        if t["bucket_count"] > 0:
            out.append("INSERT INTO _picoemu.guard SELECT %s, g FROM generate_series(1, %d) g WHERE NOT "
                       "EXISTS (SELECT 1 FROM _picoemu.bucket_range r WHERE r.tier = %s AND g BETWEEN "
                       "r.bucket_start AND r.bucket_end AND r.replicaset_name = %s);"
                       % (lit(t["name"]), t["bucket_count"], lit(t["name"]), lit(self_rs)))
    if st.d["bucket_function"]:
        out.append(sql_file("bucket_function.sql"))
    else:
        out.append("DROP FUNCTION IF EXISTS public._pico_bucket(text);")
    return "\n".join(out) + "\n"


def ddl_hash(sql):
    return hashlib.sha256(sql.encode()).hexdigest()[:16]
