"""Running a write again: after an error Picodata would not raise (a serialization failure or a
deadlock, RETRY_STATES) or after a bucket move held it (MOVE_STATES), the error is held back and the
statement runs again at its ReadyForQuery, when nothing the client sent later is queued on the
server. The client sees one answer, computed as Picodata's storage would."""

import os
import time
from typing import TYPE_CHECKING, Optional

from .entry import Entry, Replay
from .log import log
from .texts import picodata_error
from .wire import error_field, msg

if TYPE_CHECKING:
    from .session import Session

# Statements run again after a serialization failure or a deadlock (see Rerun.hold_retry): Picodata's
# storage applies a row update atomically and global writes one after another, so neither error
# exists there. Every statement runs in its own implicit transaction (the front answers BEGIN/COMMIT
# itself), which such an error rolls back entirely, remote writes through postgres_fdw included, so
# running the statement again is safe. Bounded: RETRY_MAX runs again within RETRY_SECONDS, then the
# client gets the error.
RETRY_STATES = (b"40001", b"40P01")
RETRY_MAX = 200
RETRY_SECONDS = 30.0
# A write that met a bucket in flight (the storage's check_transfer in sql/strict.sql, which waits for
# the move, then raises PE004 when the move needs this statement's locks or is done): Picodata's
# storage reference waits for the move (vshard storage/ref.lua ref_add), so the client sees a delay,
# never an error. The front runs the statement again, now through the new map, within MOVE_SECONDS of
# its first run (Picodata's deadline is 360 s); after that the client gets the storage's text (a
# storage reference that timed out) with SQLSTATE XX000, as Picodata answers every error.
# PICOEMU_MOVE_SECONDS (environment of the picoemu command that starts the instance) changes the
# bound, for tests of what comes after it.
MOVE_STATES = (b"PE004",)
MOVE_SECONDS = float(os.environ.get("PICOEMU_MOVE_SECONDS", "60"))


class Held:
    """An error held back while its statement may run again: what the client gets when it does not
    (err), how to run it (rec), the batch it belongs to and whether a move held it."""
    __slots__ = ("err", "rec", "batch", "move")

    def __init__(self, err: bytes, rec: Replay, batch: int, move: bool = False) -> None:
        self.err, self.rec, self.batch, self.move = err, rec, batch, move


class Rerun:
    """A session's write that may run again: the extended-protocol batch being received (batch_rec,
    its record for a run again) and the error held back (retry)."""

    def __init__(self, s: "Session") -> None:
        self.s = s
        self.batch_rec: Optional[Replay] = None
        self.retry: Optional[Held] = None

    def _error(self, m: bytes) -> bytes:
        return picodata_error(m, tables=self.s.front.settings.d.get("tables", []))

    def hold_retry(self, e: Entry, m: bytes) -> bool:
        """An error of a write statement that Picodata would not raise (RETRY_STATES): held back, and
        the statement runs again at its ReadyForQuery (run_again). True when held."""
        rec = e.replay
        code = error_field(m, b"C")
        if code in MOVE_STATES:
            return self.hold_move(e, m)
        if e.kind != "fwd" or rec is None or self.retry is not None:
            return False
        if code not in RETRY_STATES:
            return False
        if rec["tries"] >= RETRY_MAX or time.monotonic() - rec["t0"] > RETRY_SECONDS:
            log("statement not run again after %d tries: %s | %s" % (
                rec["tries"], error_field(m, b"M").decode("utf-8", "replace"), e.tag[:300]))
            return False
        self.retry = Held(self._error(m), rec, e.batch)
        return True

    def hold_move(self, e: Entry, m: bytes) -> bool:
        """A write that met a bucket in flight (MOVE_STATES): held back and run again at its
        ReadyForQuery, within MOVE_SECONDS of its first run (otherwise the client gets it as
        Picodata's: picodata_error). True when held."""
        rec = e.replay
        front = self.s.front
        if (e.kind == "fwd" and rec is not None and self.retry is None
                and time.monotonic() - rec["t0"] <= MOVE_SECONDS):
            if not rec.get("moves"):
                front.move_statements += 1
                log("bucket move: a write waits for a bucket in flight and runs again (%d statements "
                    "so far, %d runs again) | %s" % (front.move_statements, front.move_reruns, e.tag[:200]))
            rec["moves"] = rec.get("moves", 0) + 1
            self.retry = Held(self._error(m), rec, e.batch, move=True)
            return True
        log("bucket move: statement not run again after %d runs in %.0f s | %s" % (
            rec.get("moves", 0) if rec else 0, time.monotonic() - rec["t0"] if rec else 0, e.tag[:300]))
        return False

    def run_again(self, e: Entry) -> bool:
        """e ends with this ReadyForQuery, after a held error: when nothing the client sent later is
        queued on the server (only the front's own settings restored behind it), the statement is
        sent again instead and this ReadyForQuery dropped. True when it was."""
        r = self.retry
        assert r is not None
        rec = r.rec
        link, front = self.s.link, self.s.front
        later = link.pending[1:]
        if (e.batch != r.batch or any(p.kind != "swallow" for p in later) or link.sbuf
                or (rec["kind"] == "extended" and (not rec["ok"] or sum(1 for t, _, _ in rec["msgs"] if t == b"E") != 1))):
            return False
        self.retry = None
        if r.move:
            front.move_reruns += 1
        else:
            rec["tries"] += 1
            front.retried += 1
        if not r.move and front.retried % 1000 == 1:
            log("statements run again after %s so far: %d (this one: try %d) | %s" % (
                "/".join(c.decode() for c in RETRY_STATES), front.retried, rec["tries"],
                rec.get("sql", "")[:200]))
        link.pending.pop(0)
        link.finish(e)
        batch_no, skip = link.batch_no, link.skip_until_sync
        link.batch_no = r.batch  # the entries of the rerun belong to the finished batch
        try:
            if rec["kind"] == "simple":
                self.s.runner.run_query(rec["sql"], rec["raw"], rec)
            else:
                saved, self.batch_rec = self.batch_rec, rec
                for typ, body, raw in rec["msgs"]:
                    if typ == b"B":  # answered already: BindComplete is not repeated
                        # the failed run's transaction took its bound key values back with it
                        self.s.inject.bind_params(body)
                        link.push(Entry("swallow", ends=(b"2",)))
                        link.send_server(raw)
                    else:
                        self.s.runner.run_execute(body, raw)
                self.batch_rec = saved
                link.push(Entry("sync", ends=(b"Z",)))
                link.send_server(msg(b"S"))
        finally:
            link.batch_no, link.skip_until_sync = batch_no, skip
        link.flush_server()
        return True
