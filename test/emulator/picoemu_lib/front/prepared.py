"""Prepared statements and portals (Parse, Bind, Describe, Close), with Picodata's rules for them
(stmts: pg_statement_max, pico_stmt_invalidation, DEALLOCATE; texts.check_bind: the parameters it
cannot decode) and what the front keeps of each: its verdict, its route, its parameter types and a
portal's bound values."""

import asyncio
import struct
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from .. import dialect
from .. import explain as emu_explain
from .. import parts as emu_parts
from .. import stmts as emu_stmts
from .entry import Entry
from .log import log
from .texts import ARRAY_OIDS, check_bind
from .wire import bind_values, cstr, error_msg, msg, read_cstr

if TYPE_CHECKING:
    from .session import Session

# What the front keeps of a prepared statement: kind, tag, options, insert_rows, sql, types (its
# parameters' type oids, None: not known), reads, gen (the table generation it was prepared at),
# route (judge.Route), explain (the EXPLAIN's text, None for another statement), params.
Stmt = Dict[str, Any]


class Prepared:
    """A session's statements (stmts, by name; "" the unnamed one) and portals, the text values
    bound to each portal, and the portals of reads whose Bind waited past a stopped master's
    deadline (dead_portals: their Execute gets Picodata's error)."""

    def __init__(self, s: "Session") -> None:
        self.s = s
        self.stmts: Dict[str, Stmt] = {}
        self.stmt_invalidation = False  # pico_stmt_invalidation=true (26.1+): 42999 at Bind after DDL
        self.portals: Dict[str, Optional[Stmt]] = {}
        self.portal_params: Dict[str, List[Optional[str]]] = {}
        self.dead_portals: Dict[str, str] = {}

    def statement_room(self, sql: str) -> bool:
        """pg_statement_max: the instance's statements of every client, checked at each Parse."""
        front = self.s.front
        limit = front.settings.statement_max
        if limit and sum(len(x.prepared.stmts) for x in front.sessions) >= limit:
            self.s.judge.refuse("limit", "XX000", emu_stmts.storage_full_text(limit), sql, extended=True)
            return False
        return True

    def invalidated(self, name: str, info: Stmt) -> bool:
        """42999 at Bind of a statement prepared before DDL, for a session that asked for it."""
        if not self.stmt_invalidation:
            return False
        settings = self.s.front.settings
        settings.refresh()
        if info.get("gen") in (None, settings.table_gen):
            return False
        log("statement %r of %s invalidated by DDL: %s" % (name, self.s.peer, info["sql"][:200]))
        self.s.link.synth(error_msg(emu_stmts.INVALIDATED_STATE, emu_stmts.invalidated_text(name)))
        self.s.link.skip_until_sync = True
        return True

    def forget_deallocated(self, sql: str) -> None:
        name = emu_stmts.deallocated(sql)
        if name == "*":
            for k in [k for k in self.stmts if k]:
                del self.stmts[k]
        elif name:
            self.stmts.pop(name, None)
            log("named statement %s deallocated" % name)

    async def on_parse(self, body: bytes, raw: bytes) -> None:
        s = self.s
        link, judge, front = s.link, s.judge, s.front
        name, pos = read_cstr(body, 0)
        sql, pos = read_cstr(body, pos)
        n = int.from_bytes(body[pos:pos + 2], "big")
        oids = list(struct.unpack("!%dI" % n, body[pos + 2:pos + 2 + 4 * n])) if n else []
        v = judge.judge(sql, extended=True)
        if v is None:
            return
        if judge.refuse_option_use(v, sql, extended=True):
            return
        if not self.statement_room(sql):
            return
        info: Stmt = {"kind": v.kind, "tag": v.tag, "options": v.options, "insert_rows": v.insert_rows,
                      "sql": sql, "types": None, "reads": v.reads, "gen": front.settings.table_gen,
                      "route": judge.route(v) if v.kind == "query" else None,
                      "explain": v.sql if emu_explain.answered(v) else None, "params": v.params}
        if name:
            log("named statement %s prepared (%d named in this session)"
                % (name, sum(1 for k in self.stmts if k and k != name) + 1))
        if v.kind in ("tcl", "set") or info["explain"] is not None:
            self.stmts[name] = info
            link.synth(msg(b"1"))
            return
        if not dialect.has_arrays(front.settings.version) and any(o in ARRAY_OIDS for o in oids):
            judge.refuse("dialect", "XX000", dialect.PARSE_ERROR_PREFIX + "typed array parameters exist only "
                         "from Picodata 26.2.1-rc1 [picoemu rule any_array]", sql, extended=True)
            return
        self.stmts[name] = info
        sent = info["route"]["sql"] if info["route"] is not None else v.sql
        if sent != sql:
            raw = msg(b"P", cstr(name) + cstr(sent) + body[pos:])
        link.push(Entry("fwd", ends=(b"1",)))
        link.send_server(raw)
        if v.params:
            await self._parameter_types(name, v.sql, oids, v.params, info)

    async def _parameter_types(self, name: str, sql: str, oids: List[int], params: int, info: Stmt) -> None:
        """The types of the statement's parameters: given by the Parse, known from an earlier one, or
        asked of the server (a Describe, its answer dropped), for the Bind rules."""
        link, front = self.s.link, self.s.front
        known = oids + [0] * (params - len(oids))
        cached = front.type_cache.get((sql, tuple(oids)))
        if all(known[:params]):
            info["types"] = known[:params]
        elif cached is not None:
            info["types"] = cached
        else:
            cap: Dict[str, List[int]] = {}
            e = Entry("swallow", ends=(b"n", b"T"), capture=cap)
            e.done = asyncio.Event()
            link.push(e)
            link.send_server(msg(b"D", b"S" + cstr(name)) + msg(b"H"))
            link.flush_server()
            await e.done.wait()
            if "types" in cap:
                info["types"] = cap["types"]
                if len(front.type_cache) > 20000:
                    front.type_cache.clear()
                front.type_cache[(sql, tuple(oids))] = cap["types"]

    async def on_bind(self, body: bytes, raw: bytes) -> None:
        s = self.s
        link, judge = s.link, s.judge
        portal, pos = read_cstr(body, 0)
        stmt, pos = read_cstr(body, pos)
        info = self.stmts.get(stmt)
        if info is not None and info["types"]:
            err = check_bind(body, pos, info["types"])
            if err:
                judge.refuse("bind", err[0], err[1], info["sql"], extended=True)
                return
        if info is not None and self.invalidated(stmt, info):
            return
        # Picodata refuses such a read when it dispatches it; here before the Bind, whose planning
        # on a standby would already open an unlogged table the standby cannot read
        if info is not None and info.get("route") is not None and info["reads"] and \
                judge.refuse_non_leader_read(info["options"], info["route"], info["sql"], extended=True):
            return
        self.portals[portal] = info
        if info is not None and (info["kind"] in ("tcl", "set") or info.get("explain") is not None):
            self.portal_params[portal] = bind_values(body, pos)
            link.synth(msg(b"2"))
            return
        if info is not None and info["kind"] == "query":
            # the statement's settings (its OPTION, a write's leader reads) before the Bind, which
            # plans it: the storage folds _picoemu.read_part() when it plans (run_execute sets them
            # again before the Execute and restores the connection's values after it)
            sets, _ = s.opts.statement_gucs(s.opts.write_options(info["options"], not info["reads"]))
            if sets:
                s.inject.extended(sets)
        s.inject.bind_params(body)
        self.portal_params[portal] = bind_values(body, pos)
        self.dead_portals.pop(portal, None)
        # A read starts its plan at Bind (its foreign scans connect then): one that waits for a
        # stopped master waits here; past the deadline it binds with every sharded view folded to
        # nothing (so the Bind succeeds, as on Picodata) and its Execute gets Picodata's error.
        text = None
        if info is not None and info["kind"] == "query" and info["reads"]:
            text = await s.stall.stall(info["options"], info.get("route"), self.portal_params[portal], False,
                                       info["insert_rows"], info["sql"])
        if text is not None:
            self.dead_portals[portal] = text
            s.inject.extended(emu_parts.NOTHING)
        e = Entry("fwd", ends=(b"2",))
        e.bind = True
        link.push(e)
        link.send_server(raw)
        if text is not None:
            s.inject.extended(emu_parts.NO_PART)

    def on_describe(self, body: bytes, raw: bytes) -> None:
        link = self.s.link
        what = body[:1]
        name, _ = read_cstr(body, 1)
        info = self.stmts.get(name) if what == b"S" else self.portals.get(name)
        if info is not None and info["kind"] in ("tcl", "set"):
            link.synth((msg(b"t", b"\0\0") if what == b"S" else b"") + msg(b"n"))
            return
        if info is not None and info.get("explain") is not None:
            link.synth(self.s.runner.explain(info["explain"], info["options"], None, what, info["params"]))
            return
        link.push(Entry("fwd", ends=(b"n", b"T")))
        link.send_server(raw)

    def on_close(self, body: bytes, raw: bytes) -> None:
        link = self.s.link
        what = body[:1]
        name, _ = read_cstr(body, 1)
        info = self.stmts.pop(name, None) if what == b"S" else self.portals.pop(name, None)
        if info is not None and (info["kind"] in ("tcl", "set") or info.get("explain") is not None):
            link.synth(msg(b"3"))
            return
        link.push(Entry("fwd", ends=(b"3",)))
        link.send_server(raw)
