"""The statement's bucket set, as Picodata's bucket discovery finds it: "any" (no sharded table:
global tables, the catalog, no table), "all" (a sharded table without a key that fixes its buckets),
a set of (tier, bucket), or None when the emulator cannot hash the values as Picodata would (a
literal of another type than its column, a double, a decimal, ...)."""

import itertools
import re
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple, Union

from .. import buckets as bucket_map
from .. import caps as emu_caps
from .. import hashing
from ..dialect import Token
from ..state import Doc, Table
from .dnf import Node, expand, parse_where
from .syntax import close, column, name, split_commas, table_refs, where_spans, word

BucketSet = Union[str, Set[Tuple[str, int]], None]  # "any" | "all" | {(tier, bucket)} | None: not known
HashKey = Callable[[Table, Sequence[object]], int]  # the bucket of a table's key values
# The value hashed for a literal or bound parameter compared with a column of a class (int, text, ...).
ValueOf = Callable[[Sequence[Token], str, Optional[Sequence[Optional[str]]]], object]


class Sentinel:
    """A value the reading gives instead of a key value (UNKNOWN, EMPTY)."""

    def __init__(self, what: str) -> None:
        self.what = what

    def __repr__(self) -> str:
        return self.what


UNKNOWN = Sentinel("UNKNOWN")  # a value the emulator does not hash here
EMPTY = Sentinel("EMPTY")  # a chain whose key equalities contradict each other: no bucket
_INT = re.compile(r"^[+-]?\d+$")
_CASTS = {"int": ("int", "integer", "bigint", "int8", "int4", "smallint", "unsigned"),
          "text": ("text", "string", "varchar")}


def hash_rule(version: str) -> str:
    """The hashing rule of `version`'s release line, as bucket_hash_reference names it (State.hash_rule):
    26.1's where the version has integral_double_hash, else 25.5's."""
    return emu_caps.hash_rule(version)


class ClusterMap:
    """The cluster `state` (state.json) at `version`: how it hashes a table's key, which replicaset
    owns a bucket, and the bucket set of a statement there."""

    def __init__(self, state: Doc, version: str) -> None:
        self.state = state
        self.tables: Dict[str, Table] = {t["name"]: t for t in state.get("tables", [])}
        self.tiers: Dict[str, Dict[str, object]] = {t["name"]: t for t in state.get("tiers", [])}
        self.rule = hash_rule(version)
        self.prune = emu_caps.has("prune_by_bucket_id", version)

    def hash_key(self, table: Table, vals: Sequence[object]) -> int:
        count = self.tiers[table["tier"]]["bucket_count"]
        assert isinstance(count, int)
        return hashing.bucket_id(vals, count, self.rule)

    def owner(self, tier: str, b: int) -> Optional[str]:
        return bucket_map.owner_of(self.state.get("buckets", {}).get(tier, []), b)

    def bucket_set(self, toks: List[Token], params: Optional[Sequence[Optional[str]]]) -> BucketSet:
        return bucket_set(toks, self.tables, params, self.prune, self.hash_key)


def value(toks: Sequence[Token], cls: str, params: Optional[Sequence[Optional[str]]]) -> object:
    """The Python value Picodata hashes for a literal or bound parameter of a column of class cls,
    or UNKNOWN. Picodata hashes the literal's own type: an integer literal for an integer column,
    a string literal for a text column; anything else the emulator does not hash here."""
    if len(toks) == 3 and toks[1].text == "::" and toks[2].low in _CASTS.get(cls, ()):
        toks = toks[:1]  # a cast to the column's own type: the value keeps that type
    if len(toks) != 1:
        return UNKNOWN
    t = toks[0]
    if t.kind == "param":
        n = int(t.text[1:])
        v = params[n - 1] if params is not None and 0 < n <= len(params) else None
        if v is None:
            return UNKNOWN
        if cls == "int" and _INT.match(v) and len(v) < 19:
            return int(v)
        return v if cls == "text" else UNKNOWN
    if t.kind == "num" and cls == "int" and _INT.match(t.text):
        return int(t.text)
    if t.kind == "str" and cls == "text":
        return t.text[1:-1].replace("''", "'")
    return UNKNOWN


def _chain_buckets(chain: List[Node], table: Table, params: Optional[Sequence[Optional[str]]], prune: bool,
                   hash_key: HashKey) -> object:
    """The bucket a chain fixes, "all" when it fixes none, EMPTY when its equalities on the key
    give different buckets (Picodata intersects the bucket sets of the terms of a chain:
    `a = 1 AND a = 2` has none, test/int/sql/eliminate_motion.sql "buckets = []" at 26.2.1-rc2),
    UNKNOWN when it cannot be hashed here."""
    cols = {c["name"]: c for c in table["columns"]}
    fixed: Dict[str, List[object]] = {}
    bucket: object = None
    for term in chain:
        if term.kind != "eq":
            continue
        for a, b in ((term.lhs, term.vals[0]), (term.vals[0], term.lhs)):
            col = column(a)
            if col is not None and col in table["sharding_key"]:
                fixed.setdefault(col, []).append(value(b, cols[col]["cls"], params))
            elif col == "bucket_id" and prune and bucket is None:
                v = value(b, "int", params)
                bucket = v if v is not UNKNOWN else bucket
    if all(k in fixed for k in table["sharding_key"]):
        lists = [fixed[k] for k in table["sharding_key"]]
        if any(v is UNKNOWN for vals in lists for v in vals):
            return UNKNOWN
        found = {hash_key(table, list(combo)) for combo in itertools.product(*lists)}
        return found.pop() if len(found) == 1 else EMPTY
    return bucket if bucket is not None else "all"


def insert_buckets(toks: List[Token], table: Table, params: Optional[Sequence[Optional[str]]],
                   value_of: ValueOf, hash_key: Callable[[Sequence[object]], int]) -> Optional[Set[int]]:
    """The buckets of INSERT INTO t [(cols)] VALUES (...), ...: one per row, each row's sharding key
    read by value_of(tokens, column class, params) and hashed by hash_key(values); None when they are
    not known here (INSERT ... SELECT, a value value_of gives as UNKNOWN). The route's bucket set and
    the EXPLAIN's buckets line read rows alike, each with its own reading of a value."""
    i = next(k for k, t in enumerate(toks) if word(t, "into")) + 2
    if i < len(toks) and toks[i - 1].text == "public" and toks[i].text == ".":
        i += 2
    names: List[Optional[str]] = [c["name"] for c in table["columns"]]
    if i < len(toks) and toks[i].text == "(":
        j = close(toks, i)
        names = [name(p[0]) if len(p) == 1 else None for p in split_commas(toks[i + 1:j])]
        i = j + 1
    if i >= len(toks) or not word(toks[i], "values"):
        return None  # INSERT ... SELECT: the rows are known once read
    cols = {c["name"]: c for c in table["columns"]}
    out = set()
    i += 1
    while i < len(toks):
        if toks[i].text != "(":
            i += 1
            continue
        j = close(toks, i)
        row = dict(zip(names, split_commas(toks[i + 1:j])))
        vals = [value_of(row.get(k, []), cols[k]["cls"], params) for k in table["sharding_key"]]
        if any(v is UNKNOWN for v in vals):
            return None
        out.add(hash_key(vals))
        i = j + 1
    return out


def bucket_set(toks: List[Token], tables: Dict[str, Table], params: Optional[Sequence[Optional[str]]],
               prune: bool, hash_key: HashKey) -> BucketSet:
    """The statement's bucket set (see the module's comment): "any", "all", a set of (tier, bucket),
    or None (not known here). toks: the statement's tokens, OPTION stripped; tables: {name: table}
    of state.json; params: the bound text values (None: not bound); hash_key(table, values) ->
    bucket."""
    refs = [(i, tables.get(n)) for i, n in table_refs(toks)]
    sharded = [t for _, t in refs if t is not None and not t["global"]]
    if not sharded:
        return "any"
    if len(sharded) > 1 or len(refs) > 1:
        return "all"  # joins, subqueries: stricter than Picodata, which may still find the key
    table = sharded[0]
    tier = table["tier"]
    if word(toks[0], "insert"):
        b = insert_buckets(toks, table, params, value, lambda vals: hash_key(table, vals))
        return None if b is None else {(tier, x) for x in b}
    spans = where_spans(toks)
    if not spans:
        return "all"
    chain_list = expand(parse_where(toks[spans[0][0]:spans[0][1]]), emu_caps.dnf_most_chains())
    if chain_list is None:
        return "all"  # over the DNF limit: every replicaset
    out = set()
    for chain in chain_list:
        found = _chain_buckets(chain, table, params, prune, hash_key)
        if found is UNKNOWN:
            return None
        if found is EMPTY:
            continue
        if found == "all":
            return "all"
        assert isinstance(found, int), found
        out.add((tier, found))
    return out
