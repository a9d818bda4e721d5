"""Picodata's SQL grammar as the front's rules need it: what each version parses (from the
capability table and the version), keywords, operators, cast types, functions, OPTION names and
statement kinds, each naming the fact it comes from (the facts document "Picodata's SQL dialect and
limits", sections 1-3, and Picodata's grammar file query.pest, which that document cites)."""

from typing import FrozenSet, Optional, Tuple

from .. import caps as emu_caps

# ---- versions ------------------------------------------------------------------------------------
# A version is written as Picodata reports it (emu_caps.parse_version); the emulated builds are
# emu_caps.BUILDS. What differs between versions comes from the capability table (emu_caps.has).
DEFAULT_VERSION = emu_caps.DEFAULT_BUILD
# ArrayLiteral and `array` among the keywords: sql-frontend/src/frontend/sql/ast/query.pest:482 and
# :419@26.2.1-rc1 (crates/sql-frontend/... at 26.2.1-rc2); sql-planner/src/frontend/sql/query.pest@26.1.6
# has arrays only as column types (:535-542).
ARRAYS_FROM = "26.2.1-rc1"


# EXPLAIN's parenthesised options. 25.5.x: `EXPLAIN (RAW [, FMT])` only (ExplainQueryPlan,
# sql-planner/src/frontend/sql/query.pest:273-277@25.5.1 and @25.5.10). From 26.1.1: a list of facets in
# any order, RAW and FMT (ExplainFacet, ExplainQueryPlan, query.pest:295-301@26.1.1 and @26.1.6). From
# 26.2.1-rc1 also BUCKETS, LOGICAL, FORWARD and CONTEXT (sql-frontend/src/frontend/sql/ast/
# query.pest:302-312@26.2.1-rc1, crates/sql-frontend/...:303-313@26.2.1-rc2). Explain is a compound-atomic
# rule (`${ ^"explain" ~ (WO ~ ExplainQueryPlan)? ~ W ~ (Query | AnonymousBlock) }`): the statement must
# follow the closing parenthesis after a blank.
EXPLAIN_FACETS_FROM = "26.1.1"
EXPLAIN_MORE_FACETS_FROM = "26.2.1-rc1"


def version_key(version: Optional[str]) -> str:
    """The version text the rules are looked up for (the default build when None)."""
    v = str(version or DEFAULT_VERSION).strip()
    if emu_caps.parse_version(v) is None:
        raise ValueError("unknown Picodata version %r (emulated builds: %s)" % (version, ", ".join(emu_caps.BUILDS)))
    return v


def has_read_preference(v: str) -> bool:
    """OPTION/startup read_preference: a parse error on 25.5.x, fine from 26.1 (dialect, section 1)."""
    return emu_caps.has("read_preference", v)


def has_forward(v: str) -> bool:
    """forward: 26.2.1-rc1 and later (capability forward; dialect, section 4)."""
    return emu_caps.has("forward", v)


def has_arrays(v: str) -> bool:
    """= ANY(ARRAY[...]) and typed array parameters: only from 26.2.1-rc1 (dialect, section 1;
    ARRAYS_FROM)."""
    return emu_caps.version_at_least(version_key(v), ARRAYS_FROM)


def explain_facets(v: str) -> Optional[Tuple[str, ...]]:
    """The options EXPLAIN (...) takes at version v, any number in any order; None on 25.5.x, where
    only (raw) and (raw, fmt) parse."""
    p = version_key(v)
    if emu_caps.version_at_least(p, EXPLAIN_MORE_FACETS_FROM):
        return ("raw", "fmt", "buckets", "logical", "forward", "context")
    if emu_caps.version_at_least(p, EXPLAIN_FACETS_FROM):
        return ("raw", "fmt")
    return None


# ---- keywords (dialect, section 1: the 25.5.1 list; the master grammar adds `array`) ----------------
KEYWORDS_25_5 = frozenset("""all and asc as begin between by case cast current_date current_time
current_timestamp desc distinct else end except exists false filter from group having inner into in is
join left limit localtimestamp localtime not null on option order or outer over primary select set
similar substring table then to true union using values when where with window""".split())


def keywords(v: str) -> FrozenSet[str]:
    return KEYWORDS_25_5 | ({"array"} if has_arrays(v) else frozenset())


# Keywords that are values or closers: a comparison after them is not an identifier slip.
VALUE_KEYWORDS = frozenset("true false null current_date current_time current_timestamp localtime "
                           "localtimestamp end asc desc all".split())

# Operators of the grammar (ArithInfixOp, CmpInfixOp, ConcatInfixOp, CastPostfix).
OPERATORS = frozenset(["=", "<>", "!=", "<", "<=", ">", ">=", "+", "-", "*", "/", "%", "||", "::"])

# Cast targets of the grammar's Type rule (boolean, datetime, decimal, double, int, json, string, text,
# varchar, uuid); `double precision`, `timestamptz`, `float8` ... are not in it.
CAST_TYPES = frozenset("bool boolean datetime decimal number numeric double integer bigint smallint int "
                       "int2 int4 int8 json string text varchar uuid".split())

# Functions Picodata knows (dialect, section 1: aggregates of 25.5.1 and the scalar functions listed
# there; `_pico_bucket` from the facts, section 2). Unknown functions fail in Picodata's planner
# (`NotFound(SQLFunction)`, src/sql/router.rs:739-745@25.5.10): the scalar ones are those of its
# registry (sql-planner/src/executor/engine.rs:92-146@25.5.10, sql-executor/src/executor/engine.rs
# @26.3.0), with no `round` or `length`; `trim` and `substring` are rules of the grammar.
FUNCTIONS = frozenset("count sum avg min max total group_concat string_agg abs lower upper substr "
                      "substring coalesce trim to_char to_date version _pico_bucket".split())

OPTION_INT = ("sql_motion_row_max", "sql_vdbe_opcode_max")
READ_PREFERENCES = ("leader", "replica", "any")
FORWARD_VALUES = ("on", "off", "ro_to_rw")

# Statement kinds by first word. Picodata's grammar: Query (SELECT/WITH/VALUES/INSERT/UPDATE/DELETE),
# EXPLAIN, TCL (BEGIN/COMMIT/ROLLBACK/END), SET (a no-op), DEALLOCATE, TRUNCATE TABLE, empty. Other
# DDL, ACL, CALL and plugins parse in Picodata but are not emulated (the emulator creates tables with
# `picoemu create-table`).
QUERY_WORDS = frozenset(["select", "with", "values", "insert", "update", "delete"])
NOT_EMULATED = frozenset(["create", "drop", "alter", "grant", "revoke", "call", "backup", "audit"])
# What the front sends for a TRUNCATE TABLE the grammar accepts (sql/truncate.sql), with the table's
# name in the session setting picoemu.truncate (the verdict's option "truncate").
TRUNCATE_GATE = "TRUNCATE _picoemu.truncate_gate"
TCL_TAGS = {"begin": "BEGIN", "commit": "COMMIT", "rollback": "ROLLBACK", "end": "COMMIT"}


# A statement Picodata's grammar refuses fails in PreparedStatement::parse with SbroadError::
# ParsingError(Entity::Rule, ...), "rule parsing error: ..." (sql-planner/src/errors.rs:378@25.5.10),
# which pgproto turns into traft's Error::Sbroad (src/pgproto/error.rs:203-208@25.5.10), written
# "sbroad: {0}" (src/traft/error.rs:139@25.5.10): the same at 26.1.6, 26.2.1-rc1 and 26.2.1-rc2.
PARSE_ERROR_PREFIX = "sbroad: rule parsing error: "
