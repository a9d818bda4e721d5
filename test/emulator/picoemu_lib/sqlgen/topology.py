"""The objects of a master that depend on the topology (postgres_fdw servers and foreign tables, the
views of sharded tables over the bucket ranges, their triggers; see the README's "Sharded tables"),
rebuilt on every topology change (cluster.sync): ddl_sql and its hash."""

import hashlib
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from .. import buckets
from ..state import ADMIN_PASSWORD, ADMIN_USER, DB_NAME, State, Table
from .columns import hash_expr
from .text import ident, lit, sql_file


LOCAL = "_picoemu_local.%s"


def bucket_pred(ranges: Sequence[buckets.Range]) -> str:
    """bucket_id in one of the ranges (false for none): the rows of those buckets in a storage."""
    if not ranges:
        return "false"
    return "(" + " OR ".join("bucket_id BETWEEN %d::int8 AND %d::int8" % (a, b) for a, b in ranges) + ")"


def _branch_pred(ranges: Sequence[buckets.Range], prune: bool) -> str:
    """The ranges of one branch of a view, on _bucket (a copy of bucket_id). With prune (26.2.1+), the
    equivalence bucket_id = _bucket lets the planner carry a query's bucket_id = N over to _bucket and
    exclude the branches that cannot hold N (constraint_exclusion = on); a range condition on
    bucket_id is not carried over, so bucket_id BETWEEN never restricts. Without prune, nothing ties
    the two columns: every branch runs and only filters."""
    if not ranges:
        return "false"
    p = "(" + " OR ".join("_bucket BETWEEN %d::int8 AND %d::int8" % (a, b) for a, b in ranges) + ")"
    return ("bucket_id = _bucket AND " + p) if prune else p


def server_name(rs_name: str) -> str:
    return "picoemu_" + rs_name


def remote_rel(table: Table, rs_name: str) -> str:
    return "_picoemu_remote.%s" % ident("%s__%s" % (table["name"], rs_name))


def _dispatch(var: str, targets: Sequence[Tuple[str, str]], make_stmt: Callable[[str], str], what: str) -> str:
    """IF var = 'rs1' THEN <stmt on rel1> ELSIF ... ELSE RAISE."""
    bucket = "OLD.bucket_id" if var == "old_owner" else "nb"
    out = []
    for n, (rs, rel) in enumerate(targets):
        out.append("%s %s = %s THEN %s;" % ("IF" if n == 0 else "ELSIF", var, lit(rs), make_stmt(rel)))
    out.append("ELSE RAISE EXCEPTION 'picoemu: %s: no replicaset for bucket %%', %s; END IF;"
               % (what, bucket))
    return "\n    ".join(out)


def _unchanged(t: Table, rec: str = "OLD") -> str:
    """The row that the statement read is still there, unchanged: the primary key and bucket_id
    equal, every other column not distinct (NULLs compare equal). postgres_fdw ships it to the peer."""
    terms = ["%s = %s.%s" % (ident(k), rec, ident(k)) for k in t["primary_key"]]
    terms += ["%s IS NOT DISTINCT FROM %s.%s" % (ident(c["name"]), rec, ident(c["name"]))
              for c in t["columns"] if c["name"] not in t["primary_key"]]
    if not t["global"]:
        terms.append("bucket_id = %s.bucket_id" % rec)
    return " AND ".join(terms)


def _or_changed(t: Table) -> str:
    """After an UPDATE or DELETE of the row the statement read (_unchanged): when no row matched, a
    concurrent write changed or removed it after the statement's snapshot. Writing the values computed
    from the old row would lose that write (PostgreSQL re-evaluates SET and WHERE on the newest row
    version only for a plain table, not behind a view's INSTEAD OF trigger), so the statement fails
    with SQLSTATE 40001, rolling back everything it did, and the front runs it again (front.rerun):
    as on Picodata's storage, which applies a row update atomically, the client sees one result
    computed from the row as it is when the statement applies."""
    return ("IF NOT FOUND THEN RAISE EXCEPTION USING ERRCODE = '40001', MESSAGE = %s; END IF"
            % lit("picoemu: a row of table \"%s\" changed under a concurrent write; "
                  "the statement is run again" % t["name"]))


class _TableText:
    """The pieces of SQL text every object of one user table uses."""

    def __init__(self, t: Table) -> None:
        self.t = t
        self.name = ident(t["name"])
        self.tname = lit(t["name"])
        self.sharded = not t["global"]
        self.cnames: List[str] = [c["name"] for c in t["columns"]]
        self.col_defs = ", ".join("%s %s%s" % (ident(c["name"]), c["type"], " NOT NULL" if c["not_null"] else "")
                                  for c in t["columns"])
        self.all_cols = self.cnames + (["bucket_id"] if self.sharded else [])
        self.sel = ", ".join(ident(c) for c in self.all_cols)
        self.ft_cols = self.col_defs + (", bucket_id bigint, _bucket bigint GENERATED ALWAYS AS (bucket_id) STORED"
                                        if self.sharded else "")
        self.local = LOCAL % self.name


def _storage(x: _TableText) -> List[str]:
    t = x.t
    pk = ", ".join(ident(k) for k in t["primary_key"])
    if not x.sharded:
        return ["CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s));" % (x.local, x.col_defs, pk)]
    # _bucket repeats bucket_id: the views restrict each branch by _bucket, so that only an
    # equality on bucket_id (through the equivalence bucket_id = _bucket) can prune a branch, never
    # a range such as bucket_id BETWEEN a AND b (see _branch_pred)
    # the index on bucket_id: every Picodata storage has one (a non-unique TREE index, created with
    # the space: src/storage/schema.rs:443-451 at 25.5.10, :419-443 at 26.1.6), and a statement
    # restricted to a list of buckets reads it (see README, "The DNF limit")
    # an unlogged table (26.1+) is a PostgreSQL UNLOGGED table: not replicated to the standbys
    # (which cannot read it) and empty on a promoted standby, as Picodata's (data-temporary
    # spaces, truncated when an instance becomes read-only: src/schema.rs:77-86 at 26.1.1)
    return ["CREATE %sTABLE IF NOT EXISTS %s (%s, bucket_id bigint NOT NULL, _bucket bigint GENERATED "
            "ALWAYS AS (bucket_id) STORED, PRIMARY KEY (%s));"
            % ("UNLOGGED " if t.get("unlogged") else "", x.local, x.col_defs, pk),
            "CREATE INDEX IF NOT EXISTS %s ON %s (bucket_id);" % (ident(t["name"] + "_bucket_id"), x.local)]


def _foreign_tables(x: _TableText, peers: Sequence[str], has_replica: bool) -> List[str]:
    parts = list(peers) + (["self"] + (["replica"] if has_replica else []) if x.sharded else [])
    return ["CREATE FOREIGN TABLE %s (%s) SERVER %s OPTIONS (schema_name '_picoemu_local', "
            "table_name %s);" % (remote_rel(x.t, rs), x.ft_cols, ident(server_name(rs)), x.tname)
            for rs in parts]


def _sharded_view(st: State, x: _TableText, self_rs: str, peers: Sequence[str], has_replica: bool) -> str:
    t = x.t
    n = st.tier(t["tier"])["bucket_count"]
    ranges = buckets.ranges_by_owner(st.d["buckets"][t["tier"]])
    prune = st.cap("prune_by_bucket_id")
    own = _branch_pred(ranges.get(self_rs, []), prune)
    # this replicaset's part: the local storage, its master through picoemu_self (a standby
    # without read_preference, or a version without local execution), or a replica through
    # picoemu_replica (a master asked for replica reads); see _picoemu.read_part()
    # routing by the sharding key (every version): a branch runs only if the statement does
    # not fix the key to a literal of a bucket another replicaset owns (_picoemu.asked, a
    # one-time filter evaluated before the branch's scan starts)
    by_name = {c["name"]: c for c in t["columns"]}

    # a write split into parts (sql/part.sql): a branch runs only when its buckets meet the
    # part's, and reads only the rows of the part's buckets (both folded at planning)
    def asked(rs: str) -> str:
        return "_picoemu.asked(%s, %s, %s, ARRAY[%s]::text[], ARRAY[%s]::text[], %d, ARRAY[%s]::int8[], %s)" % (
            x.tname, lit(t["tier"]), lit(rs), ", ".join(lit(k) for k in t["sharding_key"]),
            ", ".join(lit(by_name[k]["cls"]) for k in t["sharding_key"]), n,
            ", ".join("%d, %d" % r for r in ranges.get(rs, [])),
            "true" if prune else "false") + (
            " AND _picoemu.in_part(%s, %s::int8multirange) AND (_picoemu.part_rows(%s) IS NULL OR "
            "_picoemu.part_rows(%s) @> _bucket)" % (x.tname, lit(buckets.multirange(ranges.get(rs, []))),
                                                   x.tname, x.tname))
    sel = x.sel
    branches = ["SELECT %s FROM %s WHERE %s AND _picoemu.read_part() = 'local' AND %s"
                % (sel, x.local, own, asked(self_rs)),
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
                        "_picoemu.refuse(%s, %s, bucket_id)" % (sel, remote_rel(t, rs), p, asked(rs), x.tname,
                                                               lit(t["tier"])))
    nulls = ", ".join("NULL::%s AS %s" % (c["type"], ident(c["name"])) for c in t["columns"])
    branches.append("SELECT %s, g.bucket_id FROM _picoemu.guard_buckets(%s) AS g(bucket_id) WHERE "
                    "_picoemu.strict_enabled() AND _picoemu.refuse(%s, %s, g.bucket_id)"
                    % (nulls, lit(t["tier"]), x.tname, lit(t["tier"])))
    return "CREATE VIEW public.%s AS\n  %s;" % (x.name, "\nUNION ALL\n  ".join(branches))


def _sharded_trigger(st: State, x: _TableText, self_rs: str, peers: Sequence[str]) -> str:
    t = x.t
    n = st.tier(t["tier"])["bucket_count"]
    owner_case = "CASE " + " ".join("WHEN %%s BETWEEN %d AND %d THEN %s" % (a, b, lit(rs))
                                    for a, b, rs in st.d["buckets"][t["tier"]]) + " END"
    targets = [(self_rs, x.local)] + [(rs, remote_rel(t, rs)) for rs in peers]
    key_match = _unchanged(t)

    def ins(rel: str) -> str:
        return "INSERT INTO %s (%s) VALUES (%s)" % (rel, x.sel, ", ".join("NEW.%s" % ident(c) for c in x.all_cols))

    def upd(rel: str) -> str:
        return "UPDATE %s SET %s WHERE %s; %s" % (
            rel, ", ".join("%s = NEW.%s" % (ident(c), ident(c)) for c in x.cnames), key_match, _or_changed(t))

    def dele(rel: str) -> str:
        return "DELETE FROM %s WHERE %s; %s" % (rel, key_match, _or_changed(t))
    strict_check = ("IF %%s <> %s AND _picoemu.strict_enabled() THEN PERFORM _picoemu.refuse(%s, %s, %%s); END IF;"
                    % (lit(self_rs), x.tname, lit(t["tier"])))
    return sql_file("route_sharded.sql", fn=ident("route__" + t["name"]), hash=hash_expr(t, n),
                    old_case=owner_case.replace("%s", "OLD.bucket_id"),
                    new_case=owner_case.replace("%s", "nb"),
                    old_check=strict_check % ("old_owner", "OLD.bucket_id"),
                    new_check=strict_check % ("owner", "nb"),
                    del_old=_dispatch("old_owner", targets, dele, "delete"),
                    upd=_dispatch("owner", targets, upd, "update"),
                    ins=_dispatch("owner", targets, ins, "insert"), name=x.name, tname=x.tname)


def _global_view_and_trigger(x: _TableText, self_rs: str, peers: Sequence[str]) -> List[str]:
    t = x.t
    key_match = _unchanged(t)
    # every coordinator writes the copies in the same order, the replicasets by name (its own copy
    # in its place, not first): a global write then waits for a row lock only at the first master,
    # where PostgreSQL detects any deadlock (40P01, and the front runs the statement again); in
    # any other order two coordinators lock their own copies first and wait for each other across
    # servers, which no server can see, for ever
    rels = [x.local if rs == self_rs else remote_rel(t, rs) for rs in sorted(list(peers) + [self_rs])]
    sets = ", ".join("%s = NEW.%s" % (ident(c), ident(c)) for c in x.cnames)
    ins = "\n    ".join("INSERT INTO %s (%s) VALUES (%s);" % (r, x.sel, ", ".join("NEW.%s" % ident(c) for c in x.cnames))
                         for r in rels)
    upd = "\n    ".join("UPDATE %s SET %s WHERE %s; %s;" % (r, sets, key_match, _or_changed(t)) for r in rels)
    dele = "\n    ".join("DELETE FROM %s WHERE %s; %s;" % (r, key_match, _or_changed(t)) for r in rels)
    return ["CREATE VIEW public.%s AS SELECT %s FROM %s;" % (x.name, x.sel, x.local),
            sql_file("route_global.sql", fn=ident("route__" + t["name"]), ins=ins, upd=upd, dele=dele, name=x.name)]


def table_ddl(st: State, t: Table, self_rs: str, peers: Sequence[str], has_replica: bool = False) -> str:
    """Objects of one user table on the master of replicaset self_rs. peers: [rs_name] of the other
    live replicasets that have a foreign server; has_replica: self_rs has a replica (the foreign
    server picoemu_replica)."""
    x = _TableText(t)
    if x.sharded:
        peers = [p for p in peers if st.replicaset(p)["tier"] == t["tier"]]
    out = _storage(x) + _foreign_tables(x, peers, has_replica)
    if x.sharded:
        # storage trigger: computes bucket_id, refuses rows of buckets this replicaset does not own,
        # and makes a write to a bucket being moved away wait for the move
        out.append(sql_file("store_trigger.sql", fn=ident("store__" + t["name"]),
                            hash=hash_expr(t, st.tier(t["tier"])["bucket_count"]),
                            tname=x.tname, tier=lit(t["tier"]), local=x.local))
        out.append(_sharded_view(st, x, self_rs, peers, has_replica))
        out.append(_sharded_trigger(st, x, self_rs, peers))
    else:
        out += _global_view_and_trigger(x, self_rs, peers)
    out.append("GRANT SELECT, INSERT, UPDATE, DELETE ON public.%s TO PUBLIC;" % x.name)
    return "\n".join(out)


def ddl_sql(st: State, self_rs: str, serving_ports: Dict[str, int], replica_port: Optional[int] = None) -> str:
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


def ddl_hash(sql: str) -> str:
    return hashlib.sha256(sql.encode()).hexdigest()[:16]
