"""The wire proxying of a session: the client's and the server's connections and the ordered queue
of the answers the client is owed (Entry): the server's answers passed on in order, the front's own
answers queued between them, the answers to the front's own messages dropped, an error skipping the
rest of an extended-protocol batch, a statement's rows held back while they may exceed
sql_motion_row_max."""

import asyncio
import struct
from typing import TYPE_CHECKING, Any, List, Optional, Protocol

from .entry import Entry
from .log import log
from .texts import picodata_error, read_only_refusal, row_limit_text, vdbe_limit_text
from .wire import Frames, error_msg, null_data_row

if TYPE_CHECKING:
    from .session import Session


class Writer(Protocol):
    """What the front uses of the client's asyncio.StreamWriter (or of a Capture in its place)."""

    @property
    def transport(self) -> Any: ...

    def write(self, data: bytes) -> None: ...

    async def drain(self) -> None: ...

    def close(self) -> None: ...

    def get_extra_info(self, name: str, default: Any = None) -> Any: ...


class Capture:
    """Stands in for the client's writer while the front runs something whose answer the client does
    not get as it comes (the parts of a write, a write past its deadline): keeps it in buf."""

    def __init__(self, real: Writer) -> None:
        self.real = real
        self.transport = real.transport
        self.buf = bytearray()

    def write(self, data: bytes) -> None:
        self.buf += data

    async def drain(self) -> None:
        return None

    def close(self) -> None:
        self.real.close()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.real.get_extra_info(name, default)


class Link:
    """The client connection (cr, cw), the server connection (sr, sw, once the startup opened it),
    the messages for the server not yet written (sbuf), the queue of answers owed (pending) and the
    extended-protocol batch bookkeeping (batch_no: Syncs seen from the client; failed_batch: the
    batch in which the server reported an error; skip_until_sync: the front refused a message of
    this batch; hold: the last counted Execute, whose outcome decides whether the batch goes on)."""

    def __init__(self, s: "Session", reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.s = s
        self.cr = reader
        self.cw: Writer = writer
        self.sr: Optional[asyncio.StreamReader] = None
        self.sw: Optional[asyncio.StreamWriter] = None
        self.pending: List[Entry] = []
        self.batch_no = 0
        self.failed_batch = -1
        self.skip_until_sync = False
        self.sbuf: List[bytes] = []
        self.hold: Optional[Entry] = None

    # ---- output ordering ---------------------------------------------------------------------------
    def push(self, entry: Entry) -> None:
        entry.batch = self.batch_no
        self.pending.append(entry)
        if entry.kind == "synth" and len(self.pending) == 1:
            self.drain_synth()

    def drain_synth(self) -> None:
        out = bytearray()
        while self.pending and self.pending[0].kind == "synth":
            e = self.pending.pop(0)
            out += e.data
            self.finish(e)
        if out:
            self.cw.write(bytes(out))

    @staticmethod
    def finish(e: Entry) -> None:
        if e.on_done:
            e.on_done(e)
        if e.done is not None:
            e.done.set()

    def synth(self, data: bytes) -> None:
        self.push(Entry("synth", data=data))

    def send_server(self, data: bytes) -> None:
        self.sbuf.append(data)

    def flush_server(self) -> None:
        if self.sbuf:
            assert self.sw is not None
            self.sw.write(b"".join(self.sbuf))
            self.sbuf = []

    def drain_into(self, out: bytearray) -> None:
        while self.pending and self.pending[0].kind == "synth":
            s = self.pending.pop(0)
            out += s.data
            self.finish(s)

    async def settled(self) -> None:
        """Returns once every answer the front waits for has come."""
        while self.pending and not self.s.closed:
            self.flush_server()
            await asyncio.sleep(0.001)

    # ---- server -> client --------------------------------------------------------------------------
    async def server_pump(self) -> None:
        assert self.sr is not None
        frames = Frames()
        try:
            while True:
                data = await self.sr.read(262144)
                if not data:
                    break
                out = bytearray()
                for m in frames.feed(data):
                    self.on_server_message(m[:1], m, out)
                if out:
                    self.cw.write(bytes(out))
                if self.cw.transport.get_write_buffer_size() > 1 << 20:
                    await self.cw.drain()
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.s.close()

    def skip_to_sync(self, e: Entry) -> None:
        """After an error in a batch of the extended protocol the server skips every message until
        Sync: drop their entries."""
        self.failed_batch = e.batch
        while self.pending and self.pending[0].kind != "sync":
            self.finish(self.pending.pop(0))

    def complete(self, e: Entry, out: bytearray, answer: bytes = b"") -> None:
        """e, the first pending entry, got its last message: out gets answer, then the front's own
        answers queued behind e."""
        self.pending.pop(0)
        e.completed = True
        out += answer
        self.finish(e)
        if self.pending and self.pending[0].kind == "synth":
            self.drain_into(out)

    def on_server_message(self, typ: bytes, m: bytes, out: bytearray) -> None:
        if typ in (b"N", b"S", b"A"):
            out += m
            return
        if typ == b"K":
            # Picodata sends no BackendKeyData (src/pgproto/client.rs: the startup ends with
            # ParameterStatus and ReadyForQuery), so a client has no key to cancel with.
            return
        if not self.pending:
            if typ == b"Z":
                self.s.authenticated = True
            out += m
            return
        e = self.pending[0]
        if e.kind == "synth":  # emit queued answers of the front that are now in order
            self.drain_into(out)
            if not self.pending:
                out += m
                return
            e = self.pending[0]
        if typ == b"E":
            self._on_error(e, m, out)
        elif e.kind == "vdbe":
            if typ in e.ends:
                self.complete(e, out, b"" if e.muted else e.deferred)
        elif e.kind == "swallow":
            if e.capture is not None and typ == b"t":
                cnt = int.from_bytes(m[5:7], "big")
                e.capture["types"] = list(struct.unpack("!%dI" % cnt, m[7:7 + 4 * cnt]))
            if typ in e.ends:
                self.complete(e, out)
        else:  # fwd or sync
            self._on_answer(e, typ, m, out)

    def _on_error(self, e: Entry, m: bytes, out: bytearray) -> None:
        front = self.s.front
        if e.kind == "vdbe":
            if not e.muted:
                text = vdbe_limit_text(e.limit, front.settings.version)
                out += error_msg("XX000", text)
                front.audit.record(self.s, "limit", "XX000", text, e.tag)
            self.pending.pop(0)
            self.finish(e)
            if not e.simple:
                self.skip_to_sync(e)
            return
        if e.kind == "swallow":
            log("injected message failed: %r" % m[5:200])
        m = read_only_refusal(m, front.settings.version)
        if not self.s.rerun.hold_retry(e, m):
            # the client sees the error (as Picodata would send it), unless the statement runs again
            out += picodata_error(m, bind=e.bind, tables=front.settings.d.get("tables", []))
        if e.simple:
            e.exceeded = False
            e.held = []
            if e.vdbe is not None:  # the rest of the query string is skipped: so is the check
                self.pending.pop(0)
                self.finish(e)
                if self.pending and self.pending[0] is e.vdbe:
                    self.finish(self.pending.pop(0))
            return
        self.skip_to_sync(e)

    def _row_limit(self, e: Entry, typ: bytes, m: bytes, out: bytearray) -> bool:
        """A DataRow or the end of the rows of a statement with a row limit: the rows are held back
        until they are known to fit, else the client gets Picodata's error and no row. True when
        the message is dealt with."""
        if typ == b"D":
            e.rows += 1
            if e.exceeded:
                return True
            if e.rows > e.limit:
                e.exceeded = True
                e.held = []
                return True
            e.held.append(m)
            return True
        if not e.exceeded:
            if e.held and e.vdbe is None:
                out += b"".join(e.held)
                e.held = []
            return False
        # Picodata gathers the virtual table before answering: the client gets the error, no rows
        text = row_limit_text(e.limit, e.limit + 1, self.s.front.settings.version)
        out += error_msg("XX000", text)
        self.s.front.audit.record(self.s, "limit", "XX000", text, e.tag)
        e.held = []
        e.limit = 0
        if e.vdbe is not None:
            e.vdbe.muted = True
            if e.simple:
                self.pending.pop(0)
                self.finish(e)
                return True
        if e.simple:
            return True  # the entry ends with ReadyForQuery
        self.pending.pop(0)
        self.finish(e)
        if e.batch == self.batch_no:
            self.skip_until_sync = True  # the rest of the batch is skipped, as after any error
        return True

    def _on_answer(self, e: Entry, typ: bytes, m: bytes, out: bytearray) -> None:
        """A message of the server's answer to a forwarded statement (fwd) or to a Sync."""
        if typ == b"D" and e.null_rows:
            m = null_data_row(m)
        if e.limit and typ in (b"D", b"C", b"s") and self._row_limit(e, typ, m, out):
            return
        rerun = self.s.rerun
        if typ == b"Z" and rerun.retry is not None:
            if rerun.run_again(e):
                return
            out += rerun.retry.err  # not run again: the client gets the error after all
            rerun.retry = None
        if e.vdbe is not None and typ in e.ends:
            # the statement's answer (its held rows and completion) waits for the check after it
            e.vdbe.deferred = b"".join(e.held) + m
            e.held = []
            self.pending.pop(0)
            e.completed = True
            self.finish(e)
            return
        out += m
        if typ in e.ends:
            self.pending.pop(0)
            e.completed = True
            self.finish(e)
            if self.pending and self.pending[0].kind == "synth":
                self.drain_into(out)
