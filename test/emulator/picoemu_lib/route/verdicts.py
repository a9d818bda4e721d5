"""The router's verdicts on a statement: whether `forward` lets it run where it arrived (26.2.1-rc1+),
whether a read must be a leader read (26.1.1+), and whether a scalar aggregate over an empty bucket
set answers NULL (before 26.2.1-rc2)."""

from typing import Callable, List, Optional, Sequence

from .. import caps as emu_caps
from ..dialect import Token
from ..state import Doc
from .bucketset import BucketSet, ClusterMap
from .syntax import table_refs, word

FORWARD_ORDER = ("off", "ro_to_rw", "on")


def possible_forward(buckets: BucketSet, owner: Callable[[str, int], Optional[str]], my_replicaset: str,
                     read_only: bool) -> str:
    """get_possible_forward_option: the least forward value the bucket set allows."""
    if buckets == "any":
        return "off"
    if buckets == "all" or not isinstance(buckets, set):
        return "on"
    owners = {owner(tier, b) for tier, b in buckets}
    if not owners:
        return "off"
    if len(owners) != 1:
        return "on"
    if owners.pop() != my_replicaset or read_only:
        return "ro_to_rw"
    return "off"


def forward_refusal(wanted: str, possible: str) -> Optional[str]:
    """Picodata's message when `forward = wanted` cannot be satisfied (possible is more), else None:
    enforce_forward_option in src/sql/router.rs (26.2.1-rc1, 26.3.0), an SbroadError::Invalid of
    Entity::Option ("invalid option: ...", sql-ir/src/errors.rs), reaching the client through
    traft's Error::Sbroad ("sbroad: ...", src/traft/error.rs) as XX000."""
    if FORWARD_ORDER.index(possible) <= FORWARD_ORDER.index(wanted):
        return None
    if wanted == "ro_to_rw":
        reason = "buckets span multiple nodes"
    elif possible == "ro_to_rw":
        reason = "buckets are not present on the current node"
    else:
        reason = "buckets span multiple nodes and are not present on the current node"
    return ('sbroad: invalid option: cannot satisfy "forward = %s": %s, try using "forward = %s" instead'
            % (wanted, reason, possible))


def forward_verdict(state: Doc, instance: str, version: str, toks: List[Token], wanted: Optional[str],
                    params: Optional[Sequence[Optional[str]]]) -> Optional[str]:
    """Picodata's refusal text for a statement under `forward = wanted` at `instance` (state: the
    state.json document), or None when it runs (or its bucket set is not known here)."""
    if wanted is None or wanted == "on" or not emu_caps.has("forward", version):
        return None
    cluster = ClusterMap(state, version)
    buckets = cluster.bucket_set(toks, params)
    if buckets is None:
        return None
    inst = next(i for i in state["instances"] if i["name"] == instance)
    rs = next(r for r in state["replicasets"] if r["name"] == inst["replicaset"])
    return forward_refusal(wanted, possible_forward(buckets, cluster.owner, rs["name"], rs.get("master") != instance))


# ---- reads that must be leader reads (26.1.1+) -----------------------------------------------------

def leader_read_refusal(state: Doc, toks: List[Token]) -> Optional[str]:
    """Picodata's refusal of a read whose read_preference is not leader (the caller checked that), or
    None: effective_read_preference in src/sql/dispatch.rs:741-770 at 26.1.1, 750-779 at 26.1.6,
    726-755 at 26.2.1-rc1 to 26.3.0, called for the reads that dispatch by buckets (reads of a
    sharded table; a read of global tables only runs on the instance itself, exec_ir_on_any_node,
    src/sql/router.rs:573 at 26.1.1): an unlogged table among the statement's tables first, then the
    cluster's sql_preemption. SbroadError::Invalid of Entity::Option ("invalid option: ...") behind
    traft's "sbroad: " (src/traft/error.rs:139)."""
    tables = {t["name"]: t for t in state.get("tables", [])}
    named = [tables[n] for _, n in table_refs(toks) if n in tables]
    if not any(not t["global"] for t in named):
        return None
    if any(t.get("unlogged") for t in named):
        return "sbroad: invalid option: read_preference must be set to 'leader' when querying unlogged tables"
    if state.get("sql_preemption"):
        return "sbroad: invalid option: read_preference must be set to 'leader' when sql_preemption is enabled"
    return None


# ---- a scalar aggregate over an empty bucket set (before 26.2.1-rc2) -------------------------------

AGGREGATES = frozenset(["count", "sum", "avg", "min", "max", "total", "group_concat", "string_agg"])


def scalar_aggregate(toks: List[Token]) -> bool:
    """Whether the statement is SELECT <aggregates> FROM ... without GROUP BY: an aggregate call in
    the top-level select list, and no GROUP BY at the top level."""
    if not toks or not word(toks[0], "select"):
        return False
    depth, agg = 0, False
    for i, t in enumerate(toks):
        if t.text == "(":
            depth += 1
        elif t.text == ")":
            depth -= 1
        elif depth == 0 and word(t, "group") and i + 1 < len(toks) and word(toks[i + 1], "by"):
            return False
        elif (depth == 0 and t.kind == "ident" and t.low in AGGREGATES and i + 1 < len(toks)
              and toks[i + 1].text == "("):
            agg = True
    return agg


def empty_set_aggregate(state: Doc, version: str, toks: List[Token], params: Optional[Sequence[Optional[str]]]
                        ) -> bool:
    """Whether Picodata answers this read with a row of NULLs: a scalar aggregate whose bucket set is
    empty (its key equalities contradict each other) on a version before the fix of 26.2.1-rc2
    (capability empty_set_aggregate): the reduce stage sums the answers of no storage
    (`sum(count_1)` over an empty virtual table), so count(*) is NULL, not 0
    (test/int/sql/eliminate_motion.sql scalar-agg-1 expects null at 26.1.6, 26.2.1-rc1 and 26.3.0,
    0 at 26.2.1-rc2; src/sql/router.rs bucket_dispatch at 26.2.1-rc2)."""
    if emu_caps.has("empty_set_aggregate", version) or not scalar_aggregate(toks):
        return False
    return ClusterMap(state, version).bucket_set(toks, params) == set()
