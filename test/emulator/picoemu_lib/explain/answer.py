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
WHERE clause (OR-of-AND chains as route/ reads them, IN lists as ORs, within the DNF limit where
the version has it), or by `bucket_id = N` where the version prunes by it; joins and subqueries give
every bucket. The hashing rule is the emulated version's (25.5's or 26.1's), unless the cluster was made with
`up --wrong-hash double` (a deliberately wrong cluster, which hashes doubles by the other rule where
its rows are stored and here alike). The plan lines are an approximation of Picodata's (the
statement's table, columns and WHERE clause as written); the options and the buckets line are exact.
"""


import struct
from typing import List, Optional, Sequence, Tuple

from .. import caps as emu_caps
from ..dialect import Token, Verdict
from ..route.syntax import statement_tokens, table_refs, where_spans, word
from ..state import Doc
from .buckets import buckets_repr, statement_buckets

RULE = "\u2500" * 70
# Tables every instance has besides the user's (the catalog; state.CATALOG_TABLES).
CATALOG = frozenset(["_pico_instance", "_pico_peer_address", "_pico_replicaset", "_pico_tier",
                     "_pico_table", "_pico_bucket"])


class ExplainError(Exception):
    """What Picodata answers instead of a plan (an XX000 error with this text)."""


class NotEmulated(Exception):
    """An EXPLAIN Picodata answers whose answer the emulator cannot give: the front refuses it (XX000
    with this text, recorded in the audit), never with an answer of its own making."""


TEXT_OID = 25
_PICO_TYPES = {"int": "int", "text": "string", "bool": "bool", "double": "double", "decimal": "decimal",
               "uuid": "uuid", "datetime": "datetime"}


def answered(verdict: Verdict) -> bool:
    """Whether the front answers this statement itself: every EXPLAIN the dialect accepted (the
    PostgreSQL server behind it would answer in its own words)."""
    return verdict.kind == "explain"


def options(toks: List[Token]) -> Tuple[List[str], int]:
    """EXPLAIN's options as the dialect accepted them (dialect.explain_options): (names
    lowercased, the index of the statement's first token)."""
    if len(toks) > 1 and toks[1].text == "(":
        end = next(k for k in range(2, len(toks)) if toks[k].text == ")")
        return [t.low for t in toks[2:end] if t.text != ","], end + 1
    return [], 1


def _plan(sql: str, toks: List[Token], state: Doc, sections: bool) -> List[str]:
    """The logical plan, approximated: the statement's table, its columns and its WHERE clause."""
    tables = {t["name"]: t for t in state.get("tables", [])}
    names = [n for _, n in table_refs(toks)]
    table = tables.get(names[0]) if names else None
    q = (lambda s: s) if sections else (lambda s: '"%s"' % s)
    step = "  " if sections else "    "
    where = where_spans(toks)
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


def _header(title: str) -> List[str]:
    return [RULE, (" " + title).ljust(70), RULE]


def _facets(names: Sequence[str]) -> List[str]:
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


def answer(sql: str, params: Optional[Sequence[Optional[str]]], state: Doc, version: str, motion_row_max: int,
           vdbe_opcode_max: int) -> List[str]:
    """The lines Picodata sends for the EXPLAIN `sql` (its OPTION clause stripped) with bound text
    `params` (None when not bound), on the emulated `version` of the cluster `state`."""
    explain = statement_tokens(sql)
    names, start = options(explain)
    inner = sql[explain[start].pos:] if len(explain) > start else ""
    toks = statement_tokens(inner)
    known = {t["name"] for t in state.get("tables", [])} | CATALOG
    if toks and not word(toks[0], "with"):
        for _, name in table_refs(toks):
            if name not in known:  # planning fails as the statement itself would (front.texts.picodata_error)
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
    out: List[str] = []
    for name in wanted:
        title, body = bodies[name]
        out += ([""] if out else []) + _header(title) + [""] + body
    return out


def _msg(typ: bytes, body: bytes) -> bytes:
    return typ + struct.pack("!I", len(body) + 4) + body


def row_description(version: str) -> bytes:
    name = "EXPLAIN" if emu_caps.has("explain_sections", version) else "QUERY PLAN"
    return _msg(b"T", struct.pack("!H", 1) + name.encode() + b"\0" +
                struct.pack("!IhIhih", 0, 0, TEXT_OID, 0, -1, 0))


def describe(version: str, statement: bool, nparams: int) -> bytes:
    """A Describe's answer: ParameterDescription (of a statement; types left to the server's
    inference) and the RowDescription."""
    params = _msg(b"t", struct.pack("!H", nparams) + struct.pack("!I", 0) * nparams) if statement else b""
    return params + row_description(version)


def rows(lines: Sequence[str]) -> bytes:
    """DataRows and CommandComplete: an Execute's answer."""
    out = b"".join(_msg(b"D", struct.pack("!H", 1) + struct.pack("!I", len(b)) + b)
                   for b in (line.encode() for line in lines))
    return out + _msg(b"C", ("EXPLAIN %d" % len(lines)).encode() + b"\0")


def simple(version: str, lines: Sequence[str]) -> bytes:
    """A simple Query's answer, ReadyForQuery included."""
    return row_description(version) + rows(lines) + _msg(b"Z", b"I")
