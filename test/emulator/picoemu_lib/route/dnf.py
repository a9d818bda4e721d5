"""A WHERE clause as Picodata's planner reads it: a tree of OR, AND, NOT, IN lists and equalities
(parse_where), the OR-of-AND chains it expands into (count, chains, expand: IN lists count as ORs,
NOT turns an OR into an AND and back, as picoroute's dnf_chains_of in src/pg/fdw/keys.cpp), and the
text of a statement that is not to be pruned by bucket_id (unpruned_text)."""

from typing import Callable, List, Optional, Sequence

from ..dialect import Token
from .syntax import close, split_commas, where_spans, word

CHAIN_CAP = 1 << 30  # the count saturates here


class Node:
    """kind: or | and | not (children) | in (lhs tokens, value token lists, negated) | eq (lhs, rhs
    tokens) | leaf."""
    __slots__ = ("kind", "kids", "lhs", "vals", "neg")

    def __init__(self, kind: str, kids: Sequence["Node"] = (), lhs: Optional[List[Token]] = None,
                 vals: Optional[List[List[Token]]] = None, neg: bool = False) -> None:
        self.kind, self.kids, self.neg = kind, list(kids), neg
        self.lhs: List[Token] = lhs if lhs is not None else []
        self.vals: List[List[Token]] = vals if vals is not None else []


class _Parser:
    def __init__(self, toks: List[Token]) -> None:
        self.t = toks
        self.i = 0

    def at(self, *words: str) -> bool:
        return self.i < len(self.t) and word(self.t[self.i], *words)

    def chain(self, word: str, parse_operand: Callable[[], Node]) -> Node:
        """operand (word operand)*: the operand alone, or a Node `word` of them."""
        kids = [parse_operand()]
        while self.at(word):
            self.i += 1
            kids.append(parse_operand())
        return kids[0] if len(kids) == 1 else Node(word, kids)

    def parse_or(self) -> Node:
        return self.chain("or", self.parse_and)

    def parse_and(self) -> Node:
        return self.chain("and", self.parse_not)

    def parse_not(self) -> Node:
        if self.at("not"):
            self.i += 1
            return Node("not", [self.parse_not()])
        t = self.t
        if self.i < len(t) and t[self.i].text == "(" and t[self.i].kind == "punct":
            j = close(t, self.i)
            if j + 1 >= len(t) or word(t[j + 1], "and", "or") or t[j + 1].text == ")":
                inner = t[self.i + 1:j]
                self.i = j + 1
                if inner and word(inner[0], "select", "values", "with"):
                    return Node("leaf")
                return _Parser(inner).parse_or()
        return self.predicate()

    def predicate(self) -> Node:
        t, start, between = self.t, self.i, False
        while self.i < len(t):
            tok = t[self.i]
            if tok.kind == "punct" and tok.text in "([":
                self.i = close(t, self.i) + 1
                continue
            if word(tok, "between"):
                between = True
            elif word(tok, "and"):
                if not between:
                    break
                between = False
            elif word(tok, "or"):
                break
            self.i += 1
        return _leaf(t[start:self.i])


def _leaf(p: List[Token]) -> Node:
    """A predicate: x [NOT] IN (list), a = b, or anything else."""
    for k, tok in enumerate(p):
        if word(tok, "in") and k + 1 < len(p) and p[k + 1].text == "(" and close(p, k + 1) == len(p) - 1:
            inner = p[k + 2:-1]
            neg = k > 0 and word(p[k - 1], "not")
            lhs = p[:k - 1] if neg else p[:k]
            if inner and word(inner[0], "select", "values", "with"):
                return Node("leaf")
            return Node("in", lhs=lhs, vals=split_commas(inner), neg=neg)
    eqs = [k for k, tok in enumerate(p) if tok.kind == "op" and tok.text == "="]
    if len(eqs) == 1 and 0 < eqs[0] < len(p) - 1:
        return Node("eq", lhs=p[:eqs[0]], vals=[p[eqs[0] + 1:]])
    return Node("leaf")


def parse_where(toks: List[Token]) -> Node:
    return _Parser(toks).parse_or()


def count(node: Node, negated: bool = False) -> int:
    """The chains of node (picoroute's counter), saturating at CHAIN_CAP."""
    k = node.kind
    if k == "not":
        return count(node.kids[0], not negated)
    if k in ("or", "and"):
        ored = (k == "or") != negated
        n = 0 if ored else 1
        for kid in node.kids:
            c = count(kid, negated)
            n = min(n + c if ored else n * c, CHAIN_CAP)
        return n
    if k == "in" and node.neg == negated:
        return max(1, len(node.vals))
    return 1


def chains(toks: List[Token]) -> int:
    """The most chains any WHERE clause of the statement (tokens, OPTION stripped) expands into."""
    return max((count(parse_where(toks[a:b])) for a, b in where_spans(toks)), default=1)


def expand(node: Node, limit: int) -> Optional[List[List[Node]]]:
    """The chains of node as lists of terms (eq nodes and leaves), or None above limit."""
    k = node.kind
    if k == "or":
        out: List[List[Node]] = []
        for kid in node.kids:
            c = expand(kid, limit)
            if c is None or len(out) + len(c) > limit:
                return None
            out += c
        return out
    if k == "and":
        prod: List[List[Node]] = [[]]
        for kid in node.kids:
            c = expand(kid, limit)
            if c is None or len(prod) * len(c) > limit:
                return None
            prod = [a + b for a in prod for b in c]
        return prod
    if k == "in" and not node.neg:
        if len(node.vals) > limit:
            return None
        return [[Node("eq", lhs=node.lhs, vals=[v])] for v in node.vals]
    if k == "eq":
        return [[node]]
    return [[Node("leaf")]]


def unpruned_text(sql: str, toks: List[Token]) -> str:
    """sql with every bucket_id of a WHERE clause written (bucket_id + 0): a statement Picodata does
    not restrict by bucket_id (over the DNF limit) is then not pruned by the emulator's views either
    (they carry only a plain bucket_id = N over to a branch's range)."""
    out: List[str] = []
    last = 0
    for a, b in where_spans(toks):
        for k in range(a, b):
            t = toks[k]
            if t.kind in ("ident", "qident") and t.text.strip('"').lower() == "bucket_id":
                s = k - 2 if k >= 2 and toks[k - 1].text == "." else k
                out.append(sql[last:toks[s].pos] + "(" + sql[toks[s].pos:t.end] + " + 0)")
                last = t.end
    return "".join(out) + sql[last:]
