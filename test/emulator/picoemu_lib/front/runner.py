"""Running a statement the front accepted: a simple Query (run_query) or an Execute of a portal
(run_execute), with the settings its OPTION gives (set before it, restored after it), its limits
(the rows of INSERT ... VALUES and the rows returned against sql_motion_row_max, the rows examined
against the approximated sql_vdbe_opcode_max), the front's own answers to transaction control and SET,
and EXPLAIN, answered here as Picodata answers it (explain)."""

import time
from typing import TYPE_CHECKING, Any, Mapping, Optional, Sequence

from .. import explain as emu_explain
from .entry import Entry, Replay
from .inject import VDBE_BASE, VDBE_CHECK, vdbe_sql
from .log import log
from .texts import row_limit_text
from .wire import cstr, error_msg, msg, read_cstr

if TYPE_CHECKING:
    from .session import Session


class Runner:
    def __init__(self, s: "Session") -> None:
        self.s = s

    def run_query(self, sql: str, raw: bytes, rec: Optional[Replay] = None) -> None:
        """A simple Query: judged, refused, answered here or sent on (rec: the record of a run again)."""
        s = self.s
        link, judge, opts = s.link, s.judge, s.opts
        v = judge.judge(sql, extended=False)
        if v is None:
            return
        if v.kind in ("tcl", "set"):
            link.synth(msg(b"C", cstr(v.tag or "")) + msg(b"Z", b"I"))
            return
        if emu_explain.answered(v):
            link.synth(self.explain(v.sql, v.options, None, b"Q"))
            return
        if v.kind == "deallocate":
            s.prepared.forget_deallocated(sql)
        limit = opts.motion_limit(v.options)
        if v.insert_rows is not None and limit and v.insert_rows > limit:
            text = row_limit_text(limit, v.insert_rows, s.front.settings.version, values=True)
            judge.refuse("limit", "XX000", text, sql, extended=False)
            return
        if judge.refuse_option_use(v, sql, extended=False):
            return
        r = judge.route(v) if v.kind == "query" else None
        if r is not None and judge.refuse_forward(v.options, r, None, sql, extended=False):
            return
        if r is not None and v.reads and judge.refuse_non_leader_read(v.options, r, sql, extended=False):
            return
        judge.count_dnf(r, sql)
        sent = r["sql"] if r is not None else v.sql
        sets, restore = opts.statement_gucs(opts.write_options(v.options, v.kind == "query" and not v.reads))
        if sets:
            s.inject.simple(sets)
        vdbe = opts.vdbe_limit(v.options) if v.kind == "query" else 0
        if vdbe:
            # base, statement and check in one query string: one implicit transaction
            link.push(Entry("swallow", ends=(b"C",), simple=True))
        e = Entry("fwd", ends=(b"C", b"I") if vdbe else (b"Z",), limit=limit if v.reads else 0, simple=True)
        e.tag = sql
        e.null_rows = v.reads and judge.empty_set_aggregate(r, None)
        if v.kind == "query" and not v.reads:  # a write: may run again (rerun.hold_retry)
            e.replay = rec or {"kind": "simple", "sql": sql, "raw": raw, "tries": 0, "t0": time.monotonic()}
        link.push(e)
        if vdbe:
            e.vdbe = Entry("vdbe", ends=(b"C",), limit=vdbe, simple=True)
            e.vdbe.tag = sql
            link.push(e.vdbe)
            link.push(Entry("fwd", ends=(b"Z",), simple=True))
            gen = s.front.settings.table_gen
            link.send_server(msg(b"Q", cstr(vdbe_sql(VDBE_BASE, gen) + ";\n" + sent.rstrip().rstrip(";") +
                                            ";\n" + vdbe_sql(VDBE_CHECK, gen, vdbe))))
        else:
            link.send_server(raw if sent == sql else msg(b"Q", cstr(sent)))
        if restore:
            s.inject.simple(restore)

    def run_execute(self, body: bytes, raw: bytes) -> None:
        """An Execute of a portal: answered here, refused, or sent on with its settings and checks."""
        s = self.s
        link, judge, opts, prepared = s.link, s.judge, s.opts, s.prepared
        portal, _ = read_cstr(body, 0)
        info = prepared.portals.get(portal)
        if info is not None and info["kind"] in ("tcl", "set"):
            link.synth(msg(b"C", cstr(info["tag"])))
            return
        if info is not None and info.get("explain") is not None:
            link.synth(self.explain(info["explain"], info["options"], prepared.portal_params.get(portal), b"E"))
            return
        if info is not None and info["kind"] == "deallocate":
            prepared.forget_deallocated(info["sql"])
        options = info["options"] if info else {}
        limit = opts.motion_limit(options)
        if info is not None and info["insert_rows"] is not None and limit and info["insert_rows"] > limit:
            judge.refuse("limit", "XX000", row_limit_text(limit, info["insert_rows"], s.front.settings.version,
                                                          values=True),
                         info["sql"], extended=True)
            return
        if info is not None and info.get("route") is not None and judge.refuse_forward(
                options, info["route"], prepared.portal_params.get(portal), info["sql"], extended=True):
            return
        if info is not None:
            judge.count_dnf(info.get("route"), info["sql"])
        sets, restore = opts.statement_gucs(opts.write_options(
            options, info is not None and info["kind"] == "query" and not info["reads"]))
        if sets:
            s.inject.extended(sets)
        vdbe = opts.vdbe_limit(options) if (info is None or info["kind"] == "query") else 0
        if vdbe:
            s.inject.vdbe_base()
        e = Entry("fwd", ends=(b"C", b"s", b"I"), limit=limit if (info is None or info["reads"]) else 0)
        e.tag = info["sql"] if info else ""
        e.null_rows = info is not None and info["reads"] and judge.empty_set_aggregate(
            info.get("route"), prepared.portal_params.get(portal))
        if info is not None and info["kind"] == "query" and not info["reads"] and s.rerun.batch_rec is not None:
            e.replay = s.rerun.batch_rec  # a write: may run again (rerun.hold_retry)
        link.push(e)
        link.send_server(raw)
        if vdbe:
            s.inject.vdbe_check(e, vdbe)
        if restore:
            s.inject.extended(restore)
        # awaited before any further message of the batch but Sync/Flush
        link.hold = e.vdbe or (e if e.limit else None)

    def explain(self, sql: str, options: Mapping[str, Any], params: Optional[Sequence[Optional[str]]], what: bytes,
                nparams: int = 0) -> bytes:
        """An EXPLAIN, answered here as Picodata answers it (explain): the answer to a simple
        Query (b"Q"), to the Describe of a statement (b"S") or a portal (b"P"), or to an Execute
        (b"E"). One the emulator cannot answer (EXPLAIN (RAW)) is refused and recorded in the audit."""
        s = self.s
        st = s.front.settings
        st.refresh()
        if what in (b"S", b"P"):
            return emu_explain.describe(st.version, what == b"S", nparams)
        try:
            lines = emu_explain.answer(sql, params, st.d, st.version, s.opts.motion_limit(options),
                                       s.opts.vdbe_limit(options))
        except Exception as exc:  # Picodata's error, or the emulator's own failure (said so)
            text = str(exc)
            if isinstance(exc, emu_explain.NotEmulated):
                s.front.audit.record(s, "explain", "XX000", text, sql)
            elif not isinstance(exc, emu_explain.ExplainError):
                log("EXPLAIN not emulated (%r) | %s" % (exc, sql[:200]))
                text = "picoemu: EXPLAIN not emulated: %r" % exc
            if what != b"Q":
                s.link.skip_until_sync = True  # the rest of the batch is discarded, as after any error
            return error_msg("XX000", text) + (msg(b"Z", b"I") if what == b"Q" else b"")
        if what == b"Q":
            return emu_explain.simple(st.version, lines)
        return emu_explain.rows(lines)
