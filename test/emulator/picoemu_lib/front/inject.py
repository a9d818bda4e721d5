"""The front's own statements on the server, in a session's order, their answers dropped: session
settings (set_config, by a simple Query or by the front's prepared helper statement), the bound key
values a statement is routed by (picoemu.bind_params), and the approximated sql_vdbe_opcode_max check
around a statement (rows examined in the storage, read before and after it)."""

import functools
import json
import struct
from typing import TYPE_CHECKING, Dict

from .entry import Entry
from .options import Gucs
from .wire import bind_values, cstr, msg, read_cstr, set_config_bind

if TYPE_CHECKING:
    from .session import Session

HELPER_STMT = "picoemu_front_set"
HELPER_PORTAL = "picoemu_front_p"
VDBE_STMT = "picoemu_front_vdbe"
VDBE_PORTAL = "picoemu_front_v"
VDBE_BASE_STMT = "picoemu_front_vdbe0"
# sql_vdbe_opcode_max, approximated: rows the statement examined in the storage of the instance that
# received it (heap tuples read by sequential scans, plus heap tuples fetched by bitmap scans and
# through each index: the backend's not yet reported counters of the _picoemu_local relations, read
# just before and just after the statement in its own transaction, so no report happens in between)
# times OPCODES_PER_ROW.
# Picodata's default 45000 is reached by "unindexed scans of a few thousand rows per storage" (the
# dialect document, section 4): 10 instructions per row examined puts that at 4500 rows. The check
# fails (a division by zero, which rolls the statement back with its transaction) and the front
# answers Picodata's error instead.
OPCODES_PER_ROW = 10
# The storage relations (oid * 2 + 1 for a table, oid * 2 for an index) are looked up in pg_class once
# per session and per table generation (GEN: a hash of the tables in state.json), and kept in the
# session setting picoemu.vdbe_rels: a catalog scan per statement would cost more than the statement.
_RELS = ("(CASE WHEN split_part(current_setting('picoemu.vdbe_rels', true), ':', 1) = 'GEN' "
         "THEN split_part(current_setting('picoemu.vdbe_rels', true), ':', 2) ELSE split_part("
         "set_config('picoemu.vdbe_rels', 'GEN:' || (SELECT coalesce(array_agg(c.oid::bigint * 2 + "
         "(c.relkind = 'r')::int), '{}')::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
         "WHERE n.nspname = '_picoemu_local' AND c.relkind IN ('r', 'i')), false), ':', 2) END)::bigint[]")
_EXAMINED = ("(SELECT coalesce(sum(pg_stat_get_xact_tuples_fetched((x / 2)::oid) + CASE WHEN x %% 2 = 1 "
             "THEN pg_stat_get_xact_tuples_returned((x / 2)::oid) ELSE 0 END), 0) FROM unnest(%s) x)" % _RELS)
VDBE_BASE = "SELECT set_config('picoemu.vdbe_base', %s::text, false)" % _EXAMINED
VDBE_CHECK = ("SELECT CASE WHEN s * %d > LIMIT THEN 1 / (s - s) ELSE 0 END FROM (SELECT %s - "
              "coalesce(nullif(current_setting('picoemu.vdbe_base', true), ''), '0')::bigint AS s) x"
              % (OPCODES_PER_ROW, _EXAMINED))


def vdbe_sql(template: str, gen: str, limit: object = "$1::bigint") -> str:
    return template.replace("GEN", gen).replace("LIMIT", str(limit))


class Injector:
    """A session's helper statements on the server: whether the set_config helper is prepared
    (helper: no | pending | yes) and the vdbe helpers, by name."""

    def __init__(self, s: "Session") -> None:
        self.s = s
        self.helper = "no"
        self.vdbe_helpers: Dict[str, str] = {}

    def simple(self, pairs: Gucs) -> None:
        """Sets session settings with a simple Query (its own implicit transaction)."""
        q = "SELECT " + ", ".join("set_config('%s', '%s', false)" % (k, v.replace("'", "''")) for k, v in pairs)
        link = self.s.link
        link.push(Entry("swallow", ends=(b"Z",), simple=True))
        link.send_server(msg(b"Q", cstr(q)))

    def extended(self, pairs: Gucs) -> None:
        """Sets session settings in the extended protocol, in the client's batch."""
        link = self.s.link
        if self.helper == "no":
            link.push(Entry("swallow", ends=(b"1",), on_done=self._helper_done))
            link.send_server(msg(b"P", cstr(HELPER_STMT) + cstr("SELECT set_config($1, $2, false)") +
                                 struct.pack("!HII", 2, 25, 25)))
            self.helper = "pending"
        for k, v in pairs:
            link.push(Entry("swallow", ends=(b"2",)))
            link.send_server(set_config_bind(HELPER_PORTAL, HELPER_STMT, k, v))
            link.push(Entry("swallow", ends=(b"C",)))
            link.send_server(msg(b"E", cstr(HELPER_PORTAL) + struct.pack("!I", 0)))
            link.push(Entry("swallow", ends=(b"3",)))
            link.send_server(msg(b"C", b"P" + cstr(HELPER_PORTAL)))

    def _helper_done(self, e: Entry) -> None:
        self.helper = "yes" if e.completed else "no"

    def bind_params(self, body: bytes) -> None:
        """Picodata routes by a sharding key given as a parameter once it is bound: the values of
        this Bind (text format; None otherwise) for key_route.sql, set before the Bind plans the
        statement. Set in the statement's transaction, so a statement run again (rerun.run_again)
        sets them again: the abort of the failed run restored the previous statement's values."""
        portal, pos = read_cstr(body, 0)
        stmt, pos = read_cstr(body, pos)
        info = self.s.prepared.stmts.get(stmt)
        values = bind_values(body, pos)
        if info is not None and info["kind"] == "query" and values:
            self.extended([("picoemu.bind_params", json.dumps(values))])

    def vdbe_base(self) -> None:
        """The rows examined so far, before the statement (VDBE_BASE), in the extended protocol."""
        link = self.s.link
        name = self._vdbe_helper(VDBE_BASE_STMT, VDBE_BASE)
        link.push(Entry("swallow", ends=(b"2",)))
        link.send_server(msg(b"B", cstr(VDBE_PORTAL) + cstr(name) + struct.pack("!HHH", 0, 0, 0)))
        link.push(Entry("swallow", ends=(b"C",)))
        link.send_server(msg(b"E", cstr(VDBE_PORTAL) + struct.pack("!I", 0)))
        link.push(Entry("swallow", ends=(b"3",)))
        link.send_server(msg(b"C", b"P" + cstr(VDBE_PORTAL)))

    def _helper_state(self, name: str, e: Entry) -> None:
        self.vdbe_helpers[name] = "yes" if e.completed else "no"

    def _vdbe_helper(self, stmt: str, template: str) -> str:
        """Parses the named helper statement of the current storage-table generation on the server,
        once per session; returns its name."""
        link = self.s.link
        gen = self.s.front.settings.table_gen
        name = stmt + "_" + gen
        if self.vdbe_helpers.get(name, "no") == "no":
            link.push(Entry("swallow", ends=(b"1",), on_done=functools.partial(self._helper_state, name)))
            link.send_server(msg(b"P", cstr(name) + cstr(vdbe_sql(template, gen)) + struct.pack("!H", 0)))
            self.vdbe_helpers[name] = "pending"
        return name

    def vdbe_check(self, e: Entry, limit: int) -> None:
        """The check after the statement e (VDBE_CHECK): its entry decides e's fate (e.vdbe)."""
        link = self.s.link
        name = self._vdbe_helper(VDBE_STMT, VDBE_CHECK)
        val = str(limit).encode()
        link.push(Entry("swallow", ends=(b"2",)))
        link.send_server(msg(b"B", cstr(VDBE_PORTAL) + cstr(name) + struct.pack("!HHI", 0, 1, len(val)) +
                             val + struct.pack("!H", 0)))
        e.vdbe = Entry("vdbe", ends=(b"C",), limit=limit)
        e.vdbe.tag = e.tag
        link.push(e.vdbe)
        link.send_server(msg(b"E", cstr(VDBE_PORTAL) + struct.pack("!I", 0)))
        link.push(Entry("swallow", ends=(b"3",)))
        link.send_server(msg(b"C", b"P" + cstr(VDBE_PORTAL)))
