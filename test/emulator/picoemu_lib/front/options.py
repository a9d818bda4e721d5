"""Options: Picodata's startup options (parse_startup_options, as strictly as Picodata reads them) and
the settings a statement runs with (SessionOptions): its OPTION clause, else the connection's startup
options, else the cluster's settings, passed to the server behind the front as session settings
(picoemu.read_preference, picoemu.strict, picoemu.vdbe_opcode_max; the contract with the storage SQL)."""

import re
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

from .. import stmts as emu_stmts
from ..dialect import FORWARD_VALUES, OPTION_INT, READ_PREFERENCES, has_forward, has_read_preference
from .log import log

if TYPE_CHECKING:
    from .server import Front

UNKNOWN_STARTUP_DROP = ("pico_stmt_invalidation", "picodata_catalog_cdc")
Gucs = List[Tuple[str, str]]


def parse_startup_options(text: Optional[str], version: str) -> Dict[str, Any]:
    """Picodata's own syntax, as strictly as Picodata reads it (ClientParams::new in
    src/pgproto/client/startup.rs, the same at 25.5.10, 26.1.6, 26.2.1-rc1 and 26.2.1-rc2, which add
    names): `options` split at every comma, each item at its first
    '=' (name, then value up to the next '='); names matched exactly (no trimming, no case folding),
    a missing '=' is an error; integer values as Rust parses an i64 (digits with an optional sign, no
    spaces), a negative one refused; pico_stmt_invalidation exactly true or false; read_preference
    in any case; forward exactly on, off or ro_to_rw. Unknown names only log a warning. None (no
    options parameter) is no option; an empty one fails as Picodata's does ("option without value").
    Errors are raised as ValueError with Picodata's text."""
    out: Dict[str, Any] = {}
    if text is None:
        return out
    for item in text.split(","):
        parts = item.split("=")
        name = parts[0]
        if len(parts) < 2:
            raise ValueError("option without value")
        value = parts[1]
        if name in OPTION_INT:
            if not re.fullmatch(r"[+-]?[0-9]+", value):
                why = "cannot parse integer from empty string" if value in ("", "+", "-") else \
                    "invalid digit found in string"
                raise ValueError("value for option %s is too large: %s" % (name, why))
            if not -2 ** 63 <= int(value) <= 2 ** 63 - 1:
                raise ValueError("value for option %s is too large: number too large to fit in target type"
                                 % name)
            if int(value) < 0:
                raise ValueError("value for option %s should be positive" % name)
            out[name] = int(value)
        elif name == "read_preference" and has_read_preference(version):
            if value.lower() not in READ_PREFERENCES:
                raise ValueError("unknown read_preference value: '%s', expected one of leader, replica, any"
                                 % value)
            out[name] = value.lower()
        elif name == emu_stmts.OPTION and emu_stmts.has_stmt_invalidation(version):
            out[name] = emu_stmts.parse_flag(value)
        elif name == "forward" and has_forward(version):
            if value not in FORWARD_VALUES:
                raise ValueError("unknown forward value: '%s', expected one of on, off, ro_to_rw" % value)
            out[name] = value
        else:
            log("WARNING: unknown option: '%s' (%s ignored, Picodata %s)" % (name, item, version))
    return out


class SessionOptions:
    """A session's startup options (conn, typed) and what follows for each statement."""

    def __init__(self, front: "Front") -> None:
        self.front = front
        self.conn: Dict[str, Any] = {}  # Picodata startup options (typed)

    def connection_gucs(self) -> Dict[str, str]:
        """Connection-level values for the private server (the contract with the storage SQL)."""
        g = {}
        o = self.conn
        if "read_preference" in o:
            g["picoemu.read_preference"] = o["read_preference"]
        if "forward" in o:
            g["picoemu.strict"] = "on" if o["forward"] == "off" else "off"
        g["picoemu.vdbe_opcode_max"] = str(o.get("sql_vdbe_opcode_max", self.front.settings.vdbe_opcode_max))
        # A statement is routed by the key values bound to it (key_route.sql): every execution is
        # planned with its own values, never from a generic plan that folded another key's owner.
        g["plan_cache_mode"] = "force_custom_plan"
        return g

    def statement_gucs(self, opts: Mapping[str, Any]) -> Tuple[Gucs, Gucs]:
        """(set, restore) GUC lists for a statement whose OPTION overrides connection values."""
        conn = self.connection_gucs()
        want = {}
        if "read_preference" in opts:
            want["picoemu.read_preference"] = opts["read_preference"]
        if "forward" in opts:
            want["picoemu.strict"] = "on" if opts["forward"] == "off" else "off"
        if "sql_vdbe_opcode_max" in opts:
            want["picoemu.vdbe_opcode_max"] = str(opts["sql_vdbe_opcode_max"])
        if "truncate" in opts:  # TRUNCATE TABLE: the table the gate's trigger empties (truncate.sql)
            want["picoemu.truncate"] = opts["truncate"]
        sets = [(k, v) for k, v in want.items() if conn.get(k, "") != v]
        restore = [(k, conn.get(k, "")) for k, _ in sets]
        return sets, restore

    def effective(self, opts: Mapping[str, Any], name: str, setting: str) -> Any:
        """The statement's OPTION name, else the startup option, else the cluster setting."""
        if name in opts:
            return opts[name]
        if name in self.conn:
            return self.conn[name]
        self.front.settings.refresh()
        return getattr(self.front.settings, setting)

    def motion_limit(self, opts: Mapping[str, Any]) -> int:
        return int(self.effective(opts, "sql_motion_row_max", "motion_row_max"))

    def vdbe_limit(self, opts: Mapping[str, Any]) -> int:
        return int(self.effective(opts, "sql_vdbe_opcode_max", "vdbe_opcode_max"))

    def write_options(self, opts: Dict[str, Any], write: bool) -> Dict[str, Any]:
        """A write reads its rows on the leaders whatever the session's read_preference: Picodata's
        DML runs on the masters' storages (it takes no read_preference: validate_options_usage,
        sql-planner/src/ir/options.rs:428-439 at 26.1.1; single_plan_dispatch_dml, src/sql/
        dispatch.rs), while the emulator's write reads the view, whose branches follow
        picoemu.read_preference (_picoemu.read_part())."""
        if not write or not has_read_preference(self.front.settings.version):
            return opts
        if self.effective({}, "read_preference", "read_preference") == "leader":
            return opts  # the session reads on the leaders already: nothing to set
        return dict(opts, read_preference="leader")
