"""What a front reads and writes besides its connections: the cluster's settings and this instance's
ports (state.json, read again when it changes) and the audit of refused statements (audit.jsonl)."""

import datetime
import json
import os
import time
import zlib
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from ..state import DEFAULT_VERSION, Doc, Inst
from ..stmts import DEFAULT_STATEMENT_MAX
from .log import log

if TYPE_CHECKING:
    from .session import Session

DEFAULT_MOTION_ROW_MAX = 5000
DEFAULT_VDBE_OPCODE_MAX = 45000


class Settings:
    """Cluster settings and this instance's ports, re-read from state.json when it changes."""

    def __init__(self, state_path: str, instance: str) -> None:
        self.path, self.instance = state_path, instance
        self.mtime: Optional[int] = None
        self.checked = 0.0
        self._tabs: Optional[List[Dict[str, Any]]] = None
        self._gen = "0"
        self.d: Doc = {}
        self.refresh()

    def refresh(self) -> None:
        now = time.monotonic()
        if now - self.checked < 0.1:  # picoemu set / strict take effect within 0.1 s
            return
        self.checked = now
        try:
            m = os.stat(self.path).st_mtime_ns
        except OSError:
            return
        if m == self.mtime:
            return
        try:
            with open(self.path) as f:
                self.d = json.load(f)
            self.mtime = m
        except (OSError, ValueError):
            pass

    @property
    def version(self) -> str:
        return str(self.d.get("picodata") or self.d.get("picodata_version") or DEFAULT_VERSION)

    @property
    def table_gen(self) -> str:
        """Changes when the emulator creates or drops a table (a new set of storage relations)."""
        tabs = self.d.get("tables", [])
        if tabs is not self._tabs:
            self._tabs = tabs
            key = repr(sorted((t.get("name"), t.get("id")) for t in tabs))
            self._gen = "%08x" % (zlib.crc32(key.encode()) & 0xffffffff)
        return self._gen

    @property
    def motion_row_max(self) -> int:
        return int(self.d.get("sql_motion_row_max", DEFAULT_MOTION_ROW_MAX))

    @property
    def vdbe_opcode_max(self) -> int:
        return int(self.d.get("sql_vdbe_opcode_max", DEFAULT_VDBE_OPCODE_MAX))

    @property
    def read_preference(self) -> str:
        """The cluster's read_preference (picoemu set read_preference; 26.1+)."""
        return str(self.d.get("read_preference", "leader"))

    @property
    def statement_max(self) -> int:
        return int(self.d.get("pg_statement_max", DEFAULT_STATEMENT_MAX))

    def inst(self) -> Inst:
        for i in self.d.get("instances", []):
            if i["name"] == self.instance:
                return i
        raise SystemExit("instance %s is not in %s" % (self.instance, self.path))


class Audit:
    def __init__(self, path: str) -> None:
        self.path = path

    def record_cancel(self, instance: str, peer: str) -> None:
        """A CancelRequest: Picodata has no cancel (it never sends BackendKeyData) and closes the
        connection; a client that sends one believes a statement can be stopped."""
        entry = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds"),
                 "instance": instance, "kind": "cancel", "sqlstate": "08P01",
                 "message": "CancelRequest: Picodata has no cancel (no BackendKeyData was sent)",
                 "statement": "", "user": None, "database": None, "application_name": "", "peer": peer}
        self._append(entry)
        log("refused a cancel request from %s" % peer)

    def record_startup(self, instance: str, peer: str, params: Dict[str, str], options: Optional[str],
                       text: str) -> None:
        """Startup options Picodata cannot read: it closes the connection without an answer."""
        entry = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds"),
                 "instance": instance, "kind": "startup", "sqlstate": "",
                 "message": "connection closed at startup, no answer (Picodata: %s)" % text,
                 "statement": "options=%s" % (options or ""), "user": params.get("user"),
                 "database": params.get("database"), "application_name": params.get("application_name", ""),
                 "peer": peer}
        self._append(entry)

    def _append(self, entry: Dict[str, Any]) -> None:
        line = json.dumps(entry, sort_keys=True) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def record(self, session: "Session", kind: str, code: str, text: str, statement: str) -> None:
        entry = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds"),
                 "instance": session.front.settings.instance, "kind": kind, "sqlstate": code,
                 "message": text, "statement": statement, "user": session.params.get("user"),
                 "database": session.params.get("database"),
                 "application_name": session.params.get("application_name", ""), "peer": session.peer}
        self._append(entry)
        log("refused (%s %s) from %s %s: %s | %s" % (kind, code, entry["application_name"], session.peer,
                                                    text, statement[:500]))
