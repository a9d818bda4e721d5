"""A dead master stalls the tier: a statement Picodata would dispatch through Lua while the catalog
shows a master of its tier Offline waits, reading nothing more from this client, until the master is
back or the statement's deadline has passed (route.dispatch_plan, route.dql_timeout_text)."""

import asyncio
import os
import time
from typing import TYPE_CHECKING, Any, Awaitable, Mapping, Optional, Tuple

from .. import route
from .judge import Params, Route
from .link import Capture
from .log import log
from .wire import error_msg, msg, read_cstr

if TYPE_CHECKING:
    from .session import Session

# A dead master stalls the tier (route.dispatch_plan): a statement Picodata would dispatch
# through Lua waits while the catalog shows a master of its tier Offline, until that master is back
# or the statement's deadline has passed (Picodata's DEFAULT_QUERY_TIMEOUT, 360 s, src/sql/router.rs;
# no statement option or cluster setting changes it at any tag), then fails with Picodata's
# `dql timeout exceeded` (a write is first run on the replicasets that can take it, as Picodata
# sends it to the live masters before giving up). PICOEMU_QUERY_TIMEOUT (seconds, environment of
# the picoemu command that starts an instance) shortens the deadline: an emulator-only knob, for
# tests; Picodata has none.
QUERY_TIMEOUT = float(os.environ.get("PICOEMU_QUERY_TIMEOUT", "360"))


class Stall:
    def __init__(self, s: "Session") -> None:
        self.s = s

    async def stall(self, opts: Mapping[str, Any], r: Optional[Route], params: Params, write: bool,
                    insert_rows: Optional[int], statement: str) -> Optional[str]:
        """A statement Picodata would dispatch through Lua while the catalog shows a master of its
        tier Offline waits here, reading nothing more from this client, until the master is back
        (None: the statement then runs as usual) or the deadline has passed (Picodata's error
        text). Not for a statement refused before dispatch (forward, a VALUES list over the row
        limit): those are refused as usual."""
        s = self.s
        if r is None or r.get("toks") is None:
            return None
        limit = s.opts.motion_limit(opts)
        if insert_rows is not None and limit and insert_rows > limit:
            return None
        st = s.front.settings
        st.refresh()
        pref = opts.get("read_preference") or s.opts.conn.get("read_preference") or "leader"
        try:
            plan = route.dispatch_plan(st.d, st.instance, st.version, r["toks"], params, pref, write)
        except Exception as exc:  # not read here: the statement runs as it comes
            log("dead master: statement not judged (%r) | %s" % (exc, statement[:200]))
            return None
        if plan is None or not route.stopped_masters(st.d, plan["tiers"]):
            return None
        if s.judge.forward_text(opts, r, params, statement) is not None:
            return None
        t0 = time.monotonic()
        s.front.stalled += 1
        log("dead master: a statement waits for every master of tier %s (stopped: %s), at most %.0f s "
            "(%d statements so far) | %s" % (", ".join(plan["tiers"]), ", ".join(
                route.stopped_masters(st.d, plan["tiers"])), QUERY_TIMEOUT, s.front.stalled,
                statement[:200]))
        while True:
            await asyncio.sleep(0.05)
            st.refresh()
            if not route.stopped_masters(st.d, plan["tiers"]):
                log("dead master: the masters are back after %.1f s; the statement runs" % (time.monotonic() - t0))
                return None
            if time.monotonic() - t0 >= QUERY_TIMEOUT or s.closed:
                text = route.dql_timeout_text(st.d, plan)
                log("dead master: deadline passed after %.1f s: %s" % (time.monotonic() - t0, text))
                return text

    async def stall_query(self, sql: str) -> Optional[Tuple[str, bool]]:
        """stall() for a simple Query: (Picodata's error, whether it writes), or None."""
        s = self.s
        v = s.judge.peek(sql)
        if v is None or v.kind != "query":
            return None  # run_query refuses it, or it is not dispatched
        text = await self.stall(v.options, s.judge.route(v), None, not v.reads, v.insert_rows, sql)
        return None if text is None else (text, not v.reads)

    async def stall_execute(self, body: bytes) -> Optional[Tuple[str, bool]]:
        """stall() for an Execute: (Picodata's error, whether it writes), or None. A read whose
        Bind waited past the deadline already has its error (prepared.on_bind)."""
        s = self.s
        prepared, link = s.prepared, s.link
        portal, _ = read_cstr(body, 0)
        if portal in prepared.dead_portals:
            return prepared.dead_portals.pop(portal), False
        info = prepared.portals.get(portal)
        if info is None or info["kind"] != "query" or link.skip_until_sync or link.failed_batch == link.batch_no:
            return None
        text = await self.stall(info["options"], info.get("route"), prepared.portal_params.get(portal),
                                not info["reads"], info["insert_rows"], info["sql"])
        return None if text is None else (text, not info["reads"])

    async def captured(self, coro: Awaitable[Any]) -> None:
        """Runs coro (a statement sent on) with what the client would get for it captured and
        dropped: the client's earlier answers reach it first."""
        link = self.s.link
        link.flush_server()
        await link.settled()
        real = link.cw
        link.cw = Capture(real)
        try:
            await coro
            link.send_server(msg(b"H"))  # answers the coroutine left behind no Sync come now
            link.flush_server()
            await link.settled()
        finally:
            link.cw = real

    async def after_deadline(self, body: bytes, raw: bytes, text: str, write: bool) -> None:
        """An Execute whose deadline passed while it waited for a master: a write first runs, in a
        batch of its own, on whatever replicasets can take it (its answer dropped); then the client
        gets Picodata's error and the rest of its batch is skipped."""
        link = self.s.link
        link.send_server(msg(b"H"))
        await self.captured(self.s.parts.execute_parts(body, raw, alone=True) if write else asyncio.sleep(0))
        link.synth(error_msg("XX000", text))
        link.skip_until_sync = True
