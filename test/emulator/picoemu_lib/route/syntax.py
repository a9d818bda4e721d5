"""Token helpers of the router's reading: parentheses, words, names, the tables a statement names and
its WHERE clauses."""

from typing import List, Optional, Sequence, Tuple

from ..dialect import Token, depths, merge_signs, split_statements, tokenize

_WHERE_END = frozenset(["order", "group", "having", "limit", "union", "except", "intersect", "returning",
                        "option", "window"])


def statement_tokens(sql: str) -> List[Token]:
    """The tokens of a statement the dialect accepted (its OPTION already stripped)."""
    return merge_signs(split_statements(tokenize(sql)))


def close(toks: Sequence[Token], i: int) -> int:
    """The index of the parenthesis closing the one at i."""
    d = 0
    for j in range(i, len(toks)):
        if toks[j].kind == "punct" and toks[j].text in "([":
            d += 1
        elif toks[j].kind == "punct" and toks[j].text in ")]":
            d -= 1
            if d == 0:
                return j
    return len(toks) - 1


def word(t: Token, *words: str) -> bool:
    return t.kind == "ident" and t.low in words


def split_commas(toks: Sequence[Token]) -> List[List[Token]]:
    out: List[List[Token]] = []
    cur: List[Token] = []
    d = 0
    for t in toks:
        if t.kind == "punct" and t.text in "([":
            d += 1
        elif t.kind == "punct" and t.text in ")]":
            d -= 1
        if d == 0 and t.kind == "punct" and t.text == ",":
            out.append(cur)
            cur = []
        else:
            cur.append(t)
    out.append(cur)
    return out


def name(t: Token) -> Optional[str]:
    """The name a token gives: a quoted name as written, another lowercased; None for no name."""
    if t.kind == "qident":
        return t.text[1:-1]
    return t.low if t.kind == "ident" else None


def table_refs(toks: Sequence[Token]) -> List[Tuple[int, str]]:
    """[(index of the name token, name)] of every table after FROM, JOIN, INTO or UPDATE."""
    out = []
    for i, t in enumerate(toks):
        if word(t, "from", "join", "into", "update") and i + 1 < len(toks):
            j = i + 1
            if j + 2 < len(toks) and name(toks[j]) == "public" and toks[j + 1].text == ".":
                j += 2
            call = j + 1 < len(toks) and toks[j + 1].text == "(" and t.low != "into"  # from f(...)
            n = name(toks[j])
            if toks[j].kind in ("ident", "qident") and not call and n is not None:
                out.append((j, n))
    return out


def column(lhs: Sequence[Token]) -> Optional[str]:
    """The column a term's side names (alias.column, "column"), or None."""
    if len(lhs) == 3 and lhs[1].text == ".":
        lhs = lhs[2:]
    if len(lhs) == 1 and lhs[0].kind in ("ident", "qident"):
        return name(lhs[0])
    return None


def where_spans(toks: Sequence[Token]) -> List[Tuple[int, int]]:
    """[(start, end)] of the body of every WHERE clause, at any depth."""
    depth = depths(toks)
    out = []
    for i, t in enumerate(toks):
        if word(t, "where"):
            j = i + 1
            while j < len(toks) and depth[j] >= depth[i] and not (
                    depth[j] == depth[i] and (word(toks[j], *_WHERE_END) or toks[j].text == ";")):
                j += 1
            out.append((i + 1, j))
    return out
