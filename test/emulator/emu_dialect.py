"""Picodata's SQL dialect, as the emulator's front judges it: a tokenizer plus a table of rules, each
naming the fact it comes from (the facts document "Picodata's SQL dialect and limits", sections 1-3,
and Picodata's grammar file query.pest, which that document cites).

validate(sql, version) -> Verdict. A statement that a rule rejects gets, from the front, SQLSTATE XX000
and a message beginning `sbroad: rule parsing error`, as Picodata answers a statement its grammar cannot
parse (PARSE_ERROR_PREFIX).
This module is pure (no I/O): emu_front.py calls it, test_emu_dialect.py tests it.
"""

import re

import emu_caps

# ---- versions ------------------------------------------------------------------------------------
# A version is written as Picodata reports it (emu_caps.parse_version); the emulated builds are
# emu_caps.BUILDS. What differs between versions comes from the capability table (emu_caps.has).
DEFAULT_VERSION = emu_caps.DEFAULT_BUILD
# ArrayLiteral and `array` among the keywords: sql-frontend/src/frontend/sql/ast/query.pest:482 and
# :419@26.2.1-rc1 (crates/sql-frontend/... at 26.2.1-rc2); sql-planner/src/frontend/sql/query.pest@26.1.6
# has arrays only as column types (:535-542).
ARRAYS_FROM = emu_caps.parse_version("26.2.1-rc1")


# EXPLAIN's parenthesised options. 25.5.x: `EXPLAIN (RAW [, FMT])` only (ExplainQueryPlan,
# sql-planner/src/frontend/sql/query.pest:273-277@25.5.1 and @25.5.10). From 26.1.1: a list of facets in
# any order, RAW and FMT (ExplainFacet, ExplainQueryPlan, query.pest:295-301@26.1.1 and @26.1.6). From
# 26.2.1-rc1 also BUCKETS, LOGICAL, FORWARD and CONTEXT (sql-frontend/src/frontend/sql/ast/
# query.pest:302-312@26.2.1-rc1, crates/sql-frontend/...:303-313@26.2.1-rc2). Explain is a compound-atomic
# rule (`${ ^"explain" ~ (WO ~ ExplainQueryPlan)? ~ W ~ (Query | AnonymousBlock) }`): the statement must
# follow the closing parenthesis after a blank.
EXPLAIN_FACETS_FROM = emu_caps.parse_version("26.1.1")
EXPLAIN_MORE_FACETS_FROM = emu_caps.parse_version("26.2.1-rc1")


def version_key(version):
    """The version text the rules are looked up for (the default build when None)."""
    v = str(version or DEFAULT_VERSION).strip()
    if emu_caps.parse_version(v) is None:
        raise ValueError("unknown Picodata version %r (emulated builds: %s)" % (version, ", ".join(emu_caps.BUILDS)))
    return v


def has_read_preference(v):
    """OPTION/startup read_preference: a parse error on 25.5.x, fine from 26.1 (dialect, section 1)."""
    return emu_caps.has("read_preference", v)


def has_forward(v):
    """forward: 26.2.1-rc1 and later (capability forward; dialect, section 4)."""
    return emu_caps.has("forward", v)


def has_arrays(v):
    """= ANY(ARRAY[...]) and typed array parameters: only from 26.2.1-rc1 (dialect, section 1;
    ARRAYS_FROM)."""
    return emu_caps.parse_version(version_key(v)) >= ARRAYS_FROM


def explain_facets(v):
    """The options EXPLAIN (...) takes at version v, any number in any order; None on 25.5.x, where
    only (raw) and (raw, fmt) parse."""
    p = emu_caps.parse_version(version_key(v))
    if p >= EXPLAIN_MORE_FACETS_FROM:
        return ("raw", "fmt", "buckets", "logical", "forward", "context")
    if p >= EXPLAIN_FACETS_FROM:
        return ("raw", "fmt")
    return None


# ---- keywords (dialect, section 1: the 25.5.1 list; the master grammar adds `array`) ----------------
KEYWORDS_25_5 = frozenset("""all and asc as begin between by case cast current_date current_time
current_timestamp desc distinct else end except exists false filter from group having inner into in is
join left limit localtimestamp localtime not null on option order or outer over primary select set
similar substring table then to true union using values when where with window""".split())


def keywords(v):
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


class Token:
    __slots__ = ("kind", "text", "low", "pos", "end", "space_before")

    def __init__(self, kind, text, pos, end, space_before):
        self.kind, self.text, self.pos, self.end, self.space_before = kind, text, pos, end, space_before
        self.low = text.lower()

    def __repr__(self):
        return "%s:%s" % (self.kind, self.text)


class Reject(Exception):
    def __init__(self, rule, detail):
        super().__init__(detail)
        self.rule, self.detail = rule, detail


_ident_re = re.compile(r"[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*")
_num_re = re.compile(r"\d+(\.\d*)?([eE][+-]?\d+)?")
_op_chars = set("+-*/<>=~!@#%^&|`?")


def _quoted_end(sql, start):
    """The index just past the string literal ('...') or quoted identifier ("...") opening at start.
    A doubled quote escapes a quote in a string literal; Picodata does not unescape one in a quoted
    identifier, so there it is refused."""
    q = sql[start]
    name = "string literal" if q == "'" else "quoted identifier"
    j = start + 1
    while True:
        k = sql.find(q, j)
        if k < 0:
            raise Reject("string" if q == "'" else "identifier", "unterminated " + name)
        if not sql.startswith(q + q, k):
            return k + 1
        if q == '"':
            raise Reject("identifier", "a doubled quote inside a quoted identifier (%s) is not "
                         "unescaped by Picodata: the name would differ" % sql[start:k + 2])
        j = k + 2


def tokenize(sql):
    toks = []
    i, n = 0, len(sql)
    space = True
    while i < n:
        c = sql[i]
        if c in " \t\r\n":
            i += 1
            space = True
            continue
        start = i
        if c == "-" and sql.startswith("--", i):
            raise Reject("comment", "comments (`--`) are not in Picodata's grammar (WHITESPACE has no "
                         "COMMENT rule)")
        if c == "/" and sql.startswith("/*", i):
            raise Reject("comment", "comments (`/* */`) are not in Picodata's grammar")
        if c in "'\"":
            i = _quoted_end(sql, start)
            toks.append(Token("str" if c == "'" else "qident", sql[start:i], start, i, space))
        elif c == "$":
            m = re.match(r"\$(\d+)", sql[i:])
            if not m:
                raise Reject("string", "dollar quoting is not in Picodata's grammar")
            i += m.end()
            toks.append(Token("param", sql[start:i], start, i, space))
        elif c.isdigit():
            m = _num_re.match(sql, i)
            i = m.end()
            toks.append(Token("num", sql[start:i], start, i, space))
        elif c == ":":
            if sql.startswith("::", i):
                i += 2
                toks.append(Token("op", "::", start, i, space))
            else:
                raise Reject("operator", "`:` is not an operator of Picodata's grammar")
        elif c in "(),;.[]":
            i += 1
            toks.append(Token("punct", c, start, i, space))
        elif c in _op_chars:
            j = i
            while j < n and sql[j] in _op_chars and not sql.startswith("--", j) and not sql.startswith("/*", j):
                j += 1
            op = sql[i:j]
            if len(op) > 1 and op[-1] in "+-" and not any(ch in op for ch in "~!@#%^&|`?"):
                op = op.rstrip("+-") or op[0]
            i += len(op)
            toks.append(Token("op", op, start, i, space))
        else:
            m = _ident_re.match(sql, i)
            if not m:
                raise Reject("character", "unexpected character %r" % c)
            i = m.end()
            if i < n and sql[i] == "'":
                raise Reject("string", "prefixed string literals (%s'...') are not in Picodata's grammar"
                             % m.group(0))
            toks.append(Token("ident", m.group(0), start, i, space))
        space = False
    return toks


def _is_operand_end(t):
    """True when t ends an operand, so a following +/- is a binary operator."""
    if t is None:
        return False
    if t.kind in ("qident", "num", "str", "param"):
        return True
    if t.kind == "punct":
        return t.text in (")", "]")
    if t.kind == "ident":
        return t.low not in KEYWORDS_25_5 or t.low in VALUE_KEYWORDS
    return False


def merge_signs(toks):
    """A sign exists only inside a numeric literal (`-5`); any other prefix +/- is refused (rule
    `unary_minus`, dialect section 1 row 2; grammar: Integer = ("+" | "-")? ~ ASCII_DIGIT+)."""
    out = []
    for idx, t in enumerate(toks):
        prev = out[-1] if out else None
        if t.kind == "op" and t.text in ("-", "+") and not _is_operand_end(prev):
            nxt = toks[idx + 1] if idx + 1 < len(toks) else None
            if nxt is not None and nxt.kind == "num" and not nxt.space_before:
                nxt.text = t.text + nxt.text
                nxt.low = nxt.text
                nxt.pos = t.pos
                nxt.space_before = t.space_before
                continue
            raise Reject("unary_minus", "prefix %s is not in Picodata's grammar (a sign exists only inside "
                         "a numeric literal such as -5): write (0 - x)" % t.text)
        out.append(t)
    return out


class Verdict:
    """kind: query | explain | tcl | set | deallocate | truncate | empty. sql: the text to send to PostgreSQL
    (OPTION stripped). options: {name: value} of the trailing OPTION clause. tag: the command tag the
    front answers for tcl/set. insert_rows: number of VALUES rows of an INSERT ... VALUES. params: the
    highest $n."""

    def __init__(self, kind, sql, options=None, tag=None, insert_rows=None, params=0, reads=False):
        self.kind, self.sql, self.options, self.tag = kind, sql, options or {}, tag
        self.insert_rows, self.params, self.reads = insert_rows, params, reads


def _split_statements(toks):
    """Picodata's Command is one statement; EOF = (";" ~ WO)* ~ EOI: trailing semicolons only."""
    for i, t in enumerate(toks):
        if t.kind == "punct" and t.text == ";":
            rest = toks[i + 1:]
            if any(not (r.kind == "punct" and r.text == ";") for r in rest):
                raise Reject("multiple_statements", "one statement per query: Picodata's grammar "
                             "accepts only trailing semicolons")
            return toks[:i]
    return toks


def _depths(toks):
    d, out = 0, []
    for t in toks:
        if t.kind == "punct" and t.text in ")]":
            d -= 1
        out.append(d)
        if t.kind == "punct" and t.text in "([":
            d += 1
    if d != 0:
        raise Reject("parentheses", "unbalanced parentheses")
    return out


def _strip_option(sql, toks, depth, v):
    """Trailing OPTION (name = value, ...): the very last thing of the statement (grammar: Query ~
    DqlOption?). Returns (tokens without it, options dict, end offset of the statement text)."""
    for i, t in enumerate(toks):
        if t.kind == "ident" and t.low == "option" and depth[i] == 0 and i + 1 < len(toks) \
                and toks[i + 1].text == "(":
            break
    else:
        return toks, {}, None
    close = next((j for j in range(i + 2, len(toks)) if toks[j].text == ")" and depth[j] == 0), None)
    if close is None or close != len(toks) - 1:
        raise Reject("option_last", "OPTION (...) must be the very last clause of the statement")
    body = toks[i + 2:close]
    opts = {}
    k = 0
    while k < len(body):
        if k + 2 >= len(body) or body[k].kind != "ident" or body[k + 1].text != "=":
            raise Reject("option_syntax", "OPTION expects name = value pairs")
        name, val = body[k].low, body[k + 2]
        if name in OPTION_INT:
            if val.kind == "param":
                raise Reject("option_param", "OPTION %s = $n: parameters in OPTION are not emulated "
                             "(write the number)" % name)
            if val.kind != "num" or not val.text.isdigit():
                raise Reject("option_value", "OPTION %s expects an unsigned integer" % name)
            opts[name] = int(val.text)
        elif name == "read_preference":
            if not has_read_preference(v):
                raise Reject("option_name", "OPTION (read_preference = ...) is a parse error on "
                             "Picodata 25.5.x (use the startup option)")
            if val.low not in READ_PREFERENCES:
                raise Reject("option_value", "read_preference expects leader, replica or any")
            opts[name] = val.low
        elif name == "forward":
            if not has_forward(v):
                raise Reject("option_name", "OPTION (forward = ...) exists from Picodata 26.2.1-rc1 only")
            if val.low not in FORWARD_VALUES:
                raise Reject("option_value", "forward expects on, off or ro_to_rw")
            opts[name] = val.low
        else:
            raise Reject("option_name", "unknown OPTION %s (known: %s)" % (
                name, ", ".join(option_names(v))))
        k += 3
        if k < len(body):
            if body[k].text != ",":
                raise Reject("option_syntax", "OPTION parameters are separated by commas")
            k += 1
    return toks[:i], opts, t.pos


def option_names(v):
    names = list(OPTION_INT)
    if has_read_preference(v):
        names.append("read_preference")
    if has_forward(v):
        names.append("forward")
    return names


# ---- the rule table --------------------------------------------------------------------------------
# Each rule: (name, source, check(toks, depth, v, kw)). A check raises Reject. Sources: "D1.n, line L"
# = the document "Picodata's SQL dialect and limits", section 1, table row n, at line L of that
# document; "D3"/"D4" its sections 3 and 4; "G:<rule>" = the rule of Picodata's grammar query.pest.

def _prev(toks, i):
    return toks[i - 1] if i > 0 else None


def _next(toks, i):
    return toks[i + 1] if i + 1 < len(toks) else None


def r_not_like(toks, depth, v, kw):
    for i, t in enumerate(toks):
        if t.kind == "ident" and t.low == "not":
            n = _next(toks, i)
            if n is not None and n.kind == "ident" and n.low in ("like", "ilike", "similar"):
                raise Reject("not_like", "NOT %s: the Like rule has no NOT flag; write NOT (a %s b)"
                             % (n.text.upper(), n.text.upper()))


_POSITIONAL = {
    # keyword -> predicate(prev, next, toks, i) that is True when the word is used as a keyword
    "by": lambda p, n, toks, i: p is not None and p.kind == "ident" and p.low in ("order", "group", "partition"),
    "begin": lambda p, n, toks, i: i == 0,
    "filter": lambda p, n, toks, i: n is not None and n.text == "(" and p is not None and p.text == ")",
    "over": lambda p, n, toks, i: p is not None and p.text == ")",
    "option": lambda p, n, toks, i: n is not None and n.text == "(",
    "substring": lambda p, n, toks, i: n is not None and n.text == "(",
    "values": lambda p, n, toks, i: n is not None and n.text == "(",
    "exists": lambda p, n, toks, i: n is not None and n.text == "(",
    "cast": lambda p, n, toks, i: n is not None and n.text == "(",
    "set": lambda p, n, toks, i: _set_is_keyword(toks, i),
    "array": lambda p, n, toks, i: n is not None and n.text == "[",
}

_AFTER_IDENT = frozenset(["=", "<>", "!=", "<", "<=", ">", ">=", "*", "/", "%", "||", "::", ",", ")", "["])
_CLAUSE_WORDS = frozenset(["from", "where", "as", "order", "group", "having", "limit", "union", "except",
                           "then", "else", "when", "on", "join", "inner", "left", "and", "or", "is", "in",
                           "not", "between", "like", "ilike", "asc", "desc", "option", "set", "values"])


def _set_is_keyword(toks, i):
    if i == 0:
        return True  # SET name = value (a no-op statement)
    first = toks[0].low
    p = toks[i - 1]
    if p.kind == "ident" and p.low == "update":
        return True  # ON CONFLICT DO UPDATE SET
    if first == "update":
        # UPDATE [public.]t [[AS] alias] SET
        j = 1
        if j + 1 < len(toks) and toks[j + 1].text == ".":
            j += 2
        j += 1
        if j < len(toks) and toks[j].low == "as":
            j += 1
        if j == i:
            return True
        return j + 1 == i and (toks[j].kind == "qident" or (toks[j].kind == "ident" and toks[j].low not in KEYWORDS_25_5))
    if first == "alter":
        return True
    return False


def r_keyword_identifier(toks, depth, v, kw):
    for i, t in enumerate(toks):
        if t.kind != "ident" or t.low not in kw:
            continue
        p, n = _prev(toks, i), _next(toks, i)
        bad = False
        if t.low == "on" and p is not None and p.text == "=" and i >= 2 and toks[i - 2].low == "forward":
            continue  # OPTION (forward = on): G:ForwardOn
        if (p is not None and p.text == ".") or (n is not None and n.text == "." and t.low != "public"):
            bad = True
        elif p is not None and p.kind == "ident" and p.low == "as":
            bad = True  # an alias; CAST(x AS <type>): no type name is a keyword
        elif t.low in _POSITIONAL:
            bad = not _POSITIONAL[t.low](p, n, toks, i)
        elif t.low not in VALUE_KEYWORDS and n is not None and (
                (n.kind == "op" and n.text in _AFTER_IDENT) or (n.kind == "punct" and n.text in _AFTER_IDENT)):
            bad = not (n.text == "*" and t.low in ("select", "distinct"))
        if bad:
            raise Reject("keyword_identifier", "%s is a Picodata keyword: as an identifier it must be "
                         "double-quoted (\"%s\")" % (t.text, t.low))


_TABLE_INTRO = frozenset(["from", "join", "into", "update"])


def r_schema(toks, depth, v, kw):
    for i, t in enumerate(toks):
        if t.text != ".":
            continue
        p = _prev(toks, i)
        n = _next(toks, i)
        # three-part names never parse
        if i >= 2 and toks[i - 2].text == "." or (n is not None and _next(toks, i + 1) is not None
                                                   and _next(toks, i + 1).text == "."):
            raise Reject("schema", "a name has at most two parts in Picodata (schema public or "
                         "table.column)")
        pp = _prev(toks, i - 1) if i >= 1 else None
        in_table_slot = pp is not None and pp.kind == "ident" and pp.low in _TABLE_INTRO
        if pp is not None and pp.kind == "ident" and pp.low == "from" and toks[0].low == "delete":
            in_table_slot = True
        if in_table_slot and p is not None and p.low not in ("public", '"public"'):
            raise Reject("schema", "schema %s: only public. (or no schema) parses in Picodata"
                         % p.text)
        if n is not None and _next(toks, i + 1) is not None and _next(toks, i + 1).text == "(":
            raise Reject("schema", "schema-qualified function %s.%s(): not in Picodata's grammar"
                         % (p.text if p else "", n.text))


def r_offset(toks, depth, v, kw):
    for i, t in enumerate(toks):
        n = _next(toks, i)
        if t.kind == "ident" and t.low == "offset" and n is not None and (n.kind in ("num", "param") or n.text == "("):
            raise Reject("offset", "OFFSET is not in Picodata's grammar (LIMIT is): LIMIT n + m and skip "
                         "locally")
        if t.kind == "ident" and t.low == "fetch" and n is not None and n.low in ("first", "next"):
            raise Reject("offset", "FETCH FIRST is not in Picodata's grammar (LIMIT n is)")


def r_collate(toks, depth, v, kw):
    for i, t in enumerate(toks):
        n = _next(toks, i)
        if t.kind == "ident" and t.low == "collate" and i > 0 and n is not None and n.kind in ("ident", "qident"):
            raise Reject("collate", "COLLATE is not in Picodata's grammar")


def r_any_array(toks, depth, v, kw):
    if has_arrays(v):
        return
    for i, t in enumerate(toks):
        n = _next(toks, i)
        p = _prev(toks, i)
        if t.kind == "ident" and t.low in ("any", "all", "some") and n is not None and n.text == "(" \
                and p is not None and p.kind == "op" and p.text not in ("::",):
            raise Reject("any_array", "%s %s(...) exists only from Picodata 26.2.1-rc1: use IN (...) lists"
                         % (p.text, t.text.upper()))
        if t.kind == "ident" and t.low == "array" and n is not None and n.text in ("[", "("):
            raise Reject("any_array", "ARRAY constructors exist only from Picodata 26.2.1-rc1")
        if t.text == "[" and p is not None and (p.kind == "ident" and p.low in CAST_TYPES) \
                and n is not None and n.text == "]":
            raise Reject("any_array", "array types exist only from Picodata 26.2.1-rc1")


def r_operators(toks, depth, v, kw):
    for t in toks:
        if t.kind == "op" and t.text not in OPERATORS:
            raise Reject("operator", "operator %s is not in Picodata's grammar (= <> != < <= > >= + - * "
                         "/ %% || ::)" % t.text)


def _type_at(toks, i):
    t = toks[i] if i < len(toks) else None
    if t is None or t.kind != "ident" or t.low not in CAST_TYPES:
        return None, i
    j = i + 1
    if t.low == "double" and j < len(toks) and toks[j].low == "precision":
        return None, i
    if j < len(toks) and toks[j].text == "(" and t.low in ("decimal", "number", "numeric", "varchar"):
        while j < len(toks) and toks[j].text != ")":
            j += 1
        j += 1
    return t, j


def r_cast_types(toks, depth, v, kw):
    for i, t in enumerate(toks):
        target = None
        if t.kind == "op" and t.text == "::":
            target = i + 1
        elif t.kind == "ident" and t.low == "as" and i >= 2:
            # CAST ( expr AS type ): find whether this AS is inside a cast( ... )
            d = depth[i]
            k = i - 1
            while k >= 0 and not (toks[k].text == "(" and depth[k] == d - 1):
                k -= 1
            if k >= 1 and toks[k - 1].low == "cast":
                target = i + 1
        if target is None:
            continue
        typ, _ = _type_at(toks, target)
        if typ is None:
            name = " ".join(x.text for x in toks[target:target + 2]) if target < len(toks) else "(nothing)"
            raise Reject("cast_type", "cast to %s: not a type of Picodata's grammar (bool, int, bigint, "
                         "double, decimal/numeric, text, varchar, string, uuid, datetime, json)" % name)


def r_limit(toks, depth, v, kw):
    for i, t in enumerate(toks):
        if t.kind == "ident" and t.low == "limit":
            n = _next(toks, i)
            if n is None or not ((n.kind == "num" and n.text.isdigit()) or n.low in ("all", "null")):
                raise Reject("limit", "LIMIT takes an unsigned integer literal (or ALL) in Picodata")


def r_unsupported_clauses(toks, depth, v, kw):
    for i, t in enumerate(toks):
        if t.kind != "ident":
            continue
        n = _next(toks, i)
        low = t.low
        if low == "returning":
            raise Reject("unsupported_clause", "RETURNING is not in Picodata's grammar")
        if low == "for" and n is not None and n.low in ("update", "share", "no", "key"):
            raise Reject("unsupported_clause", "FOR UPDATE/SHARE is not in Picodata's grammar")
        if low == "is" and n is not None and n.low == "distinct":
            raise Reject("unsupported_clause", "IS [NOT] DISTINCT FROM is not in Picodata's grammar")
        if low == "is" and n is not None and n.low == "not" and _next(toks, i + 1) is not None \
                and _next(toks, i + 1).low == "distinct":
            raise Reject("unsupported_clause", "IS [NOT] DISTINCT FROM is not in Picodata's grammar")
        if low in ("right", "full", "cross", "natural", "lateral") and n is not None and \
                n.low in ("join", "outer"):
            raise Reject("unsupported_clause", "%s JOIN: only [INNER] JOIN and LEFT [OUTER] JOIN parse" % t.text.upper())
        if low == "natural" or (low == "cross" and n is not None and n.low == "join"):
            raise Reject("unsupported_clause", "only [INNER] JOIN and LEFT [OUTER] JOIN parse")
        if low == "intersect":
            raise Reject("unsupported_clause", "INTERSECT is not in Picodata's grammar (UNION [ALL], EXCEPT are)")


def r_comma_join(toks, depth, v, kw):
    # Scan = table [alias]; FROM a, b does not parse (joins are JOIN ... ON).
    for i, t in enumerate(toks):
        if t.kind == "ident" and t.low == "from":
            d = depth[i]
            j = i + 1
            while j < len(toks) and depth[j] >= d:
                tj = toks[j]
                if depth[j] == d and tj.kind == "ident" and tj.low in (
                        "where", "group", "having", "order", "limit", "union", "except", "option",
                        "join", "inner", "left", "on", "window"):
                    break
                if depth[j] == d and tj.text == ",":
                    raise Reject("comma_join", "FROM a, b does not parse in Picodata: write a JOIN ... ON")
                j += 1


def r_functions(toks, depth, v, kw):
    for i, t in enumerate(toks):
        n = _next(toks, i)
        if n is None or n.text != "(" or t.kind not in ("ident", "qident"):
            continue
        if t.kind == "ident" and t.low in kw:
            continue
        p = _prev(toks, i)
        if p is not None and p.kind == "ident" and p.low in ("into", "with", "update"):
            continue  # INSERT INTO t (cols), CTE names
        if p is not None and p.text == "," and toks[0].low == "with":
            continue
        if p is not None and (p.text in (".", "::") or (p.low == "as" and t.low in CAST_TYPES)):
            continue  # reported by the schema rule; numeric(p, s) / varchar(n) casts
        name = t.text.strip('"') if t.kind == "qident" else t.low
        if t.kind == "ident" and name in ("any", "all", "some") and has_arrays(v):
            continue
        if name not in FUNCTIONS:
            raise Reject("function", "function %s() is not a Picodata function (known: %s)"
                         % (name, ", ".join(sorted(FUNCTIONS))))


RULES = [
    # name, source, check
    ("not_like", "D1.1, line 15 (NOT LIKE / NOT ILIKE); G:Like has no NotFlag", r_not_like),
    ("unary_minus", "D1.2, line 16 (unary minus); G:Integer", None),  # enforced by merge_signs
    ("keyword_identifier", "D1.3, line 17, and the keyword list, lines 25-29; G:KeywordCoverage", r_keyword_identifier),
    ("schema", "D1.4, line 18 (schema other than public); G:PublicSchema", r_schema),
    ("offset", "D1.5, line 19 (OFFSET); G:SelectStatement has only Limit", r_offset),
    ("collate", "D1.6, line 20 (COLLATE)", r_collate),
    ("show", "D1.7, line 21 (SHOW)", None),  # statement kinds
    ("any_array", "D1.8, line 22 (= ANY(ARRAY[...]), typed arrays before 26.2.1-rc1)", r_any_array),
    ("option_name", "D1.9, line 23 (OPTION read_preference on 25.5.x); D4, lines 81-85; G:DqlOption", None),  # _strip_option
    ("operator", "D1 'Accepted everywhere', lines 31-36 (= <> < <= > >= + - * /); G:ExprInfixOpNoSep", r_operators),
    ("cast_type", "D1, line 33 (CAST(x AS t) and x::t); G:Type", r_cast_types),
    ("limit", "D1, line 34 (LIMIT n); G:Limit = Unsigned | ALL", r_limit),
    ("unsupported_clause", "G:Query (no RETURNING, FOR UPDATE, IS DISTINCT FROM, RIGHT/FULL JOIN, "
     "INTERSECT)", r_unsupported_clauses),
    ("comma_join", "D1, line 34 ([INNER|LEFT [OUTER]] JOIN ... ON); G:SelectMainBody", r_comma_join),
    ("function", "D1, lines 37-39 (aggregates, scalar functions: 'push down only what is listed here')", r_functions),
    ("comment", "G:WHITESPACE (no COMMENT rule)", None),  # tokenizer
    ("multiple_statements", "G:Command = SOI ~ one statement ~ EOF", None),  # _split_statements
    ("statement", "D3, line 66 (autocommit); facts 4 (no DECLARE/FETCH cursors); D1.7; G:Command", None),
    ("truncate", "G:TruncateTable (one table; no CASCADE, RESTART IDENTITY or ONLY)", None),  # truncate_verdict
]


def _statement_kind(toks, v):
    if not toks:
        return "empty", None
    first = toks[0]
    w = first.low if first.kind == "ident" else None
    if w in TCL_TAGS:
        if len(toks) != 1:
            raise Reject("statement", "%s takes nothing after it in Picodata (autocommit only: "
                         "transaction modes do not parse)" % first.text.upper())
        return "tcl", TCL_TAGS[w]
    if w == "set":
        if any(t.text == "." for t in toks):
            raise Reject("statement", "SET takes an unqualified name in Picodata (Identifier)")
        if len(toks) >= 2 and toks[1].kind == "ident" and toks[1].low in ("role", "session", "local"):
            if toks[1].low == "role" or (len(toks) > 2 and toks[2].low == "authorization"):
                raise Reject("statement", "SET ROLE / SESSION AUTHORIZATION are not in Picodata's grammar")
        return "set", "SET"
    if w == "show":
        raise Reject("show", "SHOW is not in Picodata's grammar")
    if w == "explain":
        return "explain", None
    if w == "deallocate":
        return "deallocate", None
    if w == "truncate":
        return "truncate", None
    if w in QUERY_WORDS:
        return "query", None
    if w in NOT_EMULATED:
        raise Reject("statement", "%s: Picodata DDL/ACL/CALL statements are not emulated (use picoemu "
                     "create-table / grant / revoke)" % first.text.upper())
    raise Reject("statement", "%s is not a Picodata statement (PostgreSQL-only: no cursors, COPY, "
                 "SHOW, LISTEN, PREPARE/EXECUTE, DO, VACUUM, START TRANSACTION ...)" % first.text.upper())


def explain_options(toks, v):
    """EXPLAIN's options as Picodata's grammar reads them at version v (EXPLAIN_FACETS_FROM): (their
    names lowercased, the index of the statement's first token). Reject when they do not parse."""
    if len(toks) < 2:
        raise Reject("statement", "EXPLAIN needs a statement")
    if toks[1].text != "(":
        return (), 1
    allowed = explain_facets(v)
    takes = ("(raw) or (raw, fmt)" if allowed is None else
             "a list of %s" % ", ".join(allowed))
    end = next((k for k in range(2, len(toks)) if toks[k].text == ")"), None)
    words = toks[2:end] if end is not None else []
    names = tuple(t.low for t in words[0::2])
    parses = (end is not None and len(words) % 2 == 1 and all(t.text == "," for t in words[1::2])
              and all(t.kind == "ident" for t in words[0::2]))
    if parses:
        parses = names in (("raw",), ("raw", "fmt")) if allowed is None else all(n in allowed for n in names)
    if not parses:
        raise Reject("statement", "EXPLAIN takes %s in Picodata %s (ExplainQueryPlan)" % (takes, v))
    if end + 1 >= len(toks) or not toks[end + 1].space_before:
        raise Reject("statement", "EXPLAIN (...) must be followed by a blank and a statement (Explain)")
    return names, end + 1


def _count_insert_rows(toks, depth):
    if not toks or toks[0].low != "insert":
        return None
    for i, t in enumerate(toks):
        if t.kind == "ident" and t.low == "values" and depth[i] == 0:
            rows = 0
            for j in range(i + 1, len(toks)):
                if depth[j] == 0 and toks[j].text == "(":
                    rows += 1
            return rows
    return None


def _truncate_name(tok, kw):
    """The table of TRUNCATE as Picodata names it: a quoted name as written, another lowercased; a
    keyword is not a RegularIdentifier."""
    if tok.kind == "qident":
        return tok.text[1:-1]
    if tok.kind != "ident":
        raise Reject("truncate", "TRUNCATE expects a table name, not %s" % tok.text)
    if tok.low in kw:
        raise Reject("keyword_identifier", "%s is a Picodata keyword: as a table name it must be "
                     "double-quoted (\"%s\")" % (tok.text, tok.low))
    return tok.low


def truncate_verdict(toks, v):
    """G:TruncateTable (query.pest, 25.5.1 to 26.3.0): truncate [table] [public.] name
    [wait applied globally|locally] [option (timeout = n[.m])], one table, no CASCADE, RESTRICT,
    ONLY or RESTART/CONTINUE IDENTITY."""
    words = [t.low if t.kind == "ident" else t.text for t in toks]
    i = 2 if len(toks) > 1 and words[1] == "table" else 1
    if i + 1 < len(toks) and toks[i].kind in ("ident", "qident") and toks[i].text.lower() in (
            "public", '"public"') and words[i + 1] == ".":
        i += 2
    if i >= len(toks):
        raise Reject("truncate", "TRUNCATE expects a table name")
    name = _truncate_name(toks[i], keywords(v))
    i += 1
    if words[i:i + 3] in (["wait", "applied", "globally"], ["wait", "applied", "locally"]):
        i += 3
    if words[i:i + 4] == ["option", "(", "timeout", "="] and i + 5 < len(toks) \
            and re.fullmatch(r"\d+(\.\d+)?", toks[i + 4].text) and words[i + 5] == ")":
        i += 6
    if i < len(toks):
        rest = " ".join(t.text for t in toks[i:])
        what = ("one table per TRUNCATE" if words[i] == "," else
                "no CASCADE, RESTRICT or RESTART/CONTINUE IDENTITY" if words[i] in (
                    "cascade", "restrict", "restart", "continue") else "nothing else")
        raise Reject("truncate", "TRUNCATE [TABLE] [public.]name [WAIT APPLIED GLOBALLY|LOCALLY] "
                     "[OPTION (TIMEOUT = n)] takes %s: unexpected %s" % (what, rest))
    return Verdict("truncate", TRUNCATE_GATE, {"truncate": name})


def validate(sql, version=DEFAULT_VERSION):
    """Returns a Verdict or raises Reject(rule, detail)."""
    v = version_key(version)
    toks = _split_statements(tokenize(sql))
    kind, tag = _statement_kind(toks, v)
    if kind in ("empty", "tcl", "deallocate"):
        return Verdict(kind, sql, tag=tag)
    if kind == "set":
        return Verdict(kind, sql, tag=tag)  # accepted and ignored (autocommit session, no GUCs)
    if kind == "truncate":
        return truncate_verdict(toks, v)
    if kind == "explain":
        # EXPLAIN takes no ANALYZE or VERBOSE: a word there is the start of a statement, and rules out
        # as a statement below; its options are not expressions, so the rules see the statement only.
        _names, start = explain_options(toks, v)
        toks = toks[:1] + toks[start:]
        if len(toks) > 1 and toks[1].kind == "ident" and toks[1].low not in QUERY_WORDS:
            raise Reject("statement", "EXPLAIN %s: Picodata's grammar is EXPLAIN [(options)] followed by a "
                         "query or a block, no ANALYZE or VERBOSE (the emulator explains queries only)"
                         % toks[1].text.upper())
    # before the signs are merged: in `set + 1` the slip is the unquoted keyword, not a prefix +
    r_keyword_identifier(toks, None, v, keywords(v))
    toks = merge_signs(toks)
    depth = _depths(toks)
    body, options, cut = _strip_option(sql, toks, depth, v)
    kw = keywords(v)
    depth = depth[:len(body)]
    for _name, _source, check in RULES:
        if check is not None:
            check(body, depth, v, kw)
    params = max((int(t.text[1:]) for t in body if t.kind == "param"), default=0)
    if params > 65535:
        raise Reject("parameters", "at most 65,535 parameters per statement")
    out_sql = sql[:cut].rstrip() if cut is not None else sql
    reads = kind == "query" and body[0].low in ("select", "with", "values")
    return Verdict(kind, out_sql, options, insert_rows=_count_insert_rows(body, depth), params=params,
                   reads=reads)


# A statement Picodata's grammar refuses fails in PreparedStatement::parse with SbroadError::
# ParsingError(Entity::Rule, ...), "rule parsing error: ..." (sql-planner/src/errors.rs:378@25.5.10),
# which pgproto turns into traft's Error::Sbroad (src/pgproto/error.rs:203-208@25.5.10), written
# "sbroad: {0}" (src/traft/error.rs:139@25.5.10): the same at 26.1.6, 26.2.1-rc1 and 26.2.1-rc2.
PARSE_ERROR_PREFIX = "sbroad: rule parsing error: "


def message(rej):
    return PARSE_ERROR_PREFIX + "%s [picoemu rule %s]" % (rej.detail, rej.rule)
