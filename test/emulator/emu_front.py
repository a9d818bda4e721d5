#!/usr/bin/env python3
"""The Picodata front of one emulated instance: a PostgreSQL wire-protocol proxy (asyncio, standard
library only) listening on the instance's advertised pgproto port and forwarding to its PostgreSQL
server on a private port. It judges every statement as Picodata would (emu_dialect), honours and strips
OPTION (...) and Picodata-style startup options, enforces sql_motion_row_max, applies Picodata's
parameter rules at Bind, answers BEGIN/COMMIT/ROLLBACK/SET itself (autocommit only), runs TRUNCATE
TABLE on every replicaset (sql/truncate.sql) and records every statement it refuses in the audit file
of the state directory.

Usage: emu_front.py --dir DIR --instance NAME   (started and stopped by picoemu; logs to
<dir>/<instance>/front.log, pid in <dir>/<instance>/front.pid)
"""

import argparse
import asyncio
import datetime
import json
import os
import re
import signal
import struct
import sys
import time
import zlib

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

import emu_dialect as dialect  # noqa: E402
import emu_caps  # noqa: E402
import emu_explain  # noqa: E402
import emu_parts  # noqa: E402
import emu_route  # noqa: E402
import emu_stmts  # noqa: E402

HOST = "127.0.0.1"
SSL_REQUEST, GSS_REQUEST, CANCEL_REQUEST, PROTO_3 = 80877103, 80877104, 80877102, 196608
DEFAULT_MOTION_ROW_MAX = 5000
DEFAULT_VDBE_OPCODE_MAX = 45000
HELPER_STMT = "picoemu_front_set"
HELPER_PORTAL = "picoemu_front_p"
VDBE_STMT = "picoemu_front_vdbe"
VDBE_PORTAL = "picoemu_front_v"
VDBE_BASE_STMT = "picoemu_front_vdbe0"
PART_STMT = "picoemu_front_part"  # a write run once per replicaset (execute_parts)
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
# Statements run again after a serialization failure or a deadlock (see Session.hold_retry): Picodata's
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
# A dead master stalls the tier (emu_route.dispatch_plan): a statement Picodata would dispatch
# through Lua waits while the catalog shows a master of its tier Offline, until that master is back
# or the statement's deadline has passed (Picodata's DEFAULT_QUERY_TIMEOUT, 360 s, src/sql/router.rs;
# no statement option or cluster setting changes it at any tag), then fails with Picodata's
# `dql timeout exceeded` (a write is first run on the replicasets that can take it, as Picodata
# sends it to the live masters before giving up). PICOEMU_QUERY_TIMEOUT (seconds, environment of
# the picoemu command that starts an instance) shortens the deadline: an emulator-only knob, for
# tests; Picodata has none.
QUERY_TIMEOUT = float(os.environ.get("PICOEMU_QUERY_TIMEOUT", "360"))
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


def vdbe_sql(template, gen, limit="$1::bigint"):
    return template.replace("GEN", gen).replace("LIMIT", str(limit))
TIMESTAMPTZ_OID, JSON_OID, JSONB_OID = 1184, 114, 3802
ARRAY_OIDS = frozenset([1000, 1005, 1007, 1016, 1021, 1022, 1009, 1015, 1231, 2951, 1115, 1185, 199,
                        3807, 1014])
# ISO-like timestamptz text: YYYY-MM-DD[ T]HH:MM:SS[.ffffff][±HH[:MM]|Z] (dialect, section 3)
ISO_TS = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?\s*([+-]\d{2}(:?\d{2})?|Z|UTC)?$")
UNKNOWN_STARTUP_DROP = ("pico_stmt_invalidation", "picodata_catalog_cdc")

LOG = None
# PICOEMU_LOG_STATEMENTS=1 in the environment of "picoemu up": every statement a client sends (Query
# or Parse) is written to front.log as "statement: <text>", so a test can read what it was sent.
LOG_STATEMENTS = os.environ.get("PICOEMU_LOG_STATEMENTS") == "1"


def log(msg):
    line = "%s [%d] %s\n" % (datetime.datetime.now().isoformat(timespec="milliseconds"), os.getpid(), msg)
    if LOG:
        LOG.write(line)
        LOG.flush()


def msg(typ, body=b""):
    return typ + struct.pack("!I", len(body) + 4) + body


def cstr(s):
    return s.encode() + b"\0"


def error_body(code, text, severity="ERROR", hint=None):
    b = b"S" + cstr(severity) + b"V" + cstr(severity) + b"C" + cstr(code) + b"M" + cstr(text)
    if hint:
        b += b"H" + cstr(hint)
    return b + b"\0"


def error_msg(code, text, severity="ERROR", hint=None):
    return msg(b"E", error_body(code, text, severity, hint))


def read_only_refusal(m, version):
    """A write refused by a read-only server (a demoted master, rebuilt as a standby: SQLSTATE
    25006) answered as Picodata answers it: XX000 with the text of the version. 26.1.2+ (and
    26.2.1-rc1+) refuse a DML that reaches a demoted master before running it ("retry is required:
    ...", src/sql.rs); earlier versions fail at the first write with tarantool's ER_READONLY. Any
    other message is returned as it is. Either text is the storage's; the client reads it through
    the coordinator that dispatched the write, whose SbroadError::DispatchError pgproto writes as
    "sbroad: ..." (src/sql/dispatch.rs:1685-1689@26.1.6, src/traft/error.rs:139@25.5.10), with the
    storage's and vshard's wrappers in between, which the emulator does not reproduce."""
    if error_field(m, b"C") != b"25006":
        return m
    if emu_caps.has("switchover_refusal", version):
        return error_msg("XX000", "sbroad: retry is required: DML was sent to the replica during master switchover")
    return error_msg("XX000", "sbroad: Can't modify data on a read-only instance - box.cfg.read_only is true")


# The SQLSTATEs Picodata's pgproto sends (PgErrorCode::as_str and PgError::code, src/pgproto/error.rs,
# the same at 25.5.1 and 26.3.0): 42P03 / 42P05 a portal or statement name already in use (Storage::put,
# src/pgproto/backend/storage.rs), 42999 an invalidated statement (26.1+, answered by the front itself),
# 22P02 / 22P03 / 0A000 a parameter value it cannot decode (DecodingError, at Bind), 08P01 a protocol
# violation, 28000 / 28P01 / 58030 at startup and on I/O. Every other error, planning and execution
# alike (PgError::PicodataError, Other, EncodingError), is XX000 ("TODO: make the code depending on
# the error kind").
KEPT_STATES = (b"XX000", b"42P03", b"42P05", b"08P01")
BIND_STATES = (b"22P02", b"22P03", b"0A000")
# The storages' own forward=off check (sql/strict.sql, PE001) stands behind the front's (emu_route), for
# a statement whose bucket set the front could not read: the client gets Picodata's text for all buckets.
STRICT_STATE = b"PE001"
STRICT_TEXT = ('sbroad: invalid option: cannot satisfy "forward = off": buckets span multiple nodes and are '
               'not present on the current node, try using "forward = on" instead')
_MISSING_TABLE = re.compile(r'^relation "(?:public\.)?([^"]+)" does not exist$')


# The storage's PostgreSQL errors in Picodata's words (storage_text). Picodata's storages are
# tarantool: a tuple is checked by its space format, arithmetic runs in tarantool's SQL VDBE, and
# the planner parses literals; the texts, read at branch picodata-25.5 of Picodata's tarantool fork
# (the submodule commits of the 26.x tags are not available) and in Picodata, are the same at every
# emulated version, as Picodata's own integration tests at 26.3.0 show:
# - 23505: ER_TUPLE_FOUND, src/box/errcode.h:58@picodata-25.5 (test/int/sql/example.sql:41@26.3.0);
#   the emulator writes the key for the tuples (it has no old tuple at hand);
# - 23502: ER_FIELD_TYPE, src/box/errcode.h:78 and tuple_format.c:1049@picodata-25.5 ("expected
#   integer, got nil", test/int/sql/insert_global_table.sql:64@26.3.0); the field number counts the
#   table's columns from 1;
# - 22012 and 22003: ER_SQL_EXECUTE ("Failed to execute SQL statement: %s", errcode.h:214) with
#   "division by zero" (src/box/sql/mem.c:2326) and "integer is overflowed" (mem.c:2089), both
#   @picodata-25.5 (test/int/sql/anonymous_block.sql:228@26.3.0);
# - 22P02 outside a Bind: "failed to parse '%s' as a value of type %s, consider using explicit type
#   casts" (sql-planner/src/frontend/sql/type_system.rs:704@25.5.10, sql-frontend/src/frontend/sql/
#   type_system.rs:648@26.3.0), with Error::Sbroad's "sbroad: " (src/traft/error.rs:139@25.5.10).
# Between the storage and the client Picodata may wrap such a text (the Lua dispatcher's "Error on
# replicaset <uuid>: ", src/sql/dispatch.lua:255@25.5.10); the emulator sends it bare.
_PICODATA_TYPES = {"smallint": "int", "integer": "int", "bigint": "int", "boolean": "bool",
                   "double precision": "double", "numeric": "decimal", "uuid": "uuid",
                   "timestamp with time zone": "datetime", "text": "text"}
_TARANTOOL_TYPES = {"int2": "integer", "int4": "integer", "int8": "integer", "bool": "boolean",
                    "float8": "double", "uuid": "uuid", "timestamptz": "datetime"}


def _tarantool_type(pg_type):
    t = pg_type.lower()
    if t.startswith("numeric"):
        return "decimal"
    if t.startswith("varchar") or t == "text":
        return "string"
    return _TARANTOOL_TYPES.get(t, "any")


def storage_text(code, text, detail, tables=()):
    """Picodata's text for a storage error of the PostgreSQL server behind the front (see above), or
    None where the emulator has no text of Picodata's for it."""
    if code == b"23505":
        m = re.match(r'^duplicate key value violates unique constraint "([^"]+)"$', text)
        k = re.match(r"^Key \((.*)\)=\((.*)\) already exists\.$", detail)
        if m:
            index = m.group(1)
            space = index[:-5] if index.endswith("_pkey") else index
            key = "[%s]" % (k.group(2) if k else "")
            return ('Duplicate key exists in unique index "%s" in space "%s" with old tuple - %s and new '
                    'tuple - %s' % (index, space, key, key))
    if code == b"23502":
        m = re.match(r'^null value in column "([^"]+)" of relation "([^"]+)" violates not-null constraint$', text)
        if m:
            col, rel = m.groups()
            cols = next((t.get("columns", []) for t in tables if t.get("name") == rel), [])
            pos = next((i + 1 for i, c in enumerate(cols) if c.get("name") == col), None)
            ctype = next((c.get("type", "") for c in cols if c.get("name") == col), "")
            return ("Tuple field %s (%s) type does not match one required by operation: expected %s, got nil"
                    % (pos if pos else "?", col, _tarantool_type(ctype)))
    if code == b"22012":
        return "Failed to execute SQL statement: division by zero"
    if code == b"22003" and re.match(r"^(smallint|integer|bigint) out of range$", text):
        return "Failed to execute SQL statement: integer is overflowed"
    if code == b"22P02":
        m = re.match(r'^invalid input syntax for type ([a-z ]+): "(.*)"$', text)
        if m and m.group(1) in _PICODATA_TYPES:
            return ("sbroad: failed to parse '%s' as a value of type %s, consider using explicit type casts"
                    % (m.group(2), _PICODATA_TYPES[m.group(1)]))
    return None


def picodata_error(m, bind=False, tables=()):
    """An ErrorResponse m of the PostgreSQL server behind the front as Picodata would send it: its
    SQLSTATE where Picodata has one for the case (KEPT_STATES; BIND_STATES for a Bind), XX000 for
    everything else, only severity, code and message (pgwire's ErrorInfo::new(severity, code,
    message), PgError::info in src/pgproto/error.rs: no DETAIL or HINT, which are the emulator's
    notes). The storage's errors that Picodata words in its own way are translated (storage_text,
    `tables`: the state's tables, for column numbers and types). Otherwise the message stays
    PostgreSQL's, except where Picodata's own text was read: a table that
    does not exist (`table with name "T" not found`: SbroadError::NotFound of Entity::Table "with name
    {to_user(name)}", sql-frontend/src/frontend/sql/ast/core.rs at 26.3.0, sql-planner/src/frontend/
    sql.rs at 25.5.1, with Error::Sbroad's "sbroad: ") and the storages' forward=off check. A FATAL
    error (the server ends the session) is passed on as it is."""
    if (error_field(m, b"V") or error_field(m, b"S")) not in (b"ERROR", b""):
        return m
    code = error_field(m, b"C")
    text = error_field(m, b"M").decode("utf-8", "replace")
    if code == STRICT_STATE:
        text = STRICT_TEXT
    elif code == b"42P01" and _MISSING_TABLE.match(text):
        text = 'sbroad: table with name "%s" not found' % _MISSING_TABLE.match(text).group(1)
    elif not (bind and code in BIND_STATES):
        detail = error_field(m, b"D").decode("utf-8", "replace")
        picodata = storage_text(code, text, detail, tables)
        if picodata:  # every SQL-path error reaches the client as Error::Sbroad (README's table)
            text = picodata if picodata.startswith("sbroad: ") else "sbroad: " + picodata
    if not (code in KEPT_STATES or (bind and code in BIND_STATES)):
        code = b"XX000"
    return error_msg(code.decode(), text)


def error_field(m, code):
    """A field of an ErrorResponse message (with its header), b"" when absent."""
    pos = 5
    while pos < len(m) and m[pos:pos + 1] != b"\0":
        end = m.index(b"\0", pos + 1)
        if m[pos:pos + 1] == code:
            return m[pos + 1:end]
        pos = end + 1
    return b""


def null_data_row(m):
    """A DataRow with the columns of m, every value NULL."""
    n = int.from_bytes(m[5:7], "big")
    return msg(b"D", m[5:7] + b"\xff\xff\xff\xff" * n)


def read_cstr(body, pos):
    end = body.index(b"\0", pos)
    return body[pos:end].decode("utf-8", "replace"), end + 1


# Where Picodata tags an execution or VDBE error with the query of EXPLAIN (RAW) that raised it:
# SbroadError::TaggedExecutionError, "Query {K} from EXPLAIN (RAW): {err}" (sql-ir/src/errors.rs:422
# @26.2.1-rc1), set in materialize_subtree and dispatch (sql-executor/src/executor.rs:354 and :428
# @26.2.1-rc1; crates/... at 26.2.1-rc2); absent at 26.1.6. Picodata's tests test/int/sql/options.sql
# @26.2.1-rc1 and @26.2.1-rc2 show it on both row limits and the opcode limit.
TAGGED_FROM = emu_caps.parse_version("26.2.1-rc1")


def row_limit_text(limit, n, version, values=False):
    """Picodata's text for sql_motion_row_max over pgproto, where traft's Error::Sbroad writes every
    SbroadError as "sbroad: {0}" (src/traft/error.rs:139@25.5.10). The rows gathered for the client:
    SbroadError::DispatchError, written as is (port_write_tuples, src/sql/dispatch.rs:449@25.5.10,
    :1316@26.1.6; sql-planner/src/errors.rs:402@25.5.10). The rows of an INSERT ... VALUES (values):
    checked while planning, SbroadError::UnexpectedNumberOfValues, "unexpected number of values: ..."
    (sql-planner/src/ir/options.rs:264@25.5.10, :453@26.1.6; errors.rs:383@25.5.10; Picodata's test
    test/int/test_iproto_options.py:60@25.5.10). From 26.2.1-rc1 both are ExecutionErrors of the
    executor (src/sql/dispatch.rs:1321, sql-executor/src/executor/engine/helpers.rs:1607@26.2.1-rc1),
    tagged (TAGGED_FROM). A single-bucket read that runs locally at its owner (26.1.1+) is checked by
    the storage instead (src/sql/execute.rs:320@26.1.6, "unexpected number of values: ..." with the
    whole row count): not told apart here."""
    text = "Exceeded maximum number of rows (%d) in virtual table: %d" % (limit, n)
    if _tagged(version):
        return "sbroad: Query 1 from EXPLAIN (RAW): " + text
    return ("sbroad: unexpected number of values: " if values else "sbroad: ") + text


def vdbe_limit_text(limit, version):
    """Picodata's text for sql_vdbe_opcode_max over pgproto: tarantool's ER_EXCEEDED_VDBE_MAX_STEPS
    "Reached a limit on max executed vdbe opcodes. Limit: %u" (src/box/errcode.h:322 of Picodata's
    tarantool, branch picodata-25.5), an SbroadError::VdbeError on the storage that runs it
    (sql-planner/src/executor/vdbe.rs:43-45, errors.rs:443-446@25.5.10), reaching the client as an
    SbroadError of the coordinator, "sbroad: ..." (a DispatchError of the storage's answer,
    src/sql/dispatch.rs:270-271 and :379-384@25.5.10), tagged from 26.2.1-rc1 (TAGGED_FROM). Between the
    prefix and the text Picodata writes the storage's and vshard's wrappers of the error ("Failed to
    execute '.proc_sql_execute': ", src/sql.rs:2722@25.5.10, and vshard's error object), which the
    emulator does not reproduce: a client must match the text as a substring."""
    text = "Reached a limit on max executed vdbe opcodes. Limit: %d" % limit
    return ("sbroad: Query 1 from EXPLAIN (RAW): " if _tagged(version) else "sbroad: ") + text


def _tagged(version):
    v = emu_caps.parse_version(version)
    return v is not None and v >= TAGGED_FROM


class Settings:
    """Cluster settings and this instance's ports, re-read from state.json when it changes."""

    def __init__(self, state_path, instance):
        self.path, self.instance = state_path, instance
        self.mtime = None
        self.checked = 0.0
        self._tabs = None
        self._gen = "0"
        self.d = {}
        self.refresh()

    def refresh(self):
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
    def version(self):
        return self.d.get("picodata") or self.d.get("picodata_version") or dialect.DEFAULT_VERSION

    @property
    def table_gen(self):
        """Changes when the emulator creates or drops a table (a new set of storage relations)."""
        tabs = self.d.get("tables", [])
        if tabs is not self._tabs:
            self._tabs = tabs
            key = repr(sorted((t.get("name"), t.get("id")) for t in tabs))
            self._gen = "%08x" % (zlib.crc32(key.encode()) & 0xffffffff)
        return self._gen

    @property
    def motion_row_max(self):
        return int(self.d.get("sql_motion_row_max", DEFAULT_MOTION_ROW_MAX))

    @property
    def vdbe_opcode_max(self):
        return int(self.d.get("sql_vdbe_opcode_max", DEFAULT_VDBE_OPCODE_MAX))

    @property
    def read_preference(self):
        """The cluster's read_preference (picoemu set read_preference; 26.1+)."""
        return self.d.get("read_preference", "leader")

    @property
    def statement_max(self):
        return int(self.d.get("pg_statement_max", emu_stmts.DEFAULT_STATEMENT_MAX))

    def inst(self):
        for i in self.d.get("instances", []):
            if i["name"] == self.instance:
                return i
        raise SystemExit("instance %s is not in %s" % (self.instance, self.path))


class Audit:
    def __init__(self, path):
        self.path = path

    def record_cancel(self, instance, peer):
        """A CancelRequest: Picodata has no cancel (it never sends BackendKeyData) and closes the
        connection; a client that sends one believes a statement can be stopped."""
        entry = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds"),
                 "instance": instance, "kind": "cancel", "sqlstate": "08P01",
                 "message": "CancelRequest: Picodata has no cancel (no BackendKeyData was sent)",
                 "statement": "", "user": None, "database": None, "application_name": "", "peer": peer}
        self._append(entry)
        log("refused a cancel request from %s" % peer)

    def record_startup(self, instance, peer, params, options, text):
        """Startup options Picodata cannot read: it closes the connection without an answer."""
        entry = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds"),
                 "instance": instance, "kind": "startup", "sqlstate": "",
                 "message": "connection closed at startup, no answer (Picodata: %s)" % text,
                 "statement": "options=%s" % (options or ""), "user": params.get("user"),
                 "database": params.get("database"), "application_name": params.get("application_name", ""),
                 "peer": peer}
        self._append(entry)

    def _append(self, entry):
        line = json.dumps(entry, sort_keys=True) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def record(self, session, kind, code, text, statement):
        entry = {"time": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="milliseconds"),
                 "instance": session.front.settings.instance, "kind": kind, "sqlstate": code,
                 "message": text, "statement": statement, "user": session.params.get("user"),
                 "database": session.params.get("database"),
                 "application_name": session.params.get("application_name", ""), "peer": session.peer}
        self._append(entry)
        log("refused (%s %s) from %s %s: %s | %s" % (kind, code, entry["application_name"], session.peer,
                                                    text, statement[:500]))


class Entry:
    """One expected server response (or one answer of the front) in the ordered response queue."""
    __slots__ = ("kind", "ends", "data", "limit", "rows", "held", "exceeded", "done", "capture",
                 "on_done", "simple", "tag", "batch", "completed", "vdbe", "deferred", "muted", "replay", "bind",
                 "null_rows")

    def __init__(self, kind, ends=(), data=b"", limit=0, simple=False, on_done=None, capture=None):
        self.kind = kind            # fwd | swallow | synth | sync
        self.ends = ends            # message types that end this entry
        self.data = data            # synth: bytes to emit
        self.limit = limit          # fwd execute: sql_motion_row_max (0: off)
        self.rows = 0
        self.held = []
        self.exceeded = False
        self.done = None            # asyncio.Event set when the entry completes
        self.capture = capture      # dict that receives ParameterDescription types
        self.on_done = on_done
        self.simple = simple        # a simple Query: an error does not end it (ReadyForQuery does)
        self.tag = ""               # the statement, for the audit
        self.batch = 0              # extended-protocol batch (messages up to a Sync) it belongs to
        self.completed = False      # ended by its own response (not dropped after an error)
        self.vdbe = None            # fwd: the vdbe check entry that decides this statement's fate
        self.deferred = b""         # vdbe: the statement's answer, sent when the check passes
        self.muted = False          # vdbe: the statement already failed; say nothing more
        self.bind = False           # fwd: a Bind (its parameter errors keep Picodata's codes)
        self.replay = None          # fwd: how to run this write again (Session.hold_retry)
        self.null_rows = False      # fwd: every value of its rows NULL (emu_route.empty_set_aggregate)


class Session:
    def __init__(self, front, reader, writer):
        self.front = front
        self.cr, self.cw = reader, writer
        self.sr = self.sw = None
        peer = writer.get_extra_info("peername")
        self.peer = "%s:%s" % peer[:2] if peer else "?"
        self.params = {}
        self.pending = []           # deque-like list of Entry
        self.batch_no = 0           # number of Syncs seen from the client
        self.failed_batch = -1      # the batch in which the server reported an error
        self.skip_until_sync = False  # the front refused a message of this batch
        self.conn_opts = {}         # Picodata startup options (typed)
        self.stmts = {}             # statement name -> info dict
        self.stmt_invalidation = False  # pico_stmt_invalidation=true (26.1+): 42999 at Bind after DDL
        self.portals = {}           # portal name -> info dict
        self.portal_params = {}     # portal name -> its bound values as text (None: NULL or binary)
        self.dead_portals = {}      # portal name -> Picodata's error: a read bound past its deadline
        self.helper = "no"          # helper statement state: no | pending | yes
        self.vdbe_helpers = {}      # the same for the vdbe statements, by name
        self.authenticated = False
        self.hold = None            # completion of the last counted Execute
        self.sbuf = []              # messages for the server, written at once
        self.closed = False
        self.batch_rec = None       # the extended-protocol batch being received, for a run again
        self.retry = None           # a retryable error held back until its ReadyForQuery

    # ---- output ordering ---------------------------------------------------------------------------
    def push(self, entry):
        entry.batch = self.batch_no
        self.pending.append(entry)
        if entry.kind == "synth" and len(self.pending) == 1:
            self.drain_synth()

    def drain_synth(self):
        out = bytearray()
        while self.pending and self.pending[0].kind == "synth":
            e = self.pending.pop(0)
            out += e.data
            self.finish(e)
        if out:
            self.cw.write(bytes(out))

    def finish(self, e):
        if e.on_done:
            e.on_done(e)
        if e.done is not None:
            e.done.set()

    def synth(self, data):
        self.push(Entry("synth", data=data))

    def send_server(self, data):
        self.sbuf.append(data)

    def flush_server(self):
        if self.sbuf:
            self.sw.write(b"".join(self.sbuf))
            self.sbuf = []

    # ---- server -> client --------------------------------------------------------------------------
    async def server_pump(self):
        buf = b""
        try:
            while True:
                data = await self.sr.read(262144)
                if not data:
                    break
                buf = buf + data if buf else data
                out = bytearray()
                pos, n = 0, len(buf)
                while n - pos >= 5:
                    ln = int.from_bytes(buf[pos + 1:pos + 5], "big")
                    if n - pos < ln + 1:
                        break
                    typ = buf[pos:pos + 1]
                    m = buf[pos:pos + 1 + ln]
                    pos += 1 + ln
                    self.on_server_message(typ, m, out)
                buf = buf[pos:]
                if out:
                    self.cw.write(bytes(out))
                if self.cw.transport.get_write_buffer_size() > 1 << 20:
                    await self.cw.drain()
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self.close()

    def skip_to_sync(self, e):
        """After an error in a batch of the extended protocol the server skips every message until
        Sync: drop their entries."""
        self.failed_batch = e.batch
        while self.pending and self.pending[0].kind != "sync":
            self.finish(self.pending.pop(0))

    def complete(self, e, out, answer=b""):
        """e, the first pending entry, got its last message: out gets answer, then the front's own
        answers queued behind e."""
        self.pending.pop(0)
        e.completed = True
        out += answer
        self.finish(e)
        if self.pending and self.pending[0].kind == "synth":
            self.drain_into(out)

    def on_server_message(self, typ, m, out):
        if typ in (b"N", b"S", b"A"):
            out += m
            return
        if typ == b"K":
            # Picodata sends no BackendKeyData (src/pgproto/client.rs: the startup ends with
            # ParameterStatus and ReadyForQuery), so a client has no key to cancel with.
            return
        if not self.pending:
            if typ == b"Z":
                self.authenticated = True
            out += m
            return
        e = self.pending[0]
        if e.kind == "synth":  # emit queued answers of the front that are now in order
            while self.pending and self.pending[0].kind == "synth":
                s = self.pending.pop(0)
                out += s.data
                self.finish(s)
            if not self.pending:
                out += m
                return
            e = self.pending[0]
        if typ == b"E":
            if e.kind == "vdbe":
                if not e.muted:
                    text = vdbe_limit_text(e.limit, self.front.settings.version)
                    out += error_msg("XX000", text)
                    self.front.audit.record(self, "limit", "XX000", text, e.tag)
                self.pending.pop(0)
                self.finish(e)
                if not e.simple:
                    self.skip_to_sync(e)
                return
            if e.kind == "swallow":
                log("injected message failed: %r" % m[5:200])
            m = read_only_refusal(m, self.front.settings.version)
            if not self.hold_retry(e, m):
                # the client sees the error (as Picodata would send it), unless the statement runs again
                out += picodata_error(m, bind=e.bind, tables=self.front.settings.d.get("tables", []))
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
            return
        if e.kind == "vdbe":
            if typ in e.ends:
                self.complete(e, out, b"" if e.muted else e.deferred)
            return
        if e.kind == "swallow":
            if e.capture is not None and typ == b"t":
                cnt = int.from_bytes(m[5:7], "big")
                e.capture["types"] = list(struct.unpack("!%dI" % cnt, m[7:7 + 4 * cnt]))
            if typ in e.ends:
                self.complete(e, out)
            return
        # fwd or sync
        if typ == b"D" and e.null_rows:
            m = null_data_row(m)
        if typ == b"D" and e.limit:
            e.rows += 1
            if e.exceeded:
                return
            if e.rows > e.limit:
                e.exceeded = True
                e.held = []
                return
            e.held.append(m)
            return
        if e.limit and typ in (b"C", b"s"):
            if e.exceeded:
                # Picodata gathers the virtual table before answering: the client gets the error, no rows
                text = row_limit_text(e.limit, e.limit + 1, self.front.settings.version)
                out += error_msg("XX000", text)
                self.front.audit.record(self, "limit", "XX000", text, e.tag)
                e.held = []
                e.limit = 0
                if e.vdbe is not None:
                    e.vdbe.muted = True
                    if e.simple:
                        self.pending.pop(0)
                        self.finish(e)
                        return
                if e.simple:
                    return  # the entry ends with ReadyForQuery
                self.pending.pop(0)
                self.finish(e)
                if e.batch == self.batch_no:
                    self.skip_until_sync = True  # the rest of the batch is skipped, as after any error
                return
            if e.held and e.vdbe is None:
                out += b"".join(e.held)
                e.held = []
        if typ == b"Z" and self.retry is not None:
            if self.run_again(e):
                return
            out += self.retry["err"]  # not run again: the client gets the error after all
            self.retry = None
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

    # ---- running a write again after a serialization failure or deadlock (RETRY_STATES) ----------
    def hold_retry(self, e, m):
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
        self.retry = {"err": picodata_error(m, tables=self.front.settings.d.get("tables", [])), "rec": rec,
                      "batch": e.batch}
        return True

    def hold_move(self, e, m):
        """A write that met a bucket in flight (MOVE_STATES): held back and run again at its
        ReadyForQuery, within MOVE_SECONDS of its first run (otherwise the client gets it as
        Picodata's: picodata_error). True when held."""
        rec = e.replay
        if (e.kind == "fwd" and rec is not None and self.retry is None
                and time.monotonic() - rec["t0"] <= MOVE_SECONDS):
            if not rec.get("moves"):
                self.front.move_statements += 1
                log("bucket move: a write waits for a bucket in flight and runs again (%d statements "
                    "so far, %d runs again) | %s" % (self.front.move_statements, self.front.move_reruns,
                                                    e.tag[:200]))
            rec["moves"] = rec.get("moves", 0) + 1
            self.retry = {"err": picodata_error(m, tables=self.front.settings.d.get("tables", [])), "rec": rec,
                          "batch": e.batch, "move": True}
            return True
        log("bucket move: statement not run again after %d runs in %.0f s | %s" % (
            rec.get("moves", 0) if rec else 0, time.monotonic() - rec["t0"] if rec else 0, e.tag[:300]))
        return False

    def run_again(self, e):
        """e ends with this ReadyForQuery, after a held error: when nothing the client sent later is
        queued on the server (only the front's own settings restored behind it), the statement is
        sent again instead and this ReadyForQuery dropped. True when it was."""
        r = self.retry
        rec = r["rec"]
        later = self.pending[1:]
        if (e.batch != r["batch"] or any(p.kind != "swallow" for p in later) or self.sbuf
                or (rec["kind"] == "extended" and (not rec["ok"] or sum(1 for t, _, _ in rec["msgs"] if t == b"E") != 1))):
            return False
        self.retry = None
        if r.get("move"):
            self.front.move_reruns += 1
        else:
            rec["tries"] += 1
            self.front.retried += 1
        if not r.get("move") and self.front.retried % 1000 == 1:
            log("statements run again after %s so far: %d (this one: try %d) | %s" % (
                "/".join(c.decode() for c in RETRY_STATES), self.front.retried, rec["tries"],
                rec.get("sql", "")[:200]))
        self.pending.pop(0)
        self.finish(e)
        batch_no, skip = self.batch_no, self.skip_until_sync
        self.batch_no = r["batch"]  # the entries of the rerun belong to the finished batch
        try:
            if rec["kind"] == "simple":
                self.run_query(rec["sql"], rec["raw"], rec)
            else:
                saved, self.batch_rec = self.batch_rec, rec
                for typ, body, raw in rec["msgs"]:
                    if typ == b"B":  # answered already: BindComplete is not repeated
                        # the failed run's transaction took its bound key values back with it
                        self.inject_bind_params(body)
                        self.push(Entry("swallow", ends=(b"2",)))
                        self.send_server(raw)
                    else:
                        self.run_execute(body, raw)
                self.batch_rec = saved
                self.push(Entry("sync", ends=(b"Z",)))
                self.send_server(msg(b"S"))
        finally:
            self.batch_no, self.skip_until_sync = batch_no, skip
        self.flush_server()
        return True

    def drain_into(self, out):
        while self.pending and self.pending[0].kind == "synth":
            s = self.pending.pop(0)
            out += s.data
            self.finish(s)

    # ---- client -> server --------------------------------------------------------------------------
    async def run(self):
        self.front.sessions.add(self)
        try:
            if not await self.startup():
                return
            pump = asyncio.ensure_future(self.server_pump())
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

    def close(self):
        self.front.sessions.discard(self)
        if self.closed:
            return
        self.closed = True
        for w in (self.cw, self.sw):
            if w is not None:
                try:
                    w.close()
                except Exception:
                    pass

    async def startup(self):
        while True:
            head = await self.cr.readexactly(8)
            ln, code = struct.unpack("!II", head)
            if ln < 8 or ln > 10000:
                return False
            body = await self.cr.readexactly(ln - 8)
            if code in (SSL_REQUEST, GSS_REQUEST):
                self.cw.write(b"N")
                continue
            if code == CANCEL_REQUEST:
                # Picodata's handshake takes only a startup or SSL request: anything else is a
                # protocol violation and the connection is closed unanswered. A cancel request
                # stops nothing there, so the front relays none, and records it as refused.
                self.front.audit.record_cancel(self.front.settings.instance, self.peer)
                return False
            if code != PROTO_3:
                self.cw.write(error_msg("08P01", "unsupported frontend protocol %d.%d" % (code >> 16, code & 0xffff),
                                        "FATAL"))
                return False
            break
        pos = 0
        while pos < len(body) and body[pos] != 0:
            k, pos = read_cstr(body, pos)
            v, pos = read_cstr(body, pos)
            self.params[k] = v
        st = self.front.settings
        st.refresh()
        version = st.version
        options = self.params.pop("options", None)
        try:
            self.conn_opts = parse_startup_options(options, version)
            self.stmt_invalidation = self.conn_opts.pop(emu_stmts.OPTION, False)
            if emu_stmts.OPTION in self.params and emu_stmts.has_stmt_invalidation(version):
                self.stmt_invalidation = emu_stmts.parse_flag(self.params[emu_stmts.OPTION])
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
        if self.conn_opts:
            log("session of %s (%s) with startup options %s" % (
                self.params.get("application_name", ""), self.peer,
                ",".join("%s=%s" % kv for kv in sorted(self.conn_opts.items()))))
        for k in UNKNOWN_STARTUP_DROP:
            if k in self.params:
                log("startup parameter %s=%s accepted and ignored" % (k, self.params.pop(k)))
        up = dict(self.params)
        gucs = self.connection_gucs()
        if gucs:
            up["options"] = " ".join("-c %s=%s" % (k, v) for k, v in gucs.items())
        try:
            self.sr, self.sw = await asyncio.wait_for(
                asyncio.open_connection(HOST, self.front.private_port), 10)
        except (OSError, asyncio.TimeoutError) as exc:
            self.cw.write(error_msg("08006", "picoemu front: instance %s is not reachable (%s)"
                                    % (st.instance, exc), "FATAL"))
            await self.cw.drain()
            return False
        payload = struct.pack("!I", PROTO_3) + b"".join(cstr(k) + cstr(v) for k, v in up.items()) + b"\0"
        self.sw.write(struct.pack("!I", len(payload) + 4) + payload)
        return True

    def connection_gucs(self):
        """Connection-level values for the private server (the contract with the storage SQL)."""
        g = {}
        o = self.conn_opts
        if "read_preference" in o:
            g["picoemu.read_preference"] = o["read_preference"]
        if "forward" in o:
            g["picoemu.strict"] = "on" if o["forward"] == "off" else "off"
        g["picoemu.vdbe_opcode_max"] = str(o.get("sql_vdbe_opcode_max", self.front.settings.vdbe_opcode_max))
        # A statement is routed by the key values bound to it (key_route.sql): every execution is
        # planned with its own values, never from a generic plan that folded another key's owner.
        g["plan_cache_mode"] = "force_custom_plan"
        return g

    def statement_gucs(self, opts):
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

    def effective_option(self, opts, name, setting):
        """The statement's OPTION name, else the startup option, else the cluster setting."""
        if name in opts:
            return opts[name]
        if name in self.conn_opts:
            return self.conn_opts[name]
        self.front.settings.refresh()
        return getattr(self.front.settings, setting)

    def motion_limit(self, opts):
        return self.effective_option(opts, "sql_motion_row_max", "motion_row_max")

    async def client_loop(self):
        cr = self.cr
        buf = b""
        while True:
            self.flush_server()
            data = await cr.read(262144)
            if not data:
                return
            buf = buf + data if buf else data
            pos, n = 0, len(buf)
            while n - pos >= 5:
                ln = int.from_bytes(buf[pos + 1:pos + 5], "big")
                if n - pos < ln + 1:
                    break
                raw = buf[pos:pos + 1 + ln]
                pos += 1 + ln
                if await self.on_client_message(raw[:1], raw[5:], raw):
                    self.flush_server()
                    return
            buf = buf[pos:]

    async def on_client_message(self, typ, body, raw):
        """Handles one client message; True when the session ends."""
        if not self.authenticated:
            self.send_server(raw)
            return False
        if typ == b"X":
            self.send_server(raw)
            return True
        if typ == b"Q":
            await self.on_query(body[:-1].decode("utf-8", "replace"), raw)
            return False
        if typ == b"S":
            self.batch_rec = None
            self.skip_until_sync = False
            self.push(Entry("sync", ends=(b"Z",)))
            self.batch_no += 1
            self.send_server(raw)
            return False
        if typ == b"H":
            self.send_server(raw)
            return False
        if self.batch_rec is None:
            self.batch_rec = {"kind": "extended", "msgs": [], "ok": True, "tries": 0, "t0": time.monotonic()}
        if typ in (b"B", b"E"):
            self.batch_rec["msgs"].append((typ, body, raw))
        elif typ not in (b"P", b"D"):  # Close, FunctionCall: a batch not run again
            self.batch_rec["ok"] = False
        if self.hold is not None and not self.hold.completed and self.hold in self.pending:
            # a statement of this batch may still exceed sql_motion_row_max: know it before
            # forwarding the next statement (Picodata skips the rest of a failed batch)
            self.hold.done = asyncio.Event()
            self.send_server(msg(b"H"))
            self.flush_server()
            await self.hold.done.wait()
        self.hold = None
        if self.skip_until_sync or self.failed_batch == self.batch_no:
            return False  # Picodata (like PostgreSQL) discards the rest of a failed batch
        if self.sw.transport.get_write_buffer_size() > 1 << 20:
            self.flush_server()
            await self.sw.drain()
        if typ == b"P":
            await self.on_parse(body, raw)
        elif typ == b"B":
            await self.on_bind(body, raw)
        elif typ == b"D":
            self.on_describe(body, raw)
        elif typ == b"E":
            stalled = await self.stall_execute(body)
            if stalled is not None:
                await self.after_deadline(body, raw, *stalled)
            elif not await self.execute_parts(body, raw):
                self.run_execute(body, raw)
        elif typ == b"C":
            self.on_close(body, raw)
        else:
            if typ == b"F":  # FunctionCall: answered with FunctionCallResponse and ReadyForQuery
                self.push(Entry("fwd", ends=(b"Z",), simple=True))
            self.send_server(raw)
        return False

    # ---- simple query ------------------------------------------------------------------------------
    def refuse(self, kind, code, text, statement, extended, hint=None):
        self.front.audit.record(self, kind, code, text, statement)
        self.synth(error_msg(code, text, hint=hint) + (b"" if extended else msg(b"Z", b"I")))
        if extended:
            self.skip_until_sync = True

    def judge(self, sql, extended):
        if LOG_STATEMENTS:
            log("statement: " + " ".join(sql.split()))
        self.front.settings.refresh()
        key = (sql, self.front.settings.version)
        v = self.front.verdicts.get(key)
        if v is None:
            try:
                v = dialect.validate(sql, key[1])
            except dialect.Reject as rej:
                v = rej
            if len(self.front.verdicts) > 50000:
                self.front.verdicts.clear()
            self.front.verdicts[key] = v
        if isinstance(v, dialect.Reject):
            self.refuse("dialect", "XX000", dialect.message(v), sql, extended)
            return None
        return v

    async def on_query(self, sql, raw):
        stalled = await self.stall_query(sql)
        if stalled is not None:
            text, write = stalled
            if write:  # sent to the live masters when the deadline passed: applied there
                await self.captured(self.run_whole_query(sql, raw))
            self.synth(error_msg("XX000", text) + msg(b"Z", b"I"))
            return
        await self.run_whole_query(sql, raw)

    async def run_whole_query(self, sql, raw):
        if not await self.query_parts(sql, raw):
            self.run_query(sql, raw)

    def run_query(self, sql, raw, rec=None):
        v = self.judge(sql, extended=False)
        if v is None:
            return
        if v.kind in ("tcl", "set"):
            self.synth(msg(b"C", cstr(v.tag)) + msg(b"Z", b"I"))
            return
        if emu_explain.answered(v):
            self.synth(self.explain(v.sql, v.options, None, b"Q"))
            return
        if v.kind == "deallocate":
            self.forget_deallocated(sql)
        limit = self.motion_limit(v.options)
        if v.insert_rows is not None and limit and v.insert_rows > limit:
            text = row_limit_text(limit, v.insert_rows, self.front.settings.version, values=True)
            self.refuse("limit", "XX000", text, sql, extended=False)
            return
        if self.refuse_option_use(v, sql, extended=False):
            return
        r = self.route(v) if v.kind == "query" else None
        if r is not None and self.refuse_forward(v.options, r, None, sql, extended=False):
            return
        if r is not None and v.reads and self.refuse_non_leader_read(v.options, r, sql, extended=False):
            return
        self.count_dnf(r, sql)
        sent = r["sql"] if r is not None else v.sql
        sets, restore = self.statement_gucs(self.write_options(v.options, v.kind == "query" and not v.reads))
        if sets:
            self.inject_simple(sets)
        vdbe = self.vdbe_limit(v.options) if v.kind == "query" else 0
        if vdbe:
            # base, statement and check in one query string: one implicit transaction
            self.push(Entry("swallow", ends=(b"C",), simple=True))
        e = Entry("fwd", ends=(b"C", b"I") if vdbe else (b"Z",), limit=limit if v.reads else 0, simple=True)
        e.tag = sql
        e.null_rows = v.reads and self.empty_set_aggregate(r, None)
        if v.kind == "query" and not v.reads:  # a write: may run again (hold_retry)
            e.replay = rec or {"kind": "simple", "sql": sql, "raw": raw, "tries": 0, "t0": time.monotonic()}
        self.push(e)
        if vdbe:
            e.vdbe = Entry("vdbe", ends=(b"C",), limit=vdbe, simple=True)
            e.vdbe.tag = sql
            self.push(e.vdbe)
            self.push(Entry("fwd", ends=(b"Z",), simple=True))
            gen = self.front.settings.table_gen
            self.send_server(msg(b"Q", cstr(vdbe_sql(VDBE_BASE, gen) + ";\n" + sent.rstrip().rstrip(";") +
                                            ";\n" + vdbe_sql(VDBE_CHECK, gen, vdbe))))
        else:
            self.send_server(raw if sent == sql else msg(b"Q", cstr(sent)))
        if restore:
            self.inject_simple(restore)

    def explain(self, sql, opts, params, what, nparams=0):
        """An EXPLAIN, answered here as Picodata answers it (emu_explain): the answer to a simple
        Query (b"Q"), to the Describe of a statement (b"S") or a portal (b"P"), or to an Execute
        (b"E"). One the emulator cannot answer (EXPLAIN (RAW)) is refused and recorded in the audit."""
        st = self.front.settings
        st.refresh()
        if what in (b"S", b"P"):
            return emu_explain.describe(st.version, what == b"S", nparams)
        try:
            lines = emu_explain.answer(sql, params, st.d, st.version, self.motion_limit(opts),
                                       self.vdbe_limit(opts))
        except Exception as exc:  # Picodata's error, or the emulator's own failure (said so)
            if isinstance(exc, emu_explain.NotEmulated):
                self.front.audit.record(self, "explain", "XX000", str(exc), sql)
            elif not isinstance(exc, emu_explain.ExplainError):
                log("EXPLAIN not emulated (%r) | %s" % (exc, sql[:200]))
                exc = "picoemu: EXPLAIN not emulated: %r" % exc
            if what != b"Q":
                self.skip_until_sync = True  # the rest of the batch is discarded, as after any error
            return error_msg("XX000", str(exc)) + (msg(b"Z", b"I") if what == b"Q" else b"")
        if what == b"Q":
            return emu_explain.simple(st.version, lines)
        return emu_explain.rows(lines)

    # ---- forward (26.2.1-rc1+): refused by the statement's bucket set, before it runs --------------
    def route(self, v):
        """What emu_route reads in the statement v (cached by text and version): its tokens, its
        OR-of-AND chains, and the text to send to the server ("sql", see dnf_text)."""
        key = (v.sql, self.front.settings.version)
        r = self.front.routes.get(key)
        if r is None:
            sql = v.sql
            try:
                toks = emu_route.statement_tokens(sql)
                if version_calls(toks):
                    sql = version_call_text(sql, toks)
                    toks = emu_route.statement_tokens(sql)
                r = {"toks": toks, "chains": emu_route.chains(toks)}
            except dialect.Reject:
                r = {"toks": None, "chains": 1}
            r["over"] = emu_caps.has("dnf_chain_limit", key[1]) and r["chains"] > emu_caps.dnf_most_chains()
            r["sql"] = dnf_text(sql, r) if r["over"] else sql
            if len(self.front.routes) > 20000:
                self.front.routes.clear()
            self.front.routes[key] = r
        return r

    def count_dnf(self, r, statement):
        """A statement over the DNF limit (dnf_text) is counted and logged each time it runs."""
        if r is not None and r.get("over"):
            self.front.dnf_over += 1
            log("DNF limit: a WHERE clause of %d chains (Picodata expands at most %d): not routed, every "
                "replicaset is asked (%d statements so far) | %s" % (r["chains"], emu_caps.dnf_most_chains(),
                                                                     self.front.dnf_over,
                                                 statement[:200]))

    def refuse_forward(self, opts, r, params, statement, extended):
        """Picodata checks forward before it dispatches a statement (reads and writes): under
        forward=off (ro_to_rw) a statement whose bucket set needs more is refused with XX000 and
        Picodata's text (emu_route.forward_verdict). The effective value: the statement's OPTION,
        else the startup option, else the cluster's strict setting (picoemu strict on = off). Not a
        dialect refusal: logged in front.log, not in the audit. True when refused."""
        text = self.forward_text(opts, r, params, statement)
        if text is None:
            return False
        self.front.forward_refused += 1
        log("forward: refused (%d so far): %s | %s" % (self.front.forward_refused, text, statement[:300]))
        self.synth(error_msg("XX000", text) + (b"" if extended else msg(b"Z", b"I")))
        if extended:
            self.skip_until_sync = True
        return True

    # ---- read_preference (26.1+) --------------------------------------------------------------------
    def refuse_option_use(self, v, statement, extended):
        """OPTION (read_preference = ...) on a statement that is not a read: Picodata's planner refuses
        it (validate_options_usage, sql-planner/src/ir/options.rs:428-439 at 26.1.1,
        sql-ir/src/ir/options.rs:479 at 26.2.1-rc1 and 26.3.0; SbroadError::Invalid of
        Entity::OptionSpec behind "sbroad: "). Recorded in the audit (kind dialect). True when
        refused."""
        if "read_preference" not in v.options or v.kind != "query" or v.reads:
            return False
        self.refuse("dialect", "XX000", "sbroad: invalid OptionSpec: read_preference option is supported "
                    "only for DQL queries", statement, extended)
        return True

    def refuse_non_leader_read(self, opts, r, statement, extended):
        """A read whose read_preference (its OPTION, else the startup option, else the cluster's
        setting) is not leader, of an unlogged table or while the cluster has sql_preemption on:
        refused before it runs with Picodata's text (emu_route.leader_read_refusal). Not a dialect
        refusal: logged in front.log, not in the audit. True when refused."""
        st = self.front.settings
        if r.get("toks") is None or not dialect.has_read_preference(st.version):
            return False
        if self.effective_option(opts, "read_preference", "read_preference") == "leader":
            return False
        text = emu_route.leader_read_refusal(st.d, r["toks"])
        if text is None:
            return False
        self.front.leader_refused += 1
        log("read_preference: refused (%d so far): %s | %s" % (self.front.leader_refused, text, statement[:300]))
        self.synth(error_msg("XX000", text) + (b"" if extended else msg(b"Z", b"I")))
        if extended:
            self.skip_until_sync = True
        return True

    def write_options(self, opts, write):
        """A write reads its rows on the leaders whatever the session's read_preference: Picodata's
        DML runs on the masters' storages (it takes no read_preference: validate_options_usage,
        sql-planner/src/ir/options.rs:428-439 at 26.1.1; single_plan_dispatch_dml, src/sql/
        dispatch.rs), while the emulator's write reads the view, whose branches follow
        picoemu.read_preference (_picoemu.read_part())."""
        if not write or not dialect.has_read_preference(self.front.settings.version):
            return opts
        if self.effective_option({}, "read_preference", "read_preference") == "leader":
            return opts  # the session reads on the leaders already: nothing to set
        return dict(opts, read_preference="leader")

    def empty_set_aggregate(self, r, params):
        """Whether the read's rows come back all NULL (emu_route.empty_set_aggregate)."""
        if r is None or r.get("toks") is None:
            return False
        st = self.front.settings
        try:
            empty = emu_route.empty_set_aggregate(st.d, st.version, r["toks"], params)
        except Exception as exc:  # the emulator's reading failed: answered as PostgreSQL answers
            log("aggregate: statement not judged (%r)" % exc)
            return False
        if empty:
            log("a scalar aggregate over an empty bucket set: NULL, as Picodata %s answers" % st.version)
        return empty

    def forward_text(self, opts, r, params, statement):
        """Picodata's refusal of the statement under the effective forward (refuse_forward), or None."""
        st = self.front.settings
        st.refresh()
        wanted = opts.get("forward") or self.conn_opts.get("forward") or ("off" if st.d.get("strict") else "on")
        if wanted == "on" or r.get("toks") is None:
            return None
        try:
            return emu_route.forward_verdict(st.d, st.instance, st.version, r["toks"], wanted, params)
        except Exception as exc:  # the emulator's reading failed: the storages' own check stays
            log("forward: statement not judged (%r) | %s" % (exc, statement[:200]))
            return None

    # ---- a dead master stalls the tier (emu_route.dispatch_plan, QUERY_TIMEOUT) --------------------
    async def stall(self, opts, r, params, write, insert_rows, statement):
        """A statement Picodata would dispatch through Lua while the catalog shows a master of its
        tier Offline waits here, reading nothing more from this client, until the master is back
        (None: the statement then runs as usual) or the deadline has passed (Picodata's error
        text). Not for a statement refused before dispatch (forward, a VALUES list over the row
        limit): those are refused as usual."""
        if r is None or r.get("toks") is None:
            return None
        limit = self.motion_limit(opts)
        if insert_rows is not None and limit and insert_rows > limit:
            return None
        st = self.front.settings
        st.refresh()
        pref = opts.get("read_preference") or self.conn_opts.get("read_preference") or "leader"
        try:
            plan = emu_route.dispatch_plan(st.d, st.instance, st.version, r["toks"], params, pref, write)
        except Exception as exc:  # not read here: the statement runs as it comes
            log("dead master: statement not judged (%r) | %s" % (exc, statement[:200]))
            return None
        if plan is None or not emu_route.stopped_masters(st.d, plan["tiers"]):
            return None
        if self.forward_text(opts, r, params, statement) is not None:
            return None
        t0 = time.monotonic()
        self.front.stalled += 1
        log("dead master: a statement waits for every master of tier %s (stopped: %s), at most %.0f s "
            "(%d statements so far) | %s" % (", ".join(plan["tiers"]), ", ".join(
                emu_route.stopped_masters(st.d, plan["tiers"])), QUERY_TIMEOUT, self.front.stalled,
                statement[:200]))
        while True:
            await asyncio.sleep(0.05)
            st.refresh()
            if not emu_route.stopped_masters(st.d, plan["tiers"]):
                log("dead master: the masters are back after %.1f s; the statement runs" % (time.monotonic() - t0))
                return None
            if time.monotonic() - t0 >= QUERY_TIMEOUT or self.closed:
                text = emu_route.dql_timeout_text(st.d, plan)
                log("dead master: deadline passed after %.1f s: %s" % (time.monotonic() - t0, text))
                return text

    async def stall_query(self, sql):
        """stall() for a simple Query: (Picodata's error, whether it writes), or None."""
        self.front.settings.refresh()
        v = self.front.verdicts.get((sql, self.front.settings.version))
        if v is None:
            try:
                v = dialect.validate(sql, self.front.settings.version)
            except dialect.Reject:
                return None  # run_query refuses it
        if not isinstance(v, dialect.Verdict) or v.kind != "query":
            return None
        text = await self.stall(v.options, self.route(v), None, not v.reads, v.insert_rows, sql)
        return None if text is None else (text, not v.reads)

    async def stall_execute(self, body):
        """stall() for an Execute: (Picodata's error, whether it writes), or None. A read whose
        Bind waited past the deadline already has its error (on_bind)."""
        portal, _ = read_cstr(body, 0)
        if portal in self.dead_portals:
            return self.dead_portals.pop(portal), False
        info = self.portals.get(portal)
        if info is None or info["kind"] != "query" or self.skip_until_sync or self.failed_batch == self.batch_no:
            return None
        text = await self.stall(info["options"], info.get("route"), self.portal_params.get(portal),
                                not info["reads"], info["insert_rows"], info["sql"])
        return None if text is None else (text, not info["reads"])

    async def captured(self, coro):
        """Runs coro (a statement sent on) with what the client would get for it captured and
        dropped: the client's earlier answers reach it first."""
        self.flush_server()
        await self.settled()
        real, self.cw = self.cw, emu_parts.Capture(self.cw)
        try:
            await coro
            self.send_server(msg(b"H"))  # answers the coroutine left behind no Sync come now
            self.flush_server()
            await self.settled()
        finally:
            self.cw = real

    async def after_deadline(self, body, raw, text, write):
        """An Execute whose deadline passed while it waited for a master: a write first runs, in a
        batch of its own, on whatever replicasets can take it (its answer dropped); then the client
        gets Picodata's error and the rest of its batch is skipped."""
        self.send_server(msg(b"H"))
        await self.captured(self.execute_parts(body, raw, alone=True) if write else asyncio.sleep(0))
        self.synth(error_msg("XX000", text))
        self.skip_until_sync = True

    def inject_simple(self, pairs):
        q = "SELECT " + ", ".join("set_config('%s', '%s', false)" % (k, v.replace("'", "''")) for k, v in pairs)
        self.push(Entry("swallow", ends=(b"Z",), simple=True))
        self.send_server(msg(b"Q", cstr(q)))

    # ---- prepared statements (emu_stmts) -------------------------------------------------------------
    def statement_room(self, sql):
        """pg_statement_max: the instance's statements of every client, checked at each Parse."""
        limit = self.front.settings.statement_max
        if limit and sum(len(s.stmts) for s in self.front.sessions) >= limit:
            self.refuse("limit", "XX000", emu_stmts.storage_full_text(limit), sql, extended=True)
            return False
        return True

    def invalidated(self, name, info):
        """42999 at Bind of a statement prepared before DDL, for a session that asked for it."""
        if not self.stmt_invalidation:
            return False
        self.front.settings.refresh()
        if info.get("gen") in (None, self.front.settings.table_gen):
            return False
        log("statement %r of %s invalidated by DDL: %s" % (name, self.peer, info["sql"][:200]))
        self.synth(error_msg(emu_stmts.INVALIDATED_STATE, emu_stmts.invalidated_text(name)))
        self.skip_until_sync = True
        return True

    def forget_deallocated(self, sql):
        name = emu_stmts.deallocated(sql)
        if name == "*":
            for k in [k for k in self.stmts if k]:
                del self.stmts[k]
        elif name:
            self.stmts.pop(name, None)
            log("named statement %s deallocated" % name)

    # ---- extended protocol ---------------------------------------------------------------------------
    async def on_parse(self, body, raw):
        name, pos = read_cstr(body, 0)
        sql, pos = read_cstr(body, pos)
        n = int.from_bytes(body[pos:pos + 2], "big")
        oids = list(struct.unpack("!%dI" % n, body[pos + 2:pos + 2 + 4 * n])) if n else []
        v = self.judge(sql, extended=True)
        if v is None:
            return
        if self.refuse_option_use(v, sql, extended=True):
            return
        if not self.statement_room(sql):
            return
        info = {"kind": v.kind, "tag": v.tag, "options": v.options, "insert_rows": v.insert_rows,
                "sql": sql, "types": None, "reads": v.reads, "gen": self.front.settings.table_gen,
                "route": self.route(v) if v.kind == "query" else None,
                "explain": v.sql if emu_explain.answered(v) else None, "params": v.params}
        if name:
            log("named statement %s prepared (%d named in this session)"
                % (name, sum(1 for k in self.stmts if k and k != name) + 1))
        if v.kind in ("tcl", "set") or info["explain"] is not None:
            self.stmts[name] = info
            self.synth(msg(b"1"))
            return
        if not dialect.has_arrays(self.front.settings.version) and any(o in ARRAY_OIDS for o in oids):
            self.refuse("dialect", "XX000", dialect.PARSE_ERROR_PREFIX + "typed array parameters exist only "
                        "from Picodata 26.2.1-rc1 [picoemu rule any_array]", sql, extended=True)
            return
        self.stmts[name] = info
        sent = info["route"]["sql"] if info["route"] is not None else v.sql
        if sent != sql:
            raw = msg(b"P", cstr(name) + cstr(sent) + body[pos:])
        self.push(Entry("fwd", ends=(b"1",)))
        self.send_server(raw)
        if v.params:
            known = oids + [0] * (v.params - len(oids))
            cached = self.front.type_cache.get((v.sql, tuple(oids)))
            if all(known[:v.params]):
                info["types"] = known[:v.params]
            elif cached is not None:
                info["types"] = cached
            else:
                cap = {}
                e = Entry("swallow", ends=(b"n", b"T"), capture=cap)
                e.done = asyncio.Event()
                self.push(e)
                self.send_server(msg(b"D", b"S" + cstr(name)) + msg(b"H"))
                self.flush_server()
                await e.done.wait()
                if "types" in cap:
                    info["types"] = cap["types"]
                    if len(self.front.type_cache) > 20000:
                        self.front.type_cache.clear()
                    self.front.type_cache[(v.sql, tuple(oids))] = cap["types"]

    async def on_bind(self, body, raw):
        portal, pos = read_cstr(body, 0)
        stmt, pos = read_cstr(body, pos)
        info = self.stmts.get(stmt)
        if info is not None and info["types"]:
            err = check_bind(body, pos, info["types"])
            if err:
                self.refuse("bind", err[0], err[1], info["sql"], extended=True)
                return
        if info is not None and self.invalidated(stmt, info):
            return
        # Picodata refuses such a read when it dispatches it; here before the Bind, whose planning
        # on a standby would already open an unlogged table the standby cannot read
        if info is not None and info.get("route") is not None and info["reads"] and \
                self.refuse_non_leader_read(info["options"], info["route"], info["sql"], extended=True):
            return
        self.portals[portal] = info
        if info is not None and (info["kind"] in ("tcl", "set") or info.get("explain") is not None):
            self.portal_params[portal] = bind_values(body, pos)
            self.synth(msg(b"2"))
            return
        if info is not None and info["kind"] == "query":
            # the statement's settings (its OPTION, a write's leader reads) before the Bind, which
            # plans it: the storage folds _picoemu.read_part() when it plans (run_execute sets them
            # again before the Execute and restores the connection's values after it)
            sets, _ = self.statement_gucs(self.write_options(info["options"], not info["reads"]))
            if sets:
                self.inject_extended(sets)
        self.inject_bind_params(body)
        self.portal_params[portal] = bind_values(body, pos)
        self.dead_portals.pop(portal, None)
        # A read starts its plan at Bind (its foreign scans connect then): one that waits for a
        # stopped master waits here; past the deadline it binds with every sharded view folded to
        # nothing (so the Bind succeeds, as on Picodata) and its Execute gets Picodata's error.
        text = None
        if info is not None and info["kind"] == "query" and info["reads"]:
            text = await self.stall(info["options"], info.get("route"), self.portal_params[portal], False,
                                    info["insert_rows"], info["sql"])
        if text is not None:
            self.dead_portals[portal] = text
            self.inject_extended(emu_parts.NOTHING)
        e = Entry("fwd", ends=(b"2",))
        e.bind = True
        self.push(e)
        self.send_server(raw)
        if text is not None:
            self.inject_extended(emu_parts.NO_PART)

    def inject_bind_params(self, body):
        """Picodata routes by a sharding key given as a parameter once it is bound: the values of
        this Bind (text format; None otherwise) for key_route.sql, set before the Bind plans the
        statement. Set in the statement's transaction, so a statement run again (run_again) sets
        them again: the abort of the failed run restored the previous statement's values."""
        portal, pos = read_cstr(body, 0)
        stmt, pos = read_cstr(body, pos)
        info = self.stmts.get(stmt)
        values = bind_values(body, pos)
        if info is not None and info["kind"] == "query" and values:
            self.inject_extended([("picoemu.bind_params", json.dumps(values))])

    def on_describe(self, body, raw):
        what = body[:1]
        name, _ = read_cstr(body, 1)
        info = (self.stmts if what == b"S" else self.portals).get(name)
        if info is not None and info["kind"] in ("tcl", "set"):
            self.synth((msg(b"t", b"\0\0") if what == b"S" else b"") + msg(b"n"))
            return
        if info is not None and info.get("explain") is not None:
            self.synth(self.explain(info["explain"], info["options"], None, what, info["params"]))
            return
        self.push(Entry("fwd", ends=(b"n", b"T")))
        self.send_server(raw)

    def on_close(self, body, raw):
        what = body[:1]
        name, _ = read_cstr(body, 1)
        info = (self.stmts if what == b"S" else self.portals).pop(name, None)
        if info is not None and (info["kind"] in ("tcl", "set") or info.get("explain") is not None):
            self.synth(msg(b"3"))
            return
        self.push(Entry("fwd", ends=(b"3",)))
        self.send_server(raw)

    def run_execute(self, body, raw):
        portal, _ = read_cstr(body, 0)
        info = self.portals.get(portal)
        if info is not None and info["kind"] in ("tcl", "set"):
            self.synth(msg(b"C", cstr(info["tag"])))
            return
        if info is not None and info.get("explain") is not None:
            self.synth(self.explain(info["explain"], info["options"], self.portal_params.get(portal), b"E"))
            return
        if info is not None and info["kind"] == "deallocate":
            self.forget_deallocated(info["sql"])
        opts = info["options"] if info else {}
        limit = self.motion_limit(opts)
        if info is not None and info["insert_rows"] is not None and limit and info["insert_rows"] > limit:
            self.refuse("limit", "XX000", row_limit_text(limit, info["insert_rows"], self.front.settings.version,
                                                         values=True),
                        info["sql"], extended=True)
            return
        if info is not None and info.get("route") is not None and self.refuse_forward(
                opts, info["route"], self.portal_params.get(portal), info["sql"], extended=True):
            return
        if info is not None:
            self.count_dnf(info.get("route"), info["sql"])
        sets, restore = self.statement_gucs(self.write_options(
            opts, info is not None and info["kind"] == "query" and not info["reads"]))
        if sets:
            self.inject_extended(sets)
        vdbe = self.vdbe_limit(opts) if (info is None or info["kind"] == "query") else 0
        if vdbe:
            self.inject_vdbe_base()
        e = Entry("fwd", ends=(b"C", b"s", b"I"), limit=limit if (info is None or info["reads"]) else 0)
        e.tag = info["sql"] if info else ""
        e.null_rows = info is not None and info["reads"] and self.empty_set_aggregate(
            info.get("route"), self.portal_params.get(portal))
        if info is not None and info["kind"] == "query" and not info["reads"] and self.batch_rec is not None:
            e.replay = self.batch_rec  # a write: may run again (hold_retry)
        self.push(e)
        self.send_server(raw)
        if vdbe:
            self.inject_vdbe_check(e, vdbe)
        if restore:
            self.inject_extended(restore)
        # awaited before any further message of the batch but Sync/Flush
        self.hold = e.vdbe or (e if e.limit else None)

    def vdbe_limit(self, opts):
        return self.effective_option(opts, "sql_vdbe_opcode_max", "vdbe_opcode_max")

    def inject_vdbe_base(self):
        name = self.prepare_vdbe_helper(VDBE_BASE_STMT, VDBE_BASE)
        self.push(Entry("swallow", ends=(b"2",)))
        self.send_server(msg(b"B", cstr(VDBE_PORTAL) + cstr(name) + struct.pack("!HHH", 0, 0, 0)))
        self.push(Entry("swallow", ends=(b"C",)))
        self.send_server(msg(b"E", cstr(VDBE_PORTAL) + struct.pack("!I", 0)))
        self.push(Entry("swallow", ends=(b"3",)))
        self.send_server(msg(b"C", b"P" + cstr(VDBE_PORTAL)))

    def _helper_state(self, name, e):
        self.vdbe_helpers[name] = "yes" if e.completed else "no"

    def prepare_vdbe_helper(self, stmt, template):
        """Parses the named helper statement of the current storage-table generation on the server,
        once per session; returns its name."""
        gen = self.front.settings.table_gen
        name = stmt + "_" + gen
        if self.vdbe_helpers.get(name, "no") == "no":
            self.push(Entry("swallow", ends=(b"1",), on_done=lambda e, n=name: self._helper_state(n, e)))
            self.send_server(msg(b"P", cstr(name) + cstr(vdbe_sql(template, gen)) + struct.pack("!H", 0)))
            self.vdbe_helpers[name] = "pending"
        return name

    def inject_vdbe_check(self, e, limit):
        name = self.prepare_vdbe_helper(VDBE_STMT, VDBE_CHECK)
        val = str(limit).encode()
        self.push(Entry("swallow", ends=(b"2",)))
        self.send_server(msg(b"B", cstr(VDBE_PORTAL) + cstr(name) + struct.pack("!HHI", 0, 1, len(val)) +
                             val + struct.pack("!H", 0)))
        e.vdbe = Entry("vdbe", ends=(b"C",), limit=limit)
        e.vdbe.tag = e.tag
        self.push(e.vdbe)
        self.send_server(msg(b"E", cstr(VDBE_PORTAL) + struct.pack("!I", 0)))
        self.push(Entry("swallow", ends=(b"3",)))
        self.send_server(msg(b"C", b"P" + cstr(VDBE_PORTAL)))



    def inject_extended(self, pairs):
        if self.helper == "no":
            self.push(Entry("swallow", ends=(b"1",), on_done=self._helper_done))
            self.send_server(msg(b"P", cstr(HELPER_STMT) + cstr("SELECT set_config($1, $2, false)") +
                                 struct.pack("!HII", 2, 25, 25)))
            self.helper = "pending"
        for k, v in pairs:
            params = struct.pack("!H", 0) + struct.pack("!H", 2)
            for val in (k, v):
                b = val.encode()
                params += struct.pack("!I", len(b)) + b
            params += struct.pack("!H", 0)
            self.push(Entry("swallow", ends=(b"2",)))
            self.send_server(msg(b"B", cstr(HELPER_PORTAL) + cstr(HELPER_STMT) + params))
            self.push(Entry("swallow", ends=(b"C",)))
            self.send_server(msg(b"E", cstr(HELPER_PORTAL) + struct.pack("!I", 0)))
            self.push(Entry("swallow", ends=(b"3",)))
            self.send_server(msg(b"C", b"P" + cstr(HELPER_PORTAL)))

    def _helper_done(self, e):
        self.helper = "yes" if e.completed else "no"

    # ---- a write that spans several replicasets: one part per replicaset (emu_parts) ---------------
    def write_parts(self, sql, insert_rows):
        self.front.settings.refresh()
        return emu_parts.write_parts(sql, insert_rows, self.front.settings.d)

    async def settled(self):
        """Returns once every answer the front waits for has come."""
        while self.pending and not self.closed:
            self.flush_server()
            await asyncio.sleep(0.001)

    def set_part(self, part):
        """The settings of a part (emu_parts.Part; None: no part) in a transaction of their own, in
        the extended protocol (a simple Query would drop the client's unnamed statement)."""
        self.inject_extended(part.settings() if part is not None else emu_parts.NO_PART)
        self.push(Entry("swallow", ends=(b"Z",)))
        self.send_server(msg(b"S"))

    async def run_part(self, part, send):
        """One part: its settings set in a transaction of their own (so they outlive a failed run,
        and a run again of this part alone, hold_retry, sees them), then send() sends the statement;
        returns what the client would have got for it. Nothing else is in flight meanwhile."""
        self.set_part(part)
        real, self.cw = self.cw, emu_parts.Capture(self.cw)
        try:
            send()
            self.flush_server()
            await self.settled()
        finally:
            cap, self.cw = self.cw, real
        return bytes(cap.buf)

    async def run_parts(self, parts, send):
        """Every part runs, whatever the others did (Picodata sends every replicaset its part), each
        committed on its own; the client gets the merged answer (emu_parts.merge_answers)."""
        answers = [await self.run_part(p, send) for p in parts]
        self.set_part(None)
        self.flush_server()
        await self.settled()
        failed = [p.rs if p else "the statement" for p, a in zip(parts, answers)
                  if any(t == b"E" for t, _ in emu_parts.messages(a))]
        if failed:
            log("a write of %d replicasets failed on %s; the other parts stay applied"
                % (len(parts), ", ".join(failed)))
        return emu_parts.merge_answers(answers)

    async def query_parts(self, sql, raw):
        """A simple Query that writes rows of several replicasets: run per part (True), else False."""
        if not re.match(r"\s*(insert|update|delete)\b", sql, re.I):
            return False
        self.front.settings.refresh()
        v = self.front.verdicts.get((sql, self.front.settings.version))
        if v is None:
            try:
                v = dialect.validate(sql, self.front.settings.version)
            except dialect.Reject:
                return False  # run_query refuses it
        if not isinstance(v, dialect.Verdict) or v.kind != "query" or v.reads:
            return False
        limit = self.motion_limit(v.options)
        if v.insert_rows is not None and limit and v.insert_rows > limit:
            return False  # refused as a whole
        parts = self.write_parts(v.sql, v.insert_rows)
        if not parts:
            return False
        self.flush_server()
        await self.settled()
        out = await self.run_parts(parts, lambda: self.run_query(sql, raw))
        self.cw.write(out + msg(b"Z", b"I"))
        return True

    async def execute_parts(self, body, raw, alone=False):
        """An Execute of a write of several replicasets: its Bind and Execute run once per part, each
        with a Sync of its own (True); False for any other Execute. The client's batch is never run
        again as a whole afterwards (its parts are committed). With alone, any write runs so, as
        one part when it is not split."""
        portal, _ = read_cstr(body, 0)
        info = self.portals.get(portal)
        if info is None or info["kind"] != "query" or info["reads"] or self.batch_rec is None:
            return False
        limit = self.motion_limit(info["options"])
        if info["insert_rows"] is not None and limit and info["insert_rows"] > limit:
            return False
        bind = [(b, r) for t, b, r in self.batch_rec["msgs"] if t == b"B" and read_cstr(b, 0)[0] == portal]
        parts = self.write_parts(info["sql"], info["insert_rows"]) if bind else None
        if not parts and alone and bind:
            parts = [None]
        if not parts:
            return False
        # Each part prepares the statement afresh as the front's own: a statement without parameters
        # keeps the generic plan of its first Bind, folded for another part (sql/part.sql)
        try:
            text = dialect.validate(info["sql"], self.front.settings.version).sql
        except dialect.Reject:
            return False
        self.batch_rec["ok"] = False
        self.send_server(msg(b"H"))
        self.flush_server()
        await self.settled()
        if self.failed_batch == self.batch_no:
            return True  # an earlier message of the batch failed: the server would skip this one
        self.push(Entry("swallow", ends=(b"Z",)))  # ends the batch so far (Picodata: autocommit)
        self.send_server(msg(b"S"))
        types = info["types"] or []
        parse = msg(b"P", cstr(PART_STMT) + cstr(text) + struct.pack("!H", len(types)) +
                    b"".join(struct.pack("!I", t) for t in types))
        pos = read_cstr(bind[-1][0], read_cstr(bind[-1][0], 0)[1])[1]
        bbody = cstr(portal) + cstr(PART_STMT) + bind[-1][0][pos:]

        def send():
            for ends, m in ((b"3", msg(b"C", b"S" + cstr(PART_STMT))), (b"1", parse)):
                self.push(Entry("swallow", ends=(ends,)))
                self.send_server(m)
            rec = {"kind": "extended", "msgs": [(b"B", bbody, msg(b"B", bbody)), (b"E", body, raw)],
                   "ok": True, "tries": 0, "t0": time.monotonic()}
            saved, self.batch_rec = self.batch_rec, rec
            self.inject_bind_params(bbody)
            self.push(Entry("swallow", ends=(b"2",)))
            self.send_server(msg(b"B", bbody))
            self.run_execute(body, raw)
            self.batch_rec = saved
            self.push(Entry("sync", ends=(b"Z",)))
            self.send_server(msg(b"S"))
        self.stmts[PART_STMT] = info  # inject_bind_params looks the statement up
        try:
            out = await self.run_parts(parts, send)
        finally:
            self.stmts.pop(PART_STMT, None)
        self.push(Entry("swallow", ends=(b"3",)))
        self.send_server(msg(b"C", b"S" + cstr(PART_STMT)))
        self.hold = None
        if any(t == b"E" for t, _ in emu_parts.messages(out)):
            self.failed_batch = self.batch_no  # the rest of the client's batch is skipped
        elif self.failed_batch == self.batch_no:
            self.failed_batch = -1  # a part's error was followed by its successful run again
        self.cw.write(out)
        return True


def version_calls(toks):
    """The (start, end) token indexes of every call version() in a statement's tokens."""
    out = []
    for i in range(len(toks) - 2):
        if (toks[i].kind == "ident" and toks[i].low == "version" and toks[i + 1].text == "("
                and toks[i + 2].text == ")" and (i == 0 or toks[i - 1].text != ".")):
            out.append((i, i + 2))
    return out


def version_call_text(sql, toks):
    """sql with every version() written _picoemu.picodata_version(), which answers what the emulated
    build's version() does (emu_caps.version_function_text; PostgreSQL's own version() would name
    PostgreSQL)."""
    out, last = [], 0
    for a, b in version_calls(toks):
        out.append(sql[last:toks[a].pos] + "_picoemu.picodata_version()")
        last = toks[b].end
    return "".join(out) + sql[last:]


def dnf_text(sql, r):
    """The text sent to the server for a statement whose WHERE clause expands into more OR-of-AND
    chains than Picodata expands (513: MAX_DNF_CHAINS = 512 is checked after a pop, see
    emu_caps.dnf_most_chains; capability dnf_chain_limit: 26.1.6, 26.2.1-rc1 and later): Picodata
    then keeps the expression as written (get_dnf_chains returns None, sql-ir/src/ir/transformation/
    dnf.rs) and its bucket discovery finds no key: every replicaset is asked, even for a statement its
    key would have routed. The emulator does the same: its bucket_id terms are written (bucket_id + 0),
    which the views do not prune by (emu_route.unpruned_text), and a comment at the end stops routing
    by the sharding key (key_route.sql routes no statement with a comment). Versions without the cap
    expand every chain and route as usual."""
    text = re.sub(r"[;\s]+$", "", emu_route.unpruned_text(sql, r["toks"]))
    return text + " /* picoemu: %d OR-of-AND chains, over Picodata's DNF limit: not routed */" % r["chains"]


def bind_params(body, pos):
    """The parameters of a Bind (from its format codes on): (index, raw bytes or None, format code)."""
    nf = int.from_bytes(body[pos:pos + 2], "big")
    fmts = struct.unpack("!%dH" % nf, body[pos + 2:pos + 2 + 2 * nf]) if nf else ()
    pos += 2 + 2 * nf
    np = int.from_bytes(body[pos:pos + 2], "big")
    pos += 2
    for i in range(np):
        ln = struct.unpack("!i", body[pos:pos + 4])[0]
        pos += 4
        val = None
        if ln >= 0:
            val = body[pos:pos + ln]
            pos += ln
        yield i, val, fmts[0] if nf == 1 else (fmts[i] if nf > 1 else 0)


def bind_values(body, pos):
    """The parameter values of a Bind (from its format codes on) as text, None for NULL or binary."""
    return [val.decode("utf-8", "replace") if val is not None and fmt == 0 else None
            for _, val, fmt in bind_params(body, pos)]


def check_bind(body, pos, types):
    """Picodata's parameter rules (dialect, section 3). Returns (sqlstate, message) or None. The
    texts are Picodata's: every decoding error of a parameter is prefixed "failed to bind parameter
    $N: " (PgError::cannot_bind_param, src/pgproto/error.rs:183@25.5.10, :188@26.1.6 and 26.2.1-rc2,
    called by decode_parameters, src/pgproto/backend.rs:59@25.5.10); a json value is
    PgError::FeatureNotSupported, "feature is not supported: cannot represent json in sbroad"
    (src/pgproto/value.rs:288-289@25.5.10, :321-323@26.2.1-rc2; error.rs:145@25.5.10); a text that
    is no timestamp, DecodingError::bad_lit_of_type, "decoding error: '<text>' is not a valid
    timestamptz" (value.rs:428@25.5.10, :530@26.2.1-rc2; error.rs:60@25.5.10)."""
    for i, val, fmt in bind_params(body, pos):
        if val is None or i >= len(types):
            continue
        t = types[i]
        if t in (JSON_OID, JSONB_OID):
            return ("0A000", "failed to bind parameter $%d: feature is not supported: cannot represent json in "
                    "sbroad" % (i + 1))
        if t == TIMESTAMPTZ_OID and fmt == 0:
            raw = val.decode("utf-8", "replace")
            if not ISO_TS.match(raw.strip()):
                return ("22P02", "failed to bind parameter $%d: decoding error: '%s' is not a valid timestamptz"
                        % (i + 1, raw))
    return None


def parse_startup_options(text, version):
    """Picodata's own syntax, as strictly as Picodata reads it (ClientParams::new in
    src/pgproto/client/startup.rs, the same at 25.5.10, 26.1.6, 26.2.1-rc1 and 26.2.1-rc2, which add
    names): `options` split at every comma, each item at its first
    '=' (name, then value up to the next '='); names matched exactly (no trimming, no case folding),
    a missing '=' is an error; integer values as Rust parses an i64 (digits with an optional sign, no
    spaces), a negative one refused; pico_stmt_invalidation exactly true or false; read_preference
    in any case; forward exactly on, off or ro_to_rw. Unknown names only log a warning. None (no
    options parameter) is no option; an empty one fails as Picodata's does ("option without value").
    Errors are raised as ValueError with Picodata's text."""
    out = {}
    if text is None:
        return out
    for item in text.split(","):
        parts = item.split("=")
        name = parts[0]
        if len(parts) < 2:
            raise ValueError("option without value")
        value = parts[1]
        if name in dialect.OPTION_INT:
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
        elif name == "read_preference" and dialect.has_read_preference(version):
            if value.lower() not in dialect.READ_PREFERENCES:
                raise ValueError("unknown read_preference value: '%s', expected one of leader, replica, any"
                                 % value)
            out[name] = value.lower()
        elif name == emu_stmts.OPTION and emu_stmts.has_stmt_invalidation(version):
            out[name] = emu_stmts.parse_flag(value)
        elif name == "forward" and dialect.has_forward(version):
            if value not in dialect.FORWARD_VALUES:
                raise ValueError("unknown forward value: '%s', expected one of on, off, ro_to_rw" % value)
            out[name] = value
        else:
            log("WARNING: unknown option: '%s' (%s ignored, Picodata %s)" % (name, item, version))
    return out


class Front:
    def __init__(self, state_dir, instance):
        self.dir = state_dir
        self.settings = Settings(os.path.join(state_dir, "state.json"), instance)
        inst = self.settings.inst()
        self.port = inst.get("pgproto_port", inst["port"])
        self.private_port = inst["port"]
        self.audit = Audit(os.path.join(state_dir, "audit.jsonl"))
        self.type_cache = {}
        self.sessions = set()  # open sessions (their statements count against pg_statement_max)
        self.verdicts = {}  # (statement text, version) -> Verdict or Reject (statements repeat)
        self.retried = 0  # statements run again (RETRY_STATES)
        self.move_statements = 0  # writes that met a bucket in flight (MOVE_STATES)
        self.move_reruns = 0  # their runs again
        self.routes = {}  # (statement text, version) -> what emu_route reads in it (see Session.route)
        self.forward_refused = 0  # statements refused under forward (Session.refuse_forward)
        self.leader_refused = 0  # reads refused for not being leader reads (Session.refuse_non_leader_read)
        self.stalled = 0  # statements that waited for a stopped master (Session.stall)
        self.dnf_over = 0  # statements run over the DNF chain limit, not routed (dnf_text)

    async def handle(self, reader, writer):
        sock = writer.get_extra_info("socket")
        if sock is not None:
            import socket
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await Session(self, reader, writer).run()

    async def serve(self, ready_file):
        server = await asyncio.start_server(self.handle, HOST, self.port, reuse_address=True, reuse_port=True,
                                            limit=1 << 20)
        log("front of %s listening on %s:%d -> private %s:%d (Picodata %s)" % (
            self.settings.instance, HOST, self.port, HOST, self.private_port, self.settings.version))
        if ready_file:
            with open(ready_file, "w") as f:
                f.write("%d\n" % os.getpid())
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for s in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(s, stop.set)
        await stop.wait()
        server.close()
        log("front stopped")


def main(argv):
    global LOG
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--instance", required=True)
    p.add_argument("--pid-file")
    a = p.parse_args(argv)
    LOG = open(os.path.join(a.dir, a.instance, "front.log"), "a")
    front = Front(a.dir, a.instance)
    # PICOEMU_FRONT_WORKERS > 1: worker processes share the port (SO_REUSEPORT). One process spends
    # about 55 us of CPU per statement round trip; on a 2-core machine a second one gained nothing.
    children = []
    for _ in range(max(1, int(os.environ.get("PICOEMU_FRONT_WORKERS", "1"))) - 1):
        pid = os.fork()
        if pid == 0:
            try:
                import ctypes
                ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: die with the parent
            except (OSError, AttributeError):
                pass
            try:
                asyncio.run(front.serve(None))
            finally:
                os._exit(0)
        children.append(pid)
    try:
        asyncio.run(front.serve(a.pid_file))
    except OSError as exc:
        log("cannot listen on %s:%d: %s" % (HOST, front.port, exc))
        return 1
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
