"""The bucket arithmetic of the emulator (pure, no I/O): a tier's bucket map, its rebalancing with
minimal movement, and the runs of buckets a change moves.

A tier's bucket map is stored (state.json "buckets") as ranges [start, end, replicaset_name], sorted,
covering 1..N. For computation it is expanded into an owner list indexed by bucket id (index 0
unused, None for a bucket without owner).
"""

from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from .errors import EmuError

Owners = List[Optional[str]]  # owner of each bucket by id; index 0 unused
StoredRange = List[Any]  # [start, end, replicaset name], as state.json stores a map's ranges
Range = Tuple[int, int]  # inclusive (start, end)
Segment = Tuple[Optional[str], Optional[str], int, int]  # (old owner, new owner, start, end)


def expand(ranges: Iterable[StoredRange], bucket_count: int) -> Owners:
    """The owner list of a stored map: [start, end, replicaset] ranges -> owner of each bucket."""
    owners: Owners = [None] * (bucket_count + 1)
    for start, end, rs in ranges:
        for b in range(start, end + 1):
            owners[b] = rs
    return owners


def compress(owners: Owners) -> List[StoredRange]:
    """The stored form of an owner list: maximal runs [start, end, replicaset], unowned buckets
    left out."""
    ranges: List[StoredRange] = []
    for b in range(1, len(owners)):
        rs = owners[b]
        if rs is None:
            continue
        if ranges and ranges[-1][2] == rs and ranges[-1][1] == b - 1:
            ranges[-1][1] = b
        else:
            ranges.append([b, b, rs])
    return ranges


def target_counts(bucket_count: int, weights: Sequence[Tuple[str, float]]) -> Dict[str, int]:
    """weights: list of (name, weight) -> {name: count}; largest remainder, ties in list order.
    EmuError when every weight is 0."""
    total = sum(w for _, w in weights)
    if total <= 0:
        raise EmuError("all replicasets have weight 0: nowhere to put the buckets")
    exact = [(name, bucket_count * w / total) for name, w in weights]
    counts = {name: int(x) for name, x in exact}
    left = bucket_count - sum(counts.values())
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i][1] - int(exact[i][1])), i))
    for i in order[:left]:
        counts[exact[i][0]] += 1
    return counts


def rebalance(owners: Owners, targets: Dict[str, int]) -> Owners:
    """Minimal-movement rebalance: each replicaset above its target gives away its highest buckets;
    the freed buckets, ascending, fill the replicasets below target in the order of `targets`.
    Unowned buckets (None) and replicasets absent from `targets` give everything away."""
    new = list(owners)
    counts: Dict[Optional[str], int] = {}
    for b in range(1, len(owners)):
        counts[owners[b]] = counts.get(owners[b], 0) + 1
    freed = []
    surplus = {rs: c - targets.get(rs, 0) if rs is not None else c for rs, c in counts.items()}
    for b in range(len(owners) - 1, 0, -1):
        rs = owners[b]
        if rs is None or surplus.get(rs, 0) > 0:
            freed.append(b)
            if rs is not None:
                surplus[rs] -= 1
    freed.sort()
    pos = 0
    for rs_name, want in targets.items():
        need = want - counts.get(rs_name, 0)
        for _ in range(max(need, 0)):
            new[freed[pos]] = rs_name
            pos += 1
    assert pos == len(freed), "rebalance left %d buckets without owner" % (len(freed) - pos)
    return new


def segments(old: Owners, new: Owners) -> List[Segment]:
    """Maximal runs of buckets whose owner changes: [(src, dst, start, end)], src may be None."""
    out: List[Segment] = []
    for b in range(1, len(old)):
        if old[b] == new[b]:
            continue
        if out and out[-1][0] == old[b] and out[-1][1] == new[b] and out[-1][3] == b - 1:
            out[-1] = out[-1][:3] + (b,)
        else:
            out.append((old[b], new[b], b, b))
    return out


def assign(owners: Owners, start: int, end: int, rs: str) -> Owners:
    """The owner list with buckets start..end (inclusive) given to rs (`picoemu move`)."""
    new = list(owners)
    for b in range(start, end + 1):
        new[b] = rs
    return new


Transfers = Dict[Tuple[str, str], List[Range]]  # (old owner, new owner) -> the ranges it moves


def transfers(segs: Sequence[Segment]) -> Transfers:
    """The segments that move rows from an owner to another, by (old owner, new owner): a bucket
    without an old owner has no rows to move."""
    out: Transfers = {}
    for src, dst, a, b in segs:
        if src is not None and dst is not None:
            out.setdefault((src, dst), []).append((a, b))
    return out


def ranges_by_owner(ranges: Iterable[StoredRange]) -> Dict[str, List[Range]]:
    """{replicaset: [(start, end), ...]} of a stored map, each owner's ranges in the map's order."""
    out: Dict[str, List[Range]] = {}
    for a, b, rs in ranges:
        out.setdefault(rs, []).append((a, b))
    return out


def owner_of(ranges: Iterable[StoredRange], bucket: int) -> Optional[str]:
    """The replicaset of a stored map that owns `bucket`, or None."""
    return next((rs for lo, hi, rs in ranges if lo <= bucket <= hi), None)


def multirange(ranges: Iterable[Range]) -> str:
    """An int8multirange literal of inclusive (start, end) pairs."""
    return "{" + ",".join("[%d,%d]" % (a, b) for a, b in ranges) + "}"


def count(ranges: Iterable[Range]) -> int:
    """How many buckets inclusive (start, end) ranges hold."""
    return sum(b - a + 1 for a, b in ranges)
