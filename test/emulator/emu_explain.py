"""Picodata's answer to a plain EXPLAIN, for the fronts (pure, no I/O but the wire bytes it builds).

What Picodata sends, read in its sources:

* one text column, one row per line of the plan (`port_read_explain` in src/pgproto/backend/storage.rs
  at 25.5.10, `ExplainIter` at 26.3.0); the column is named "QUERY PLAN" up to 26.2.0 and "EXPLAIN"
  from 26.2.1-rc1 (`explain_output_format`, src/pgproto/backend/describe.rs; capability
  `explain_sections`); the command tag is "EXPLAIN <rows>" (`command_complete_with_row_count`,
  src/pgproto/messages.rs);
* up to 26.2.0: the logical plan, then "execution options:" with sql_vdbe_opcode_max and
  sql_motion_row_max, then the buckets line (`FullExplain` in sql-planner/src/ir/explain.rs at
  25.5.10 and 26.1.6; test/int/sql/explain.sql at those tags);
* from 26.2.1-rc1: sections, each under a 70-wide header between two rules of U+2500 ("# Logical
  plan", "# Buckets"), separated by empty lines, the plan indented by two blanks (`explain_logical`,
  `explain_buckets` in sql-executor/src/executor.rs, `make_explain_header1` in sql-ir/src/utils.rs at
  26.3.0; test/int/sql/explain.sql at 26.2.1-rc2 and 26.3.0);
* the buckets line (`BucketsInfo`'s Display, sql-ir/src/ir/explain/execution_info.rs at 26.3.0,
  explain.rs at 25.5.10): "buckets = [b1,b2-b3]" (sorted, consecutive buckets as ranges:
  `buckets_repr`), "buckets = [1-N]" for every bucket, "buckets = any" without a sharded table,
  "buckets = unknown" where the planner cannot tell (an INSERT ... VALUES before 26.1.0: its segment
  motion, `can_estimate_buckets`; from 26.1.0 its rows are hashed, `try_calculate_sharded_insert_buckets`,
  capability `explain_insert_buckets`; an UPDATE of a sharding-key column). Parameters are bound
  before the buckets are computed (`ExecutingQuery::as_explain` on the bound statement), typed by
  their column; a literal is hashed by its own type (`determine_bucket_id` of the constant's value:
  1 an integer, 1.5 a decimal, 1.5e0 a double, 'x' a string).

The buckets are computed here for one sharded table with its sharding key fixed by equalities in the
WHERE clause (OR-of-AND chains as emu_route reads them, IN lists as ORs, within the DNF limit where
the version has it), or by `bucket_id = N` where the version prunes by it; joins and subqueries give
every bucket. The hashing rule is the emulated version's (25.5's or 26.1's), unless the cluster was made with
`up --wrong-hash double` (a deliberately wrong cluster, which hashes doubles by the other rule where
its rows are stored and here alike). The plan lines are an approximation of Picodata's (the
statement's table, columns and WHERE clause as written); the options and the buckets line are exact.
"""

import decimal
import os
import struct
import sys
import uuid

import emu_caps
import emu_dialect as dialect
import emu_route

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "tools"))
import bucket_hash_reference as ref  # noqa: E402

RULE = "\u2500" * 70
# Tables every instance has besides the user's (the catalog; emu_state.CATALOG_TABLES).
CATALOG = frozenset(["_pico_instance", "_pico_peer_address", "_pico_replicaset", "_pico_tier",
                     "_pico_table", "_pico_bucket"])


class ExplainError(Exception):
    """What Picodata answers instead of a plan (an XX000 error with this text)."""


class NotEmulated(Exception):
    """An EXPLAIN Picodata answers whose answer the emulator cannot give: the front refuses it (XX000
    with this text, recorded in the audit), never with an answer of its own making."""
TEXT_OID = 25
_UNKNOWN = emu_route._UNKNOWN
_PICO_TYPES = {"int": "int", "text": "string", "bool": "bool", "double": "double", "decimal": "decimal",
               "uuid": "uuid", "datetime": "datetime"}
_CASTS = {"int": ("int", "integer", "bigint", "smallint", "int2", "int4", "int8", "unsigned"),
          "double": ("double",), "decimal": ("decimal", "numeric", "number"),
          "text": ("text", "string", "varchar"), "bool": ("bool", "boolean"), "uuid": ("uuid",)}


def answered(verdict):
    """Whether the front answers this statement itself: every EXPLAIN the dialect accepted (the
    PostgreSQL server behind it would answer in its own words)."""
    return verdict.kind == "explain"


def options(toks):
    """EXPLAIN's options as the dialect accepted them (emu_dialect.explain_options): (names
    lowercased, the index of the statement's first token)."""
    if len(toks) > 1 and toks[1].text == "(":
        end = next(k for k in range(2, len(toks)) if toks[k].text == ")")
        return [t.low for t in toks[2:end] if t.text != ","], end + 1
    return [], 1


def hash_rule(state, version):
    """How the cluster hashes a key ("25.5" or "26.1", bucket_hash_reference's rules): the version's
    rule, the other one on a wrong cluster (state.json's wrong_hash)."""
    return emu_caps.hash_rule(version, state.get("wrong_hash") == "double")


# ---- the values Picodata hashes ----------------------------------------------------------------------

def _literal(toks):
    """The value of a literal as Picodata types it, or _UNKNOWN."""
    while len(toks) >= 3 and toks[0].text == "(" and toks[-1].text == ")" and emu_route._close(toks, 0) == len(toks) - 1:
        toks = toks[1:-1]
    if len(toks) >= 6 and toks[0].low == "cast" and toks[1].text == "(" and toks[-1].text == ")" \
            and toks[-3].low == "as":
        return _cast(_literal(toks[2:-3]), toks[-2].low)
    if len(toks) >= 3 and toks[-2].text == "::":
        return _cast(_literal(toks[:-2]), toks[-1].low)
    if len(toks) != 1:
        return _UNKNOWN
    t = toks[0]
    if t.kind == "num":
        if "e" in t.low:
            return float(t.text)
        return decimal.Decimal(t.text) if "." in t.text else int(t.text)
    if t.kind == "str":
        return t.text[1:-1].replace("''", "'")
    if t.kind == "ident" and t.low in ("true", "false"):
        return t.low == "true"
    if t.kind == "ident" and t.low == "null":
        return None
    return _UNKNOWN


def _cast(value, target):
    if value is _UNKNOWN or value is None:
        return value
    try:
        if target in _CASTS["int"]:
            return int(value) if not isinstance(value, str) or value.strip().lstrip("+-").isdigit() else _UNKNOWN
        if target in _CASTS["double"]:
            return float(value)
        if target in _CASTS["decimal"]:
            return decimal.Decimal(str(value)) if not isinstance(value, float) else decimal.Decimal(repr(value))
        if target in _CASTS["text"]:
            return value if isinstance(value, str) else _UNKNOWN
        if target in _CASTS["bool"]:
            return value if isinstance(value, bool) else _UNKNOWN
        if target in _CASTS["uuid"]:
            return uuid.UUID(value) if isinstance(value, str) else _UNKNOWN
    except (ValueError, ArithmeticError):
        return _UNKNOWN
    return _UNKNOWN


def _bound(text, cls):
    """A bound text parameter, typed by the column it is compared with (Picodata infers it)."""
    if text is None:
        return None
    try:
        if cls == "int":
            return int(text)
        if cls == "double":
            return float(text)
        if cls == "decimal":
            return decimal.Decimal(text)
        if cls == "text":
            return text
        if cls == "bool":
            low = text.strip().lower()
            return low in ("t", "true", "1", "on", "yes", "y") if low in (
                "t", "true", "1", "on", "yes", "y", "f", "false", "0", "off", "no", "n") else _UNKNOWN
        if cls == "uuid":
            return uuid.UUID(text)
    except (ValueError, ArithmeticError):
        return _UNKNOWN
    return _UNKNOWN


def typed_value(toks, cls, params):
    """The value Picodata hashes for one side of an equality with a column of class cls."""
    if len(toks) == 1 and toks[0].kind == "param":
        n = int(toks[0].text[1:])
        if params is None or not 0 < n <= len(params):
            return _UNKNOWN
        return _bound(params[n - 1], cls)
    return _literal(toks)


# ---- the statement's buckets ---------------------------------------------------------------------------

def _chain_bucket(chain, table, params, prune, hash_key):
    """The bucket a chain fixes, "all" when it fixes none (or one value cannot be hashed)."""
    cols = {c["name"]: c for c in table["columns"]}
    fixed, bucket = {}, None
    for term in chain:
        if term.kind != "eq":
            continue
        for a, b in ((term.lhs, term.vals[0]), (term.vals[0], term.lhs)):
            col = emu_route._column(a)
            if col in table["sharding_key"] and col not in fixed:
                fixed[col] = typed_value(b, cols[col]["cls"], params)
            elif col == "bucket_id" and prune and bucket is None:
                v = typed_value(b, "int", params)
                bucket = v if isinstance(v, int) else None
    if all(k in fixed for k in table["sharding_key"]):
        vals = [fixed[k] for k in table["sharding_key"]]
        if not any(v is _UNKNOWN for v in vals):
            return hash_key(vals)
    return bucket if bucket is not None else "all"


def _insert_buckets(toks, table, params, hash_key):
    """INSERT INTO t [(cols)] VALUES (...): one bucket per row, or "unknown"."""
    i = next(k for k, t in enumerate(toks) if emu_route._word(t, "into")) + 2
    if i < len(toks) and toks[i - 1].text == "public" and toks[i].text == ".":
        i += 2
    names = [c["name"] for c in table["columns"]]
    if i < len(toks) and toks[i].text == "(":
        j = emu_route._close(toks, i)
        names = [emu_route._name(p[0]) if len(p) == 1 else None for p in emu_route._split_commas(toks[i + 1:j])]
        i = j + 1
    if i >= len(toks) or not emu_route._word(toks[i], "values"):
        return "unknown"
    cols = {c["name"]: c for c in table["columns"]}
    out = set()
    i += 1
    while i < len(toks):
        if toks[i].text != "(":
            i += 1
            continue
        j = emu_route._close(toks, i)
        row = dict(zip(names, emu_route._split_commas(toks[i + 1:j])))
        vals = [typed_value(row.get(k, []), cols[k]["cls"], params) for k in table["sharding_key"]]
        if any(v is _UNKNOWN for v in vals):
            return "unknown"
        out.add(hash_key(vals))
        i = j + 1
    return out


def _updates_key(toks, table):
    """UPDATE t SET <a sharding-key column> = ...: Picodata moves the row (a segment motion)."""
    depth = dialect._depths(toks)
    in_set = False
    for i, t in enumerate(toks):
        if depth[i] == 0 and emu_route._word(t, "set"):
            in_set = True
        elif depth[i] == 0 and emu_route._word(t, "where", "from"):
            in_set = False
        elif in_set and i + 1 < len(toks) and toks[i + 1].text == "=" and emu_route._name(t) in table["sharding_key"]:
            return True
    return False


def statement_buckets(toks, state, params, version):
    """("any" | "all" | "unknown" | set of buckets, bucket_count) of the statement (tokens, EXPLAIN and
    OPTION stripped)."""
    tables = {t["name"]: t for t in state.get("tables", [])}
    tiers = {t["name"]: t for t in state.get("tiers", [])}
    refs = [tables.get(n) for _, n in emu_route.table_refs(toks)]
    sharded = [t for t in refs if t is not None and not t["global"]]
    if not sharded:
        return "any", 0
    table = sharded[0]
    count = tiers[table["tier"]]["bucket_count"]
    if len(sharded) > 1 or len(refs) > 1:
        return "all", count
    rule = hash_rule(state, version)

    def hash_key(vals):
        return ref.bucket_id(vals, count, rule)

    if emu_route._word(toks[0], "insert"):
        if not emu_caps.has("explain_insert_buckets", version):
            return "unknown", count
        return _insert_buckets(toks, table, params, hash_key), count
    if emu_route._word(toks[0], "update") and _updates_key(toks, table):
        return "unknown", count
    spans = emu_route.where_spans(toks)
    if not spans:
        return "all", count
    limit = emu_caps.dnf_most_chains() if emu_caps.has("dnf_chain_limit", version) else 1 << 20
    chains = emu_route._expand(emu_route.parse_where(toks[spans[0][0]:spans[0][1]]), limit)
    if chains is None:
        return "all", count
    prune = emu_caps.has("prune_by_bucket_id", version)
    out = set()
    for chain in chains:
        b = _chain_bucket(chain, table, params, prune, hash_key)
        if b == "all":
            return "all", count
        out.add(b)
    return out, count


def buckets_repr(buckets, count):
    if buckets in ("any", "unknown"):
        return buckets
    if buckets == "all":
        return "[1-%d]" % count
    nums, ranges = sorted(buckets), []
    for n in nums:
        if ranges and ranges[-1][1] + 1 == n:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    return "[%s]" % ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)


# ---- the plan's text -------------------------------------------------------------------------------

def _plan(sql, toks, state, sections):
    """The logical plan, approximated: the statement's table, its columns and its WHERE clause."""
    tables = {t["name"]: t for t in state.get("tables", [])}
    names = [n for _, n in emu_route.table_refs(toks)]
    table = tables.get(names[0]) if names else None
    q = (lambda s: s) if sections else (lambda s: '"%s"' % s)
    step = "  " if sections else "    "
    where = emu_route.where_spans(toks)
    cond = sql[toks[where[0][0]].pos:toks[where[0][1] - 1].end] if where and where[0][1] > where[0][0] else None
    first = toks[0].low
    if table is None:
        head = ["projection (%s)" % sql[toks[1].pos:].strip() if len(toks) > 1 else "projection ()"]
        return head
    name = table["name"]
    if first in ("update", "delete"):
        lines = ["%s %s" % (first, q(name))]
        if cond:
            lines += [step + "selection (%s)" % cond if sections else step + "selection " + cond,
                      step * 2 + "scan " + q(name)]
        return lines
    if first == "insert":
        return ["insert %s on conflict: fail" % q(name)]
    cols = ", ".join("%s.%s::%s -> %s" % (q(name), q(c["name"]), _PICO_TYPES.get(c["cls"], c["cls"]), q(c["name"]))
                     for c in table["columns"])
    lines = ["projection (%s)" % cols]
    depth = 1
    if cond:
        lines.append(step + ("selection (%s)" % cond if sections else "selection " + cond))
        depth = 2
    lines.append(step * depth + "scan " + q(name))
    return lines


def _header(title):
    return [RULE, (" " + title).ljust(70), RULE]


def _facets(names):
    """The sections an EXPLAIN with these options prints, in Picodata's order (logical, raw, forward,
    buckets, context: src/sql.rs:531-579@26.2.1-rc1); FMT alone
    prints what a plain EXPLAIN prints (the default Logical | Buckets, sql-frontend/src/frontend/sql/
    ast/mod.rs:1897-1899@26.2.1-rc1). RAW runs the statement's parts on the storages and prints their
    VDBE programs (explain_raw, sql-executor/src/executor.rs:704@26.2.1-rc1; on 25.5.10 and 26.1.6 the
    only meaning of EXPLAIN (RAW ...)), FORWARD the least forward the coordinator answering would
    need (explain_forward, :681): neither is emulated."""
    for name in ("raw", "forward"):
        if name in names:
            raise NotEmulated("picoemu: EXPLAIN (%s) is not emulated (Picodata accepts it; the emulator "
                              "answers EXPLAIN with the facets LOGICAL, BUCKETS and CONTEXT only)"
                              % name.upper())
    wanted = [n for n in ("logical", "buckets", "context") if n in names]
    return wanted or ["logical", "buckets"]


def answer(sql, params, state, version, motion_row_max, vdbe_opcode_max):
    """The lines Picodata sends for the EXPLAIN `sql` (its OPTION clause stripped) with bound text
    `params` (None when not bound), on the emulated `version` of the cluster `state`."""
    explain = emu_route.statement_tokens(sql)
    names, start = options(explain)
    inner = sql[explain[start].pos:] if len(explain) > start else ""
    toks = emu_route.statement_tokens(inner)
    known = {t["name"] for t in state.get("tables", [])} | CATALOG
    if toks and not emu_route._word(toks[0], "with"):
        for _, name in emu_route.table_refs(toks):
            if name not in known:  # planning fails as the statement itself would (emu_front.picodata_error)
                raise ExplainError('sbroad: table with name "%s" not found' % name)
    wanted = _facets(names)
    buckets, count = statement_buckets(toks, state, params, version) if toks else ("any", 0)
    line = "buckets = " + buckets_repr(buckets, count)
    if not emu_caps.has("explain_sections", version):
        # 25.5.x and 26.1.x: EXPLAIN, or on 26.1 EXPLAIN (FMT), "currently" the same
        # (sql-planner/src/frontend/sql.rs:6992-6998@26.1.6).
        return (_plan(inner, toks, state, False) +
                ["execution options:", "    sql_vdbe_opcode_max = %d" % vdbe_opcode_max,
                 "    sql_motion_row_max = %d" % motion_row_max, line])
    bodies = {"logical": ("# Logical plan", _plan(inner, toks, state, True)),
              "buckets": ("# Buckets", [line]),
              "context": ("# Context", ["sql_vdbe_opcode_max = %d" % vdbe_opcode_max,
                                        "sql_motion_row_max = %d" % motion_row_max])}
    if len(wanted) == 1:  # one facet: no header (has_single_facet, sql-ir/src/ir.rs:677@26.2.1-rc1)
        return bodies[wanted[0]][1]
    out = []
    for name in wanted:
        title, body = bodies[name]
        out += ([""] if out else []) + _header(title) + [""] + body
    return out


# ---- the messages ----------------------------------------------------------------------------------

def _msg(typ, body):
    return typ + struct.pack("!I", len(body) + 4) + body


def row_description(version):
    name = "EXPLAIN" if emu_caps.has("explain_sections", version) else "QUERY PLAN"
    return _msg(b"T", struct.pack("!H", 1) + name.encode() + b"\0" +
                struct.pack("!IhIhih", 0, 0, TEXT_OID, 0, -1, 0))


def describe(version, statement, nparams):
    """A Describe's answer: ParameterDescription (of a statement; types left to the server's
    inference) and the RowDescription."""
    params = _msg(b"t", struct.pack("!H", nparams) + struct.pack("!I", 0) * nparams) if statement else b""
    return params + row_description(version)


def rows(lines):
    """DataRows and CommandComplete: an Execute's answer."""
    out = b"".join(_msg(b"D", struct.pack("!H", 1) + struct.pack("!I", len(b)) + b)
                   for b in (line.encode() for line in lines))
    return out + _msg(b"C", ("EXPLAIN %d" % len(lines)).encode() + b"\0")


def simple(version, lines):
    """A simple Query's answer, ReadyForQuery included."""
    return row_description(version) + rows(lines) + _msg(b"Z", b"I")
