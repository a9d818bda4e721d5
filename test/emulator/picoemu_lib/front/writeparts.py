"""A write that spans several replicasets, run as Picodata runs it: one part per replicaset (parts.Part,
a set of buckets), each in a transaction of its own and committed on its own, whatever the others did;
the client gets the merged answer (parts.merge_answers). A simple Query runs whole per part; an
Execute runs its Bind and Execute per part, the statement prepared afresh as the front's own."""

import re
import struct
import time
from typing import TYPE_CHECKING, Callable, List, Optional, Sequence

from .. import dialect
from .. import parts as emu_parts
from .entry import Entry, Replay
from .link import Capture
from .log import log
from .wire import cstr, msg, read_cstr

if TYPE_CHECKING:
    from .session import Session

PART_STMT = "picoemu_front_part"  # a write run once per replicaset (execute_parts)


class WriteParts:
    def __init__(self, s: "Session") -> None:
        self.s = s

    def write_parts(self, sql: str, insert_rows: Optional[int]) -> Optional[List[emu_parts.Part]]:
        self.s.front.settings.refresh()
        return emu_parts.write_parts(sql, insert_rows, self.s.front.settings.d)

    def set_part(self, part: Optional[emu_parts.Part]) -> None:
        """The settings of a part (parts.Part; None: no part) in a transaction of their own, in
        the extended protocol (a simple Query would drop the client's unnamed statement)."""
        link = self.s.link
        self.s.inject.extended(part.settings() if part is not None else emu_parts.NO_PART)
        link.push(Entry("swallow", ends=(b"Z",)))
        link.send_server(msg(b"S"))

    async def run_part(self, part: Optional[emu_parts.Part], send: Callable[[], None]) -> bytes:
        """One part: its settings set in a transaction of their own (so they outlive a failed run,
        and a run again of this part alone, rerun.hold_retry, sees them), then send() sends the
        statement; returns what the client would have got for it. Nothing else is in flight
        meanwhile."""
        link = self.s.link
        self.set_part(part)
        real = link.cw
        cap = link.cw = Capture(real)
        try:
            send()
            link.flush_server()
            await link.settled()
        finally:
            link.cw = real
        return bytes(cap.buf)

    async def run_parts(self, parts: Sequence[Optional[emu_parts.Part]], send: Callable[[], None]) -> bytes:
        """Every part runs, whatever the others did (Picodata sends every replicaset its part), each
        committed on its own; the client gets the merged answer (parts.merge_answers)."""
        link = self.s.link
        answers = [await self.run_part(p, send) for p in parts]
        self.set_part(None)
        link.flush_server()
        await link.settled()
        failed = [p.rs if p else "the statement" for p, a in zip(parts, answers)
                  if any(t == b"E" for t, _ in emu_parts.messages(a))]
        if failed:
            log("a write of %d replicasets failed on %s; the other parts stay applied"
                % (len(parts), ", ".join(failed)))
        return emu_parts.merge_answers(answers)

    async def query_parts(self, sql: str, raw: bytes) -> bool:
        """A simple Query that writes rows of several replicasets: run per part (True), else False."""
        s = self.s
        if not re.match(r"\s*(insert|update|delete)\b", sql, re.I):
            return False
        v = s.judge.peek(sql)
        if v is None or v.kind != "query" or v.reads:
            return False  # run_query refuses it, or it is no write
        limit = s.opts.motion_limit(v.options)
        if v.insert_rows is not None and limit and v.insert_rows > limit:
            return False  # refused as a whole
        parts = self.write_parts(v.sql, v.insert_rows)
        if not parts:
            return False
        s.link.flush_server()
        await s.link.settled()
        out = await self.run_parts(parts, lambda: s.runner.run_query(sql, raw))
        s.link.cw.write(out + msg(b"Z", b"I"))
        return True

    async def execute_parts(self, body: bytes, raw: bytes, alone: bool = False) -> bool:
        """An Execute of a write of several replicasets: its Bind and Execute run once per part, each
        with a Sync of its own (True); False for any other Execute. The client's batch is never run
        again as a whole afterwards (its parts are committed). With alone, any write runs so, as
        one part when it is not split."""
        s = self.s
        link, prepared, rerun = s.link, s.prepared, s.rerun
        portal, _ = read_cstr(body, 0)
        info = prepared.portals.get(portal)
        batch_rec = rerun.batch_rec
        if info is None or info["kind"] != "query" or info["reads"] or batch_rec is None:
            return False
        limit = s.opts.motion_limit(info["options"])
        if info["insert_rows"] is not None and limit and info["insert_rows"] > limit:
            return False
        bind = [(b, r) for t, b, r in batch_rec["msgs"] if t == b"B" and read_cstr(b, 0)[0] == portal]
        parts: Optional[Sequence[Optional[emu_parts.Part]]] = (
            self.write_parts(info["sql"], info["insert_rows"]) if bind else None)
        if not parts and alone and bind:
            parts = [None]
        if not parts:
            return False
        # Each part prepares the statement afresh as the front's own: a statement without parameters
        # keeps the generic plan of its first Bind, folded for another part (sql/part.sql)
        # (the front's cached verdict: the statement was judged at its Parse)
        verdict = s.judge.verdict(info["sql"])
        if isinstance(verdict, dialect.Reject):
            return False
        text = verdict.sql
        batch_rec["ok"] = False
        link.send_server(msg(b"H"))
        link.flush_server()
        await link.settled()
        if link.failed_batch == link.batch_no:
            return True  # an earlier message of the batch failed: the server would skip this one
        link.push(Entry("swallow", ends=(b"Z",)))  # ends the batch so far (Picodata: autocommit)
        link.send_server(msg(b"S"))
        types = info["types"] or []
        parse = msg(b"P", cstr(PART_STMT) + cstr(text) + struct.pack("!H", len(types)) +
                    b"".join(struct.pack("!I", t) for t in types))
        pos = read_cstr(bind[-1][0], read_cstr(bind[-1][0], 0)[1])[1]
        bbody = cstr(portal) + cstr(PART_STMT) + bind[-1][0][pos:]

        def send() -> None:
            for ends, m in ((b"3", msg(b"C", b"S" + cstr(PART_STMT))), (b"1", parse)):
                link.push(Entry("swallow", ends=(ends,)))
                link.send_server(m)
            rec: Replay = {"kind": "extended", "msgs": [(b"B", bbody, msg(b"B", bbody)), (b"E", body, raw)],
                           "ok": True, "tries": 0, "t0": time.monotonic()}
            saved, rerun.batch_rec = rerun.batch_rec, rec
            s.inject.bind_params(bbody)
            link.push(Entry("swallow", ends=(b"2",)))
            link.send_server(msg(b"B", bbody))
            s.runner.run_execute(body, raw)
            rerun.batch_rec = saved
            link.push(Entry("sync", ends=(b"Z",)))
            link.send_server(msg(b"S"))
        prepared.stmts[PART_STMT] = info  # inject.bind_params looks the statement up
        try:
            out = await self.run_parts(parts, send)
        finally:
            prepared.stmts.pop(PART_STMT, None)
        link.push(Entry("swallow", ends=(b"3",)))
        link.send_server(msg(b"C", b"S" + cstr(PART_STMT)))
        link.hold = None
        if any(t == b"E" for t, _ in emu_parts.messages(out)):
            link.failed_batch = link.batch_no  # the rest of the client's batch is skipped
        elif link.failed_batch == link.batch_no:
            link.failed_batch = -1  # a part's error was followed by its successful run again
        link.cw.write(out)
        return True
