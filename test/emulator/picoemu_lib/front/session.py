"""One client's session with a front: the startup (Picodata's startup options, the connection to the
instance's PostgreSQL server), then every message the client sends, each handed to the concern it
belongs to (link: the two connections and the answers owed; judge, runner, prepared, writeparts,
stall, rerun, inject, opts)."""

import asyncio
import struct
import time
from typing import TYPE_CHECKING, Dict, Optional

from .. import stmts as emu_stmts
from .entry import Entry
from .inject import Injector
from .judge import Judge
from .link import Link
from .log import log
from .options import UNKNOWN_STARTUP_DROP, SessionOptions, parse_startup_options
from .prepared import Prepared
from .rerun import Rerun
from .runner import Runner
from .stall import Stall
from .wire import (CANCEL_REQUEST, GSS_REQUEST, HOST, PROTO_3, SSL_REQUEST, Frames, cstr, error_msg, msg,
                   read_cstr)
from .writeparts import WriteParts

if TYPE_CHECKING:
    from .server import Front


class Session:
    def __init__(self, front: "Front", reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.front = front
        peer = writer.get_extra_info("peername")
        self.peer = "%s:%s" % peer[:2] if peer else "?"
        self.params: Dict[str, str] = {}  # the client's startup parameters
        self.authenticated = False
        self.closed = False
        self.link = Link(self, reader, writer)
        self.opts = SessionOptions(front)
        self.judge = Judge(self)
        self.prepared = Prepared(self)
        self.runner = Runner(self)
        self.inject = Injector(self)
        self.rerun = Rerun(self)
        self.parts = WriteParts(self)
        self.stall = Stall(self)

    async def run(self) -> None:
        self.front.sessions.add(self)
        try:
            if not await self.startup():
                return
            pump = asyncio.ensure_future(self.link.server_pump())
            try:
                await self.client_loop()
            finally:
                pump.cancel()
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        except Exception as exc:  # keep the front alive; this session only
            log("session %s failed: %r" % (self.peer, exc))
        finally:
            self.close()

    def close(self) -> None:
        self.front.sessions.discard(self)
        if self.closed:
            return
        self.closed = True
        for w in (self.link.cw, self.link.sw):
            if w is not None:
                try:
                    w.close()
                except Exception:
                    pass

    # ---- startup -----------------------------------------------------------------------------------
    async def _startup_packet(self) -> bytes:
        """The body of the client's StartupMessage (b"" when the connection ends here)."""
        link = self.link
        while True:
            head = await link.cr.readexactly(8)
            ln, code = struct.unpack("!II", head)
            if ln < 8 or ln > 10000:
                return b""
            body = await link.cr.readexactly(ln - 8)
            if code in (SSL_REQUEST, GSS_REQUEST):
                link.cw.write(b"N")
                continue
            if code == CANCEL_REQUEST:
                # Picodata's handshake takes only a startup or SSL request: anything else is a
                # protocol violation and the connection is closed unanswered. A cancel request
                # stops nothing there, so the front relays none, and records it as refused.
                self.front.audit.record_cancel(self.front.settings.instance, self.peer)
                return b""
            if code != PROTO_3:
                link.cw.write(error_msg("08P01", "unsupported frontend protocol %d.%d" % (code >> 16, code & 0xffff),
                                        "FATAL"))
                return b""
            return body

    def _read_options(self, options: Optional[str]) -> bool:
        """Picodata's startup options of the client; False when Picodata would close the connection."""
        st = self.front.settings
        st.refresh()
        version = st.version
        try:
            self.opts.conn = parse_startup_options(options, version)
            self.prepared.stmt_invalidation = self.opts.conn.pop(emu_stmts.OPTION, False)
            if emu_stmts.OPTION in self.params and emu_stmts.has_stmt_invalidation(version):
                self.prepared.stmt_invalidation = emu_stmts.parse_flag(self.params[emu_stmts.OPTION])
        except ValueError as exc:
            # Picodata's handshake fails with PgError::Other, which nothing writes to the client: the
            # connection is closed with no ErrorResponse (ClientParams::new, src/pgproto/client/
            # startup.rs; PgClient::accept, src/pgproto/client.rs:40, which answers only a failed
            # authentication; do_handle_client logs "connection has <error>", src/pgproto.rs:144 and
            # :127, 26.2.1-rc2; the same at 25.5.10, 26.1.6 and 26.2.1-rc1).
            log("connection of %s (%s) has %s: closed at startup, no answer" % (
                self.params.get("application_name", ""), self.peer, exc))
            self.front.audit.record_startup(st.instance, self.peer, self.params, options, str(exc))
            return False
        if self.opts.conn:
            log("session of %s (%s) with startup options %s" % (
                self.params.get("application_name", ""), self.peer,
                ",".join("%s=%s" % kv for kv in sorted(self.opts.conn.items()))))
        return True

    async def startup(self) -> bool:
        link = self.link
        body = await self._startup_packet()
        if not body:
            return False
        pos = 0
        while pos < len(body) and body[pos] != 0:
            k, pos = read_cstr(body, pos)
            v, pos = read_cstr(body, pos)
            self.params[k] = v
        if not self._read_options(self.params.pop("options", None)):
            return False
        for k in UNKNOWN_STARTUP_DROP:
            if k in self.params:
                log("startup parameter %s=%s accepted and ignored" % (k, self.params.pop(k)))
        up = dict(self.params)
        gucs = self.opts.connection_gucs()
        if gucs:
            up["options"] = " ".join("-c %s=%s" % (k, v) for k, v in gucs.items())
        try:
            sr, sw = await asyncio.wait_for(asyncio.open_connection(HOST, self.front.private_port), 10)
        except (OSError, asyncio.TimeoutError) as exc:
            link.cw.write(error_msg("08006", "picoemu front: instance %s is not reachable (%s)"
                                    % (self.front.settings.instance, exc), "FATAL"))
            await link.cw.drain()
            return False
        link.sr, link.sw = sr, sw
        payload = struct.pack("!I", PROTO_3) + b"".join(cstr(k) + cstr(v) for k, v in up.items()) + b"\0"
        sw.write(struct.pack("!I", len(payload) + 4) + payload)
        return True

    # ---- client -> server --------------------------------------------------------------------------
    async def client_loop(self) -> None:
        link = self.link
        cr = link.cr
        frames = Frames()
        while True:
            link.flush_server()
            data = await cr.read(262144)
            if not data:
                return
            for raw in frames.feed(data):
                if await self.on_client_message(raw[:1], raw[5:], raw):
                    link.flush_server()
                    return

    async def on_client_message(self, typ: bytes, body: bytes, raw: bytes) -> bool:
        """Handles one client message; True when the session ends."""
        link = self.link
        if not self.authenticated:
            link.send_server(raw)
            return False
        if typ == b"X":
            link.send_server(raw)
            return True
        if typ == b"Q":
            await self.on_query(body[:-1].decode("utf-8", "replace"), raw)
            return False
        if typ == b"S":
            self.rerun.batch_rec = None
            link.skip_until_sync = False
            link.push(Entry("sync", ends=(b"Z",)))
            link.batch_no += 1
            link.send_server(raw)
            return False
        if typ == b"H":
            link.send_server(raw)
            return False
        await self.extended_message(typ, body, raw)
        return False

    async def extended_message(self, typ: bytes, body: bytes, raw: bytes) -> None:
        """A message of an extended-protocol batch (Parse, Bind, Describe, Execute, Close, ...)."""
        link = self.link
        rec = self.rerun.batch_rec
        if rec is None:
            rec = self.rerun.batch_rec = {"kind": "extended", "msgs": [], "ok": True, "tries": 0,
                                          "t0": time.monotonic()}
        if typ in (b"B", b"E"):
            rec["msgs"].append((typ, body, raw))
        elif typ not in (b"P", b"D"):  # Close, FunctionCall: a batch not run again
            rec["ok"] = False
        hold = link.hold
        if hold is not None and not hold.completed and hold in link.pending:
            # a statement of this batch may still exceed sql_motion_row_max: know it before
            # forwarding the next statement (Picodata skips the rest of a failed batch)
            hold.done = asyncio.Event()
            link.send_server(msg(b"H"))
            link.flush_server()
            await hold.done.wait()
        link.hold = None
        if link.skip_until_sync or link.failed_batch == link.batch_no:
            return  # Picodata (like PostgreSQL) discards the rest of a failed batch
        assert link.sw is not None
        if link.sw.transport.get_write_buffer_size() > 1 << 20:
            link.flush_server()
            await link.sw.drain()
        if typ == b"P":
            await self.prepared.on_parse(body, raw)
        elif typ == b"B":
            await self.prepared.on_bind(body, raw)
        elif typ == b"D":
            self.prepared.on_describe(body, raw)
        elif typ == b"E":
            stalled = await self.stall.stall_execute(body)
            if stalled is not None:
                await self.stall.after_deadline(body, raw, *stalled)
            elif not await self.parts.execute_parts(body, raw):
                self.runner.run_execute(body, raw)
        elif typ == b"C":
            self.prepared.on_close(body, raw)
        else:
            if typ == b"F":  # FunctionCall: answered with FunctionCallResponse and ReadyForQuery
                link.push(Entry("fwd", ends=(b"Z",), simple=True))
            link.send_server(raw)

    # ---- simple query ------------------------------------------------------------------------------
    async def on_query(self, sql: str, raw: bytes) -> None:
        stalled = await self.stall.stall_query(sql)
        if stalled is not None:
            text, write = stalled
            if write:  # sent to the live masters when the deadline passed: applied there
                await self.stall.captured(self.run_whole_query(sql, raw))
            self.link.synth(error_msg("XX000", text) + msg(b"Z", b"I"))
            return
        await self.run_whole_query(sql, raw)

    async def run_whole_query(self, sql: str, raw: bytes) -> None:
        if not await self.parts.query_parts(sql, raw):
            self.runner.run_query(sql, raw)
