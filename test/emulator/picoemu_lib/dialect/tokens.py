"""The tokenizer of the front's dialect rules: Picodata's lexical grammar (no comments, no dollar
quoting, signs only inside numeric literals), one statement per query, balanced parentheses."""

import re
from typing import List, Optional, Sequence

from .grammar import KEYWORDS_25_5, VALUE_KEYWORDS


class Token:
    """kind: ident | qident (quoted) | str | num | param ($n) | op | punct; text as written, low
    lowercased; pos and end its offsets in the statement; space_before: a blank precedes it."""
    __slots__ = ("kind", "text", "low", "pos", "end", "space_before")

    def __init__(self, kind: str, text: str, pos: int, end: int, space_before: bool) -> None:
        self.kind, self.text, self.pos, self.end, self.space_before = kind, text, pos, end, space_before
        self.low = text.lower()

    def __repr__(self) -> str:
        return "%s:%s" % (self.kind, self.text)


class Reject(Exception):
    """A statement a rule refuses: the rule's name and why."""

    def __init__(self, rule: str, detail: str) -> None:
        super().__init__(detail)
        self.rule, self.detail = rule, detail


_ident_re = re.compile(r"[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*")
_num_re = re.compile(r"\d+(\.\d*)?([eE][+-]?\d+)?")
_param_re = re.compile(r"\$(\d+)")
_op_chars = set("+-*/<>=~!@#%^&|`?")


def _quoted_end(sql: str, start: int) -> int:
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


def tokenize(sql: str) -> List[Token]:
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
            m = _param_re.match(sql, i)  # at i: no copy of the rest of the statement per parameter
            if not m:
                raise Reject("string", "dollar quoting is not in Picodata's grammar")
            i = m.end()
            toks.append(Token("param", sql[start:i], start, i, space))
        elif c.isdigit():
            num = _num_re.match(sql, i)
            assert num is not None  # a digit starts a number
            i = num.end()
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


def _is_operand_end(t: Optional[Token]) -> bool:
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


def merge_signs(toks: List[Token]) -> List[Token]:
    """A sign exists only inside a numeric literal (`-5`); any other prefix +/- is refused (rule
    `unary_minus`, dialect section 1 row 2; grammar: Integer = ("+" | "-")? ~ ASCII_DIGIT+)."""
    out: List[Token] = []
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


def split_statements(toks: List[Token]) -> List[Token]:
    """Picodata's Command is one statement; EOF = (";" ~ WO)* ~ EOI: trailing semicolons only."""
    for i, t in enumerate(toks):
        if t.kind == "punct" and t.text == ";":
            rest = toks[i + 1:]
            if any(not (r.kind == "punct" and r.text == ";") for r in rest):
                raise Reject("multiple_statements", "one statement per query: Picodata's grammar "
                             "accepts only trailing semicolons")
            return toks[:i]
    return toks


def depths(toks: Sequence[Token]) -> List[int]:
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
