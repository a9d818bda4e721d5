"""The rule table of the dialect: each rule a check over a statement's tokens (OPTION stripped) that
raises Reject, named with the fact it comes from."""

from typing import Callable, FrozenSet, List, Optional, Sequence, Tuple

from .grammar import (CAST_TYPES, FUNCTIONS, KEYWORDS_25_5, OPERATORS, VALUE_KEYWORDS, has_arrays)
from .tokens import Reject, Token
from .. import caps as emu_caps

Rule = Callable[[List[Token], List[int], str, FrozenSet[str]], None]


# Each rule: (name, source, check(toks, depth, v, kw)). A check raises Reject. Sources: "D1.n, line L"
# = the document "Picodata's SQL dialect and limits", section 1, table row n, at line L of that
# document; "D3"/"D4" its sections 3 and 4; "G:<rule>" = the rule of Picodata's grammar query.pest.

def _prev(toks: Sequence[Token], i: int) -> Optional[Token]:
    return toks[i - 1] if i > 0 else None


def _next(toks: Sequence[Token], i: int) -> Optional[Token]:
    return toks[i + 1] if i + 1 < len(toks) else None


def r_not_like(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
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


def _set_is_keyword(toks: Sequence[Token], i: int) -> bool:
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


def r_keyword_identifier(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
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


def r_schema(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
    for i, t in enumerate(toks):
        if t.text != ".":
            continue
        p = _prev(toks, i)
        n = _next(toks, i)
        nn = _next(toks, i + 1)
        # three-part names never parse
        if i >= 2 and toks[i - 2].text == "." or (n is not None and nn is not None and nn.text == "."):
            raise Reject("schema", "a name has at most two parts in Picodata (schema public or "
                         "table.column)")
        pp = _prev(toks, i - 1) if i >= 1 else None
        in_table_slot = pp is not None and pp.kind == "ident" and pp.low in _TABLE_INTRO
        if pp is not None and pp.kind == "ident" and pp.low == "from" and toks[0].low == "delete":
            in_table_slot = True
        if in_table_slot and p is not None and p.low not in ("public", '"public"'):
            raise Reject("schema", "schema %s: only public. (or no schema) parses in Picodata"
                         % p.text)
        if n is not None and nn is not None and nn.text == "(":
            raise Reject("schema", "schema-qualified function %s.%s(): not in Picodata's grammar"
                         % (p.text if p else "", n.text))


def r_offset(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
    for i, t in enumerate(toks):
        n = _next(toks, i)
        if t.kind == "ident" and t.low == "offset" and n is not None and (n.kind in ("num", "param") or n.text == "("):
            raise Reject("offset", "OFFSET is not in Picodata's grammar (LIMIT is): LIMIT n + m and skip "
                         "locally")
        if t.kind == "ident" and t.low == "fetch" and n is not None and n.low in ("first", "next"):
            raise Reject("offset", "FETCH FIRST is not in Picodata's grammar (LIMIT n is)")


def r_collate(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
    for i, t in enumerate(toks):
        n = _next(toks, i)
        if t.kind == "ident" and t.low == "collate" and i > 0 and n is not None and n.kind in ("ident", "qident"):
            raise Reject("collate", "COLLATE is not in Picodata's grammar")


def r_any_array(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
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


def r_operators(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
    for t in toks:
        if t.kind == "op" and t.text not in OPERATORS:
            raise Reject("operator", "operator %s is not in Picodata's grammar (= <> != < <= > >= + - * "
                         "/ %% || ::)" % t.text)


_ARITH = frozenset(["+", "-", "*", "/", "%"])


def _concat_neighbour_ops(toks: List[Token], depth: List[int], i: int, kw: FrozenSet[str]) -> List[str]:
    """The infix operators next to the || at i, in the same parenthesis level, as far as its operands
    and the operators chained with it reach (a comparison, a comma, a keyword or the end of the
    level stops the walk; `::` and parenthesised groups belong to an operand)."""
    found = []
    for step in (-1, 1):
        j = i + step
        while 0 <= j < len(toks) and depth[j] >= depth[i]:
            t = toks[j]
            if depth[j] == depth[i]:
                if t.kind == "op" and t.text not in ("||", "::"):
                    if t.text not in _ARITH:
                        break
                    found.append(t.text)
                elif t.kind == "punct" and t.text not in "()[]":
                    break
                elif t.kind == "ident" and t.low in kw and not (
                        j + 1 < len(toks) and toks[j + 1].text == "("):
                    break
            j += step
    return found


def r_concat_precedence(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
    """Up to 26.2.1-rc1 `||` shares the precedence of * / % and binds tighter than + and - (the Pratt
    table: sql-planner/src/frontend/sql.rs:2343@25.5.10 and :2788@26.1.6, sql-frontend/src/frontend/
    sql/ast/ir_populator/expression_parser.rs:118@26.2.1-rc1, the same at the development tag 26.3.0),
    where PostgreSQL binds it below them: `a || b + c` is (a || b) + c there, a || (b + c) here, and
    `a || b * c` differs too. PostgreSQL, which runs the statement behind the front, would give it
    another meaning than Picodata: such a statement is refused, so that a client that relies on either
    precedence is caught. From 26.2.1-rc2 (capability concat_below_additive: its own tier below + -,
    crates/sql-frontend/.../expression_parser.rs:117@26.2.1-rc2, commit 1505d6ea7) the two agree."""
    if emu_caps.has("concat_below_additive", v):
        return
    for i, t in enumerate(toks):
        if t.kind == "op" and t.text == "||":
            ops = _concat_neighbour_ops(toks, depth, i, kw)
            if ops:
                raise Reject("concat_precedence", "|| next to %s without parentheses: Picodata %s binds || with "
                             "* / %% (tighter than + -), PostgreSQL below + -; parenthesise each operand"
                             % (ops[0], v))


def _type_at(toks: Sequence[Token], i: int) -> Tuple[Optional[Token], int]:
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


def r_cast_types(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
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


def r_limit(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
    for i, t in enumerate(toks):
        if t.kind == "ident" and t.low == "limit":
            n = _next(toks, i)
            if n is None or not ((n.kind == "num" and n.text.isdigit()) or n.low in ("all", "null")):
                raise Reject("limit", "LIMIT takes an unsigned integer literal (or ALL) in Picodata")


def r_unsupported_clauses(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
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
        nn = _next(toks, i + 1)
        if low == "is" and n is not None and n.low == "not" and nn is not None and nn.low == "distinct":
            raise Reject("unsupported_clause", "IS [NOT] DISTINCT FROM is not in Picodata's grammar")
        if low in ("right", "full", "cross", "natural", "lateral") and n is not None and \
                n.low in ("join", "outer"):
            raise Reject("unsupported_clause", "%s JOIN: only [INNER] JOIN and LEFT [OUTER] JOIN parse" % t.text.upper())
        if low == "natural" or (low == "cross" and n is not None and n.low == "join"):
            raise Reject("unsupported_clause", "only [INNER] JOIN and LEFT [OUTER] JOIN parse")
        if low == "intersect":
            raise Reject("unsupported_clause", "INTERSECT is not in Picodata's grammar (UNION [ALL], EXCEPT are)")


def r_comma_join(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
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


def r_functions(toks: List[Token], depth: List[int], v: str, kw: FrozenSet[str]) -> None:
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
    ("option_name", "D1.9, line 23 (OPTION read_preference on 25.5.x); D4, lines 81-85; G:DqlOption", None),  # strip_option
    ("operator", "D1 'Accepted everywhere', lines 31-36 (= <> < <= > >= + - * /); G:ExprInfixOpNoSep", r_operators),
    ("concat_precedence", "D7 (|| below + - from 26.2.1-rc2 / master); the Pratt table of the expression "
     "parser", r_concat_precedence),
    ("cast_type", "D1, line 33 (CAST(x AS t) and x::t); G:Type", r_cast_types),
    ("limit", "D1, line 34 (LIMIT n); G:Limit = Unsigned | ALL", r_limit),
    ("unsupported_clause", "G:Query (no RETURNING, FOR UPDATE, IS DISTINCT FROM, RIGHT/FULL JOIN, "
     "INTERSECT)", r_unsupported_clauses),
    ("comma_join", "D1, line 34 ([INNER|LEFT [OUTER]] JOIN ... ON); G:SelectMainBody", r_comma_join),
    ("function", "D1, lines 37-39 (aggregates, scalar functions: 'push down only what is listed here')", r_functions),
    ("comment", "G:WHITESPACE (no COMMENT rule)", None),  # tokenizer
    ("multiple_statements", "G:Command = SOI ~ one statement ~ EOF", None),  # split_statements
    ("statement", "D3, line 66 (autocommit); facts 4 (no DECLARE/FETCH cursors); D1.7; G:Command", None),
    ("truncate", "G:TruncateTable (one table; no CASCADE, RESTART IDENTITY or ONLY)", None),  # truncate_verdict
]
