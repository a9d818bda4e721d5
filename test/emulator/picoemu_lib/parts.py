"""Writes that span several replicasets, applied as Picodata applies them: one part per replicaset,
each committed on its own.

Picodata's coordinator sends each replicaset's part of a keyless UPDATE or DELETE (or of an INSERT
whose rows belong to several replicasets) to that replicaset's master, where the storage runs it in
a transaction of its own (src/sql/dispatch.lua, one_step_dispatch / two_step_dispatch). A part that
fails does not undo the parts that others applied. The front (front.writeparts) runs such a statement
once per replicaset, each run in its own implicit transaction, and answers with one result: the sum
of the row counts, or the first error.

A part is a set of buckets, not a replicaset: the buckets its replicaset owned when the front split
the statement (the session settings picoemu.part_table / part_buckets / part_reads, sql/part.sql). Each
run writes only the rows of its part's buckets, wherever they are by then. So a bucket that moves
while the parts run (picoemu move, rebalance) is written exactly once: were the parts named by
replicaset, a row whose bucket moved from a replicaset whose part had not yet run to one whose part
had already run would be written by neither, and the client told it was (one acknowledged row lost
now and then under moves), or, the other way round, by both.

This module decides which statements are split (write_parts) and merges the answers of the runs
(merge_answers). Pure functions: unit-tested in tests/test_parts.py.
"""

import re
import struct
from typing import List, Optional, Sequence, Set, Tuple

from .buckets import Range, multirange, ranges_by_owner
from .state import Doc

PART_TABLE, PART_BUCKETS, PART_READS = "picoemu.part_table", "picoemu.part_buckets", "picoemu.part_reads"


class Part:
    """One run of a split write: the replicaset whose buckets it covers (rs, for the log), those
    buckets (ranges, inclusive pairs), the table and whether the run's reads of the table are
    restricted to them (an UPDATE or DELETE) or only its inserted rows (an INSERT)."""
    __slots__ = ("rs", "ranges", "table", "reads")

    def __init__(self, rs: str, ranges: List[Range], table: str, reads: bool) -> None:
        self.rs, self.ranges, self.table, self.reads = rs, ranges, table, reads

    def settings(self) -> List[Tuple[str, str]]:
        """The session settings of this run (sql/part.sql)."""
        return [(PART_TABLE, self.table), (PART_BUCKETS, multirange(self.ranges)),
                (PART_READS, "on" if self.reads else "off")]

    def __repr__(self) -> str:
        return "Part(%s, %s)" % (self.rs, multirange(self.ranges))


NO_PART: List[Tuple[str, str]] = [(PART_TABLE, ""), (PART_BUCKETS, ""), (PART_READS, "")]
# Every sharded table reads no bucket: a read whose Execute will not run (a stopped master's
# deadline passed while it waited, front.prepared on_bind) binds without opening a foreign scan.
NOTHING = [(PART_TABLE, "*"), (PART_BUCKETS, "{}"), (PART_READS, "on")]

_WRITE = re.compile(r'^\s*(insert\s+into|update|delete\s+from)\s+(?:"?public"?\s*\.\s*)?'
                    r'(?:"([^"]+)"|([A-Za-z_][A-Za-z0-9_]*))', re.I | re.S)
_STRING = re.compile(r"'(?:[^']|'')*'")
_NOT_ROUTED = re.compile(r"\b(or|not|join|union|except|intersect|select|with|in|between|like|is)\b")
_TAIL = re.compile(r"\s(order\s+by|group\s+by|limit|having|option|returning|offset)\b.*$", re.S)
_TERM = re.compile(r'^\(*\s*"?([a-z_][a-z0-9_]*)"?\s*=\s*(-?[0-9]+|#|\$[0-9]+)\s*\)*$')


def _fixed_columns(where: str) -> Optional[Set[str]]:
    """Columns that a conjunction of equalities fixes to a literal or a parameter; None when the
    clause is not a plain conjunction (then nothing is known)."""
    if _NOT_ROUTED.search(where) or ";" in where or "--" in where or "/*" in where:
        return None
    cols = set()
    for term in re.split(r"\band\b", where):
        m = _TERM.match(term.strip())
        if m:
            cols.add(m.group(1))
    return cols


def one_bucket(sql: str, sharding_key: Sequence[str]) -> bool:
    """True when an UPDATE or DELETE fixes every sharding-key column (or bucket_id) by an equality
    in a plain conjunction: its rows lie in one bucket, hence on one replicaset. False when unsure:
    the statement is then split, which is never wrong (a part with no rows changes nothing)."""
    q = _STRING.sub("#", sql.lower())
    q = re.sub(r"\s+", " ", q)
    m = re.search(r"\bwhere\b(.*)$", q, re.S)
    if not m or _NOT_ROUTED.search(q):  # a subquery, OR, IN, ... anywhere: not sure
        return False
    cols = _fixed_columns(_TAIL.sub("", m.group(1)))
    if cols is None:
        return False
    return "bucket_id" in cols or all(k.lower() in cols for k in sharding_key)


def write_parts(sql: str, insert_rows: Optional[int], state: Doc) -> Optional[List[Part]]:
    """The parts (Part, by replicaset name) of a write on a sharded table that may touch rows of
    several replicasets; None for any other statement (run once, as it comes). state: the cluster's
    state.json, read when the statement arrives: its bucket map partitions the tier's buckets."""
    m = _WRITE.match(sql)
    if not m:
        return None
    name = m.group(2) if m.group(2) is not None else m.group(3).lower()
    table = next((t for t in state.get("tables", []) if t.get("name") == name), None)
    if table is None or table.get("global"):
        return None  # a global table is not sharded: one Raft operation, as it comes
    insert = m.group(1).lower().startswith("insert")
    if insert:
        if insert_rows == 1:
            return None  # one row, one bucket
    elif one_bucket(sql[m.end():], table.get("sharding_key") or []):
        return None
    ranges = ranges_by_owner(state.get("buckets", {}).get(table.get("tier"), []))
    if len(ranges) < 2:
        return None
    return [Part(rs, ranges[rs], name, not insert) for rs in sorted(ranges)]


def messages(data: bytes) -> List[Tuple[bytes, bytes]]:
    """(type, whole message) of a buffer of backend messages."""
    pos, out = 0, []
    while pos + 5 <= len(data):
        ln = struct.unpack("!I", data[pos + 1:pos + 5])[0]
        out.append((data[pos:pos + 1], data[pos:pos + 1 + ln]))
        pos += 1 + ln
    return out


def _tag(m: bytes) -> bytes:
    return m[5:].rstrip(b"\0")


def merge_answers(answers: Sequence[bytes]) -> bytes:
    """One answer for the client from the answers of the parts (each the messages the client would
    have got for that run, ReadyForQuery included or not): notices kept; the first part's error if
    any part failed (the parts that succeeded stay applied); else the rows and one CommandComplete
    with the summed count. No ReadyForQuery: the caller adds it where the protocol wants one."""
    keep: List[bytes] = []
    rows: List[bytes] = []
    desc: Optional[bytes] = None
    err: Optional[bytes] = None
    word: Optional[bytes] = None
    count = 0
    for data in answers:
        for typ, m in messages(data):
            if typ in (b"N", b"S", b"A"):
                keep.append(m)
            elif typ == b"E":
                err = err or m
            elif typ == b"T":
                desc = desc or m
            elif typ == b"D":
                rows.append(m)
            elif typ == b"C":
                parts = _tag(m).split(b" ")
                word = b" ".join(parts[:-1])
                count += int(parts[-1]) if parts[-1].isdigit() else 0
    out = b"".join(keep)
    if err is not None:
        return out + err
    if word is None:
        return out
    body = word + b" " + str(count).encode() + b"\0"
    return out + (desc or b"") + b"".join(rows) + b"C" + struct.pack("!I", len(body) + 4) + body
