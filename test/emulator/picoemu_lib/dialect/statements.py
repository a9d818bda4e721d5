"""validate(sql, version) -> Verdict: a statement as the front judges it (its kind, OPTION clause,
rows of INSERT ... VALUES, parameters), or Reject from the first rule it breaks (rules.RULES). The
front answers a Reject with SQLSTATE XX000 and a message beginning `sbroad: rule parsing error`
(message), as Picodata answers a statement its grammar cannot parse."""

import re
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from .grammar import (DEFAULT_VERSION, FORWARD_VALUES, NOT_EMULATED, OPTION_INT, PARSE_ERROR_PREFIX, QUERY_WORDS,
                      READ_PREFERENCES, TCL_TAGS, TRUNCATE_GATE, explain_facets, has_forward, has_read_preference,
                      keywords, version_key)
from .rules import RULES, r_keyword_identifier
from .tokens import Reject, Token, depths, merge_signs, split_statements, tokenize


class Verdict:
    """kind: query | explain | tcl | set | deallocate | truncate | empty. sql: the text to send to PostgreSQL
    (OPTION stripped). options: {name: value} of the trailing OPTION clause. tag: the command tag the
    front answers for tcl/set. insert_rows: number of VALUES rows of an INSERT ... VALUES. params: the
    highest $n."""

    def __init__(self, kind: str, sql: str, options: Optional[Dict[str, Any]] = None, tag: Optional[str] = None,
                 insert_rows: Optional[int] = None, params: int = 0, reads: bool = False) -> None:
        self.kind, self.sql, self.tag = kind, sql, tag
        self.options: Dict[str, Any] = options or {}
        self.insert_rows, self.params, self.reads = insert_rows, params, reads


def strip_option(sql: str, toks: List[Token], depth: List[int], v: str
                 ) -> Tuple[List[Token], Dict[str, Any], Optional[int]]:
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
    opts: Dict[str, Any] = {}
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


def option_names(v: str) -> List[str]:
    names = list(OPTION_INT)
    if has_read_preference(v):
        names.append("read_preference")
    if has_forward(v):
        names.append("forward")
    return names


def _statement_kind(toks: List[Token], v: str) -> Tuple[str, Optional[str]]:
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


def explain_options(toks: List[Token], v: str) -> Tuple[Tuple[str, ...], int]:
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
    if not parses or end is None:
        raise Reject("statement", "EXPLAIN takes %s in Picodata %s (ExplainQueryPlan)" % (takes, v))
    if end + 1 >= len(toks) or not toks[end + 1].space_before:
        raise Reject("statement", "EXPLAIN (...) must be followed by a blank and a statement (Explain)")
    return names, end + 1


def _count_insert_rows(toks: List[Token], depth: List[int]) -> Optional[int]:
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


def _truncate_name(tok: Token, kw: FrozenSet[str]) -> str:
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


def truncate_verdict(toks: List[Token], v: str) -> Verdict:
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


def validate(sql: str, version: Optional[str] = DEFAULT_VERSION) -> Verdict:
    """Returns a Verdict or raises Reject(rule, detail)."""
    v = version_key(version)
    toks = split_statements(tokenize(sql))
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
    r_keyword_identifier(toks, [], v, keywords(v))
    toks = merge_signs(toks)
    depth = depths(toks)
    body, options, cut = strip_option(sql, toks, depth, v)
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


def message(rej: Reject) -> str:
    return PARSE_ERROR_PREFIX + "%s [picoemu rule %s]" % (rej.detail, rej.rule)
