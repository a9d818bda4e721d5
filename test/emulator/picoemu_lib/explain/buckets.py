"""The buckets line of Picodata's EXPLAIN: the statement's buckets for one sharded table with its
sharding key fixed by equalities in the WHERE clause (OR-of-AND chains as the router reads them, IN
lists as ORs, within the DNF limit where the version has it), or by `bucket_id = N` where the version
prunes by it; joins and subqueries give every bucket. The hashing rule is the cluster's (hash_rule)."""

from typing import Callable, List, Optional, Sequence, Set, Tuple, Union

from .. import caps as emu_caps
from .. import hashing
from ..dialect import Token, depths
from ..route.bucketset import UNKNOWN, insert_buckets
from ..route.dnf import Node, expand, parse_where
from ..route.syntax import column, name, table_refs, where_spans, word
from ..state import Doc, Table
from .values import typed_value


def hash_rule(state: Doc, version: str) -> str:
    """How the cluster hashes a key ("25.5" or "26.1", bucket_hash_reference's rules): the version's
    rule, the other one on a wrong cluster (state.json's wrong_hash)."""
    return emu_caps.hash_rule(version, state.get("wrong_hash") == "double")


def _chain_bucket(chain: List[Node], table: Table, params: Optional[Sequence[Optional[str]]], prune: bool,
                  hash_key: Callable[[Sequence[object]], int]) -> Union[int, str]:
    """The bucket a chain fixes, "all" when it fixes none (or one value cannot be hashed)."""
    cols = {c["name"]: c for c in table["columns"]}
    fixed, bucket = {}, None
    for term in chain:
        if term.kind != "eq":
            continue
        for a, b in ((term.lhs, term.vals[0]), (term.vals[0], term.lhs)):
            col = column(a)
            if col in table["sharding_key"] and col not in fixed:
                fixed[col] = typed_value(b, cols[col]["cls"], params)
            elif col == "bucket_id" and prune and bucket is None:
                v = typed_value(b, "int", params)
                bucket = v if isinstance(v, int) else None
    if all(k in fixed for k in table["sharding_key"]):
        vals = [fixed[k] for k in table["sharding_key"]]
        if not any(v is UNKNOWN for v in vals):
            return hash_key(vals)
    return bucket if bucket is not None else "all"


def _updates_key(toks: List[Token], table: Table) -> bool:
    """UPDATE t SET <a sharding-key column> = ...: Picodata moves the row (a segment motion)."""
    depth = depths(toks)
    in_set = False
    for i, t in enumerate(toks):
        if depth[i] == 0 and word(t, "set"):
            in_set = True
        elif depth[i] == 0 and word(t, "where", "from"):
            in_set = False
        elif in_set and i + 1 < len(toks) and toks[i + 1].text == "=" and name(t) in table["sharding_key"]:
            return True
    return False


def statement_buckets(toks: List[Token], state: Doc, params: Optional[Sequence[Optional[str]]], version: str
                      ) -> Tuple[Union[str, Set[int]], int]:
    """("any" | "all" | "unknown" | set of buckets, bucket_count) of the statement (tokens, EXPLAIN and
    OPTION stripped)."""
    tables = {t["name"]: t for t in state.get("tables", [])}
    tiers = {t["name"]: t for t in state.get("tiers", [])}
    refs = [tables.get(n) for _, n in table_refs(toks)]
    sharded = [t for t in refs if t is not None and not t["global"]]
    if not sharded:
        return "any", 0
    table = sharded[0]
    count: int = tiers[table["tier"]]["bucket_count"]
    if len(sharded) > 1 or len(refs) > 1:
        return "all", count
    rule = hash_rule(state, version)

    def hash_key(vals: Sequence[object]) -> int:
        return hashing.bucket_id(vals, count, rule)

    if word(toks[0], "insert"):
        if not emu_caps.has("explain_insert_buckets", version):
            return "unknown", count
        found = insert_buckets(toks, table, params, typed_value, hash_key)
        return ("unknown" if found is None else found), count
    if word(toks[0], "update") and _updates_key(toks, table):
        return "unknown", count
    spans = where_spans(toks)
    if not spans:
        return "all", count
    limit = emu_caps.dnf_most_chains() if emu_caps.has("dnf_chain_limit", version) else 1 << 20
    chains = expand(parse_where(toks[spans[0][0]:spans[0][1]]), limit)
    if chains is None:
        return "all", count
    prune = emu_caps.has("prune_by_bucket_id", version)
    out = set()
    for chain in chains:
        b = _chain_bucket(chain, table, params, prune, hash_key)
        if isinstance(b, str):  # "all"
            return "all", count
        out.add(b)
    return out, count


def buckets_repr(buckets: Union[str, Set[int]], count: int) -> str:
    if isinstance(buckets, str):
        return "[1-%d]" % count if buckets == "all" else buckets  # "any", "unknown"
    nums = sorted(buckets)
    ranges: List[List[int]] = []
    for n in nums:
        if ranges and ranges[-1][1] + 1 == n:
            ranges[-1][1] = n
        else:
            ranges.append([n, n])
    return "[%s]" % ",".join(str(a) if a == b else "%d-%d" % (a, b) for a, b in ranges)
