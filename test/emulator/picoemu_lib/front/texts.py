"""Picodata's answers where the front answers for it: the texts and SQLSTATEs of a storage error
(picodata_error), of the row and opcode limits, of a write refused by a demoted master, and of a
parameter Picodata cannot decode at Bind (check_bind). Pure: unit-tested in tests/test_front_texts.py."""

import re
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .. import caps as emu_caps
from ..state import Table
from .wire import bind_params, error_field, error_msg

TIMESTAMPTZ_OID, JSON_OID, JSONB_OID = 1184, 114, 3802
ARRAY_OIDS = frozenset([1000, 1005, 1007, 1016, 1021, 1022, 1009, 1015, 1231, 2951, 1115, 1185, 199,
                        3807, 1014])
# ISO-like timestamptz text: YYYY-MM-DD[ T]HH:MM:SS[.ffffff][±HH[:MM]|Z] (dialect, section 3)
ISO_TS = re.compile(r"^\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?)?\s*([+-]\d{2}(:?\d{2})?|Z|UTC)?$")


def read_only_refusal(m: bytes, version: str) -> bytes:
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
# The storages' own forward=off check (sql/strict.sql, PE001) stands behind the front's (route/), for
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


def _tarantool_type(pg_type: str) -> str:
    t = pg_type.lower()
    if t.startswith("numeric"):
        return "decimal"
    if t.startswith("varchar") or t == "text":
        return "string"
    return _TARANTOOL_TYPES.get(t, "any")


def storage_text(code: bytes, text: str, detail: str, tables: Sequence[Table] = ()) -> Optional[str]:
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
            cols: List[Dict[str, Any]] = next((t.get("columns", []) for t in tables if t.get("name") == rel), [])
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


def picodata_error(m: bytes, bind: bool = False, tables: Sequence[Table] = ()) -> bytes:
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
    missing = _MISSING_TABLE.match(text)
    if code == STRICT_STATE:
        text = STRICT_TEXT
    elif code == b"42P01" and missing is not None:
        text = 'sbroad: table with name "%s" not found' % missing.group(1)
    elif not (bind and code in BIND_STATES):
        detail = error_field(m, b"D").decode("utf-8", "replace")
        picodata = storage_text(code, text, detail, tables)
        if picodata:  # every SQL-path error reaches the client as Error::Sbroad (README's table)
            text = picodata if picodata.startswith("sbroad: ") else "sbroad: " + picodata
    if not (code in KEPT_STATES or (bind and code in BIND_STATES)):
        code = b"XX000"
    return error_msg(code.decode(), text)


# Where Picodata tags an execution or VDBE error with the query of EXPLAIN (RAW) that raised it:
# SbroadError::TaggedExecutionError, "Query {K} from EXPLAIN (RAW): {err}" (sql-ir/src/errors.rs:422
# @26.2.1-rc1), set in materialize_subtree and dispatch (sql-executor/src/executor.rs:354 and :428
# @26.2.1-rc1; crates/... at 26.2.1-rc2); absent at 26.1.6. Picodata's tests test/int/sql/options.sql
# @26.2.1-rc1 and @26.2.1-rc2 show it on both row limits and the opcode limit.
TAGGED_FROM = "26.2.1-rc1"


def row_limit_text(limit: int, n: int, version: str, values: bool = False) -> str:
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


def vdbe_limit_text(limit: int, version: str) -> str:
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


def _tagged(version: str) -> bool:
    return emu_caps.version_at_least(version, TAGGED_FROM)


def check_bind(body: bytes, pos: int, types: Sequence[int]) -> Optional[Tuple[str, str]]:
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
