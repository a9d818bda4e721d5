"""One expected server response (or one answer of the front) in a session's ordered response queue
(link.Link)."""

import asyncio
from typing import Any, Callable, Dict, List, Optional, Tuple

# How to run a write again (rerun.Rerun): {"kind": "simple", "sql", "raw", "tries", "t0"} or {"kind":
# "extended", "msgs": [(type, body, raw)] of its Binds and Executes, "ok", "tries", "t0"}, "moves" once
# a move held it.
Replay = Dict[str, Any]
Msg = Tuple[bytes, bytes, bytes]  # (type, body, the whole message) of a client's message


class Entry:
    """kind: fwd (the server's answer, passed on) | swallow (the answer to the front's own message,
    dropped) | synth (the front's own answer, data) | sync (the answer to a Sync) | vdbe (the answer
    of the opcode check that decides a statement's fate)."""
    __slots__ = ("kind", "ends", "data", "limit", "rows", "held", "exceeded", "done", "capture",
                 "on_done", "simple", "tag", "batch", "completed", "vdbe", "deferred", "muted", "replay", "bind",
                 "null_rows")

    def __init__(self, kind: str, ends: Tuple[bytes, ...] = (), data: bytes = b"", limit: int = 0,
                 simple: bool = False, on_done: Optional[Callable[["Entry"], None]] = None,
                 capture: Optional[Dict[str, List[int]]] = None) -> None:
        self.kind = kind            # fwd | swallow | synth | sync | vdbe
        self.ends = ends            # message types that end this entry
        self.data = data            # synth: bytes to emit
        self.limit = limit          # fwd execute: sql_motion_row_max (0: off)
        self.rows = 0
        self.held: List[bytes] = []
        self.exceeded = False
        self.done: Optional[asyncio.Event] = None  # set when the entry completes
        self.capture = capture      # dict that receives ParameterDescription types
        self.on_done = on_done
        self.simple = simple        # a simple Query: an error does not end it (ReadyForQuery does)
        self.tag = ""               # the statement, for the audit
        self.batch = 0              # extended-protocol batch (messages up to a Sync) it belongs to
        self.completed = False      # ended by its own response (not dropped after an error)
        self.vdbe: Optional[Entry] = None  # fwd: the vdbe check entry that decides this statement's fate
        self.deferred = b""         # vdbe: the statement's answer, sent when the check passes
        self.muted = False          # vdbe: the statement already failed; say nothing more
        self.bind = False           # fwd: a Bind (its parameter errors keep Picodata's codes)
        self.replay: Optional[Replay] = None  # fwd: how to run this write again (rerun.Rerun)
        self.null_rows = False      # fwd: every value of its rows NULL (route.empty_set_aggregate)
