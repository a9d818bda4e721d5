"""What Picodata's router concludes from a statement's text, for the fronts (pure, no I/O):

* the OR-of-AND chains a WHERE clause expands into (`chains`), the quantity of the DNF limit:
  from 26.1.6 and 26.2.1-rc1 (capability `dnf_chain_limit`) Picodata gives up above 513 chains
  (MAX_DNF_CHAINS = 512, checked after a pop so that a clause of 513 chains still expands:
  sql-ir/src/ir/transformation/dnf.rs:90 and 218-221 at 26.2.1-rc1, crates/sql-ir/... at 26.2.1-rc2,
  sql-planner/src/ir/transformation/dnf.rs at 26.1.6; emu_caps.dnf_most_chains): `get_dnf_chains`
  returns None and the expression stays as written, so bucket discovery finds no key and asks every replicaset. `IN`
  lists count as ORs (they are rewritten to ORs before the DNF). The count mirrors picoroute's
  (src/pg/fdw/keys.cpp, dnf_chains_of: NOT turns an OR into an AND and back);
* the statement's bucket set (`bucket_set`): "any" (no sharded table: global tables, the catalog,
  no table), "all" (a sharded table without a key that fixes its buckets), a set of
  (tier, bucket), or None when the emulator cannot hash the values as Picodata would (a literal of
  another type than its column, a double, a decimal, ...);
* the verdict of `forward` on that set (`forward_refusal`), as `enforce_forward_option` and
  `get_possible_forward_option` in src/sql/router.rs (26.2.1-rc1 to 26.3.0) give it: all buckets
  need `forward = on`; buckets of several replicasets too; buckets of one other replicaset, or of
  this one on a read-only instance (a replica), `ro_to_rw`; no bucket at all, or this instance's
  replicaset on its master, `off`. The executor checks it before every dispatch and motion
  (sql-executor/src/executor.rs, `enforce_forward_option`), so it holds for reads and writes alike;
  EXPLAIN does not dispatch.
"""

import itertools
import os
import re
import sys

import emu_caps
import emu_dialect as dialect

sys.path.insert(0, os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", "tools"))
import bucket_hash_reference  # noqa: E402

CHAIN_CAP = 1 << 30  # the count saturates here
_WHERE_END = frozenset(["order", "group", "having", "limit", "union", "except", "intersect", "returning",
                        "option", "window"])
_INT = re.compile(r"^[+-]?\d+$")


class Node:
    """kind: or | and | not (children) | in (lhs tokens, value token lists, negated) | eq (lhs, rhs
    tokens) | leaf."""
    __slots__ = ("kind", "kids", "lhs", "vals", "neg")

    def __init__(self, kind, kids=(), lhs=None, vals=None, neg=False):
        self.kind, self.kids, self.lhs, self.vals, self.neg = kind, list(kids), lhs, vals, neg


def _close(toks, i):
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


def _word(t, *words):
    return t.kind == "ident" and t.low in words


def _split_commas(toks):
    out, cur, d = [], [], 0
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


class _Parser:
    def __init__(self, toks):
        self.t = toks
        self.i = 0

    def at(self, *words):
        return self.i < len(self.t) and _word(self.t[self.i], *words)

    def chain(self, word, parse_operand):
        """operand (word operand)*: the operand alone, or a Node `word` of them."""
        kids = [parse_operand()]
        while self.at(word):
            self.i += 1
            kids.append(parse_operand())
        return kids[0] if len(kids) == 1 else Node(word, kids)

    def parse_or(self):
        return self.chain("or", self.parse_and)

    def parse_and(self):
        return self.chain("and", self.parse_not)

    def parse_not(self):
        if self.at("not"):
            self.i += 1
            return Node("not", [self.parse_not()])
        t = self.t
        if self.i < len(t) and t[self.i].text == "(" and t[self.i].kind == "punct":
            j = _close(t, self.i)
            if j + 1 >= len(t) or _word(t[j + 1], "and", "or") or t[j + 1].text == ")":
                inner = t[self.i + 1:j]
                self.i = j + 1
                if inner and _word(inner[0], "select", "values", "with"):
                    return Node("leaf")
                return _Parser(inner).parse_or()
        return self.predicate()

    def predicate(self):
        t, start, between = self.t, self.i, False
        while self.i < len(t):
            tok = t[self.i]
            if tok.kind == "punct" and tok.text in "([":
                self.i = _close(t, self.i) + 1
                continue
            if _word(tok, "between"):
                between = True
            elif _word(tok, "and"):
                if not between:
                    break
                between = False
            elif _word(tok, "or"):
                break
            self.i += 1
        return _leaf(t[start:self.i])


def _leaf(p):
    """A predicate: x [NOT] IN (list), a = b, or anything else."""
    for k, tok in enumerate(p):
        if _word(tok, "in") and k + 1 < len(p) and p[k + 1].text == "(" and _close(p, k + 1) == len(p) - 1:
            inner = p[k + 2:-1]
            neg = k > 0 and _word(p[k - 1], "not")
            lhs = p[:k - 1] if neg else p[:k]
            if inner and _word(inner[0], "select", "values", "with"):
                return Node("leaf")
            return Node("in", lhs=lhs, vals=_split_commas(inner), neg=neg)
    eqs = [k for k, tok in enumerate(p) if tok.kind == "op" and tok.text == "="]
    if len(eqs) == 1 and 0 < eqs[0] < len(p) - 1:
        return Node("eq", lhs=p[:eqs[0]], vals=[p[eqs[0] + 1:]])
    return Node("leaf")


def parse_where(toks):
    return _Parser(toks).parse_or()


def count(node, negated=False):
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


def where_spans(toks):
    """[(start, end)] of the body of every WHERE clause, at any depth."""
    depth = dialect._depths(toks)
    out = []
    for i, t in enumerate(toks):
        if _word(t, "where"):
            j = i + 1
            while j < len(toks) and depth[j] >= depth[i] and not (
                    depth[j] == depth[i] and (_word(toks[j], *_WHERE_END) or toks[j].text == ";")):
                j += 1
            out.append((i + 1, j))
    return out


def chains(toks):
    """The most chains any WHERE clause of the statement (tokens, OPTION stripped) expands into."""
    return max((count(parse_where(toks[a:b])) for a, b in where_spans(toks)), default=1)


def unpruned_text(sql, toks):
    """sql with every bucket_id of a WHERE clause written (bucket_id + 0): a statement Picodata does
    not restrict by bucket_id (over the DNF limit) is then not pruned by the emulator's views either
    (they carry only a plain bucket_id = N over to a branch's range)."""
    out, last = [], 0
    for a, b in where_spans(toks):
        for k in range(a, b):
            t = toks[k]
            if t.kind in ("ident", "qident") and t.text.strip('"').lower() == "bucket_id":
                s = k - 2 if k >= 2 and toks[k - 1].text == "." else k
                out.append(sql[last:toks[s].pos] + "(" + sql[toks[s].pos:t.end] + " + 0)")
                last = t.end
    return "".join(out) + sql[last:]


# ---- the bucket set --------------------------------------------------------------------------------

def _name(t):
    if t.kind == "qident":
        return t.text[1:-1]
    return t.low if t.kind == "ident" else None


def table_refs(toks):
    """[(index of the name token, name)] of every table after FROM, JOIN, INTO or UPDATE."""
    out = []
    for i, t in enumerate(toks):
        if _word(t, "from", "join", "into", "update") and i + 1 < len(toks):
            j = i + 1
            if j + 2 < len(toks) and _name(toks[j]) == "public" and toks[j + 1].text == ".":
                j += 2
            call = j + 1 < len(toks) and toks[j + 1].text == "(" and t.low != "into"  # from f(...)
            if toks[j].kind in ("ident", "qident") and not call:
                out.append((j, _name(toks[j])))
    return out


def _column(lhs):
    """The column a term's side names (alias.column, "column"), or None."""
    if len(lhs) == 3 and lhs[1].text == ".":
        lhs = lhs[2:]
    if len(lhs) == 1 and lhs[0].kind in ("ident", "qident"):
        return _name(lhs[0])
    return None


_UNKNOWN = object()
_CASTS = {"int": ("int", "integer", "bigint", "int8", "int4", "smallint", "unsigned"),
          "text": ("text", "string", "varchar")}


def _value(toks, cls, params):
    """The Python value Picodata hashes for a literal or bound parameter of a column of class cls,
    or _UNKNOWN. Picodata hashes the literal's own type: an integer literal for an integer column,
    a string literal for a text column; anything else the emulator does not hash here."""
    if len(toks) == 3 and toks[1].text == "::" and toks[2].low in _CASTS.get(cls, ()):
        toks = toks[:1]  # a cast to the column's own type: the value keeps that type
    if len(toks) != 1:
        return _UNKNOWN
    t = toks[0]
    if t.kind == "param":
        n = int(t.text[1:])
        v = params[n - 1] if params is not None and 0 < n <= len(params) else None
        if v is None:
            return _UNKNOWN
        if cls == "int" and _INT.match(v) and len(v) < 19:
            return int(v)
        return v if cls == "text" else _UNKNOWN
    if t.kind == "num" and cls == "int" and _INT.match(t.text):
        return int(t.text)
    if t.kind == "str" and cls == "text":
        return t.text[1:-1].replace("''", "'")
    return _UNKNOWN


def _expand(node, limit):
    """The chains of node as lists of terms (eq nodes and leaves), or None above limit."""
    k = node.kind
    if k == "or":
        out = []
        for kid in node.kids:
            c = _expand(kid, limit)
            if c is None or len(out) + len(c) > limit:
                return None
            out += c
        return out
    if k == "and":
        out = [[]]
        for kid in node.kids:
            c = _expand(kid, limit)
            if c is None or len(out) * len(c) > limit:
                return None
            out = [a + b for a in out for b in c]
        return out
    if k == "in" and not node.neg:
        if len(node.vals) > limit:
            return None
        return [[Node("eq", lhs=node.lhs, vals=[v])] for v in node.vals]
    if k == "eq":
        return [[node]]
    return [[Node("leaf")]]


_EMPTY = object()  # a chain whose key equalities contradict each other: no bucket


def _chain_buckets(chain, table, params, prune, hash_key):
    """The bucket a chain fixes, "all" when it fixes none, _EMPTY when its equalities on the key
    give different buckets (Picodata intersects the bucket sets of the terms of a chain:
    `a = 1 AND a = 2` has none, test/int/sql/eliminate_motion.sql "buckets = []" at 26.2.1-rc2),
    _UNKNOWN when it cannot be hashed here."""
    cols = {c["name"]: c for c in table["columns"]}
    fixed, bucket = {}, None
    for term in chain:
        if term.kind != "eq":
            continue
        for a, b in ((term.lhs, term.vals[0]), (term.vals[0], term.lhs)):
            col = _column(a)
            if col in table["sharding_key"]:
                fixed.setdefault(col, []).append(_value(b, cols[col]["cls"], params))
            elif col == "bucket_id" and prune and bucket is None:
                v = _value(b, "int", params)
                bucket = v if v is not _UNKNOWN else bucket
    if all(k in fixed for k in table["sharding_key"]):
        lists = [fixed[k] for k in table["sharding_key"]]
        if any(v is _UNKNOWN for vals in lists for v in vals):
            return _UNKNOWN
        buckets = {hash_key(table, list(combo)) for combo in itertools.product(*lists)}
        return buckets.pop() if len(buckets) == 1 else _EMPTY
    return bucket if bucket is not None else "all"


def _insert_buckets(toks, table, params, hash_key):
    """The buckets of INSERT INTO t [(cols)] VALUES (...), ...: one per row."""
    i = next(k for k, t in enumerate(toks) if _word(t, "into")) + 2
    if i < len(toks) and toks[i - 1].text == "public" and toks[i].text == ".":
        i += 2
    names = [c["name"] for c in table["columns"]]
    if i < len(toks) and toks[i].text == "(":
        j = _close(toks, i)
        names = [_name(p[0]) if len(p) == 1 else None for p in _split_commas(toks[i + 1:j])]
        i = j + 1
    if i >= len(toks) or not _word(toks[i], "values"):
        return None  # INSERT ... SELECT: the rows are known once read
    cols = {c["name"]: c for c in table["columns"]}
    out = set()
    i += 1
    while i < len(toks):
        if toks[i].text != "(":
            i += 1
            continue
        j = _close(toks, i)
        row = dict(zip(names, _split_commas(toks[i + 1:j])))
        vals = [_value(row.get(k, []), cols[k]["cls"], params) for k in table["sharding_key"]]
        if any(v is _UNKNOWN for v in vals):
            return None
        out.add(hash_key(table, vals))
        i = j + 1
    return out


def bucket_set(toks, tables, params, prune, hash_key):
    """The statement's bucket set (see the module's comment): "any", "all", a set of (tier, bucket),
    or None (not known here). toks: the statement's tokens, OPTION stripped; tables: {name: table}
    of state.json; params: the bound text values (None: not bound); hash_key(table, values) ->
    bucket."""
    refs = [(i, tables.get(n)) for i, n in table_refs(toks)]
    sharded = [(i, t) for i, t in refs if t is not None and not t["global"]]
    if not sharded:
        return "any"
    if len(sharded) > 1 or len(refs) > 1:
        return "all"  # joins, subqueries: stricter than Picodata, which may still find the key
    table = sharded[0][1]
    tier = table["tier"]
    if _word(toks[0], "insert"):
        b = _insert_buckets(toks, table, params, hash_key)
        return None if b is None else {(tier, x) for x in b}
    spans = where_spans(toks)
    if not spans:
        return "all"
    chain_list = _expand(parse_where(toks[spans[0][0]:spans[0][1]]), emu_caps.dnf_most_chains())
    if chain_list is None:
        return "all"  # over the DNF limit: every replicaset
    out = set()
    for chain in chain_list:
        b = _chain_buckets(chain, table, params, prune, hash_key)
        if b is _UNKNOWN:
            return None
        if b is _EMPTY:
            continue
        if b == "all":
            return "all"
        out.add((tier, b))
    return out


FORWARD_ORDER = ("off", "ro_to_rw", "on")


def possible_forward(buckets, owner, my_replicaset, read_only):
    """get_possible_forward_option: the least forward value the bucket set allows."""
    if buckets == "any":
        return "off"
    if buckets == "all":
        return "on"
    owners = {owner(tier, b) for tier, b in buckets}
    if not owners:
        return "off"
    if len(owners) != 1:
        return "on"
    if owners.pop() != my_replicaset or read_only:
        return "ro_to_rw"
    return "off"


def forward_refusal(wanted, possible):
    """Picodata's message when `forward = wanted` cannot be satisfied (possible is more), else None:
    enforce_forward_option in src/sql/router.rs (26.2.1-rc1, 26.3.0), an SbroadError::Invalid of
    Entity::Option ("invalid option: ...", sql-ir/src/errors.rs), reaching the client through
    traft's Error::Sbroad ("sbroad: ...", src/traft/error.rs) as XX000."""
    if FORWARD_ORDER.index(possible) <= FORWARD_ORDER.index(wanted):
        return None
    if wanted == "ro_to_rw":
        reason = "buckets span multiple nodes"
    elif possible == "ro_to_rw":
        reason = "buckets are not present on the current node"
    else:
        reason = "buckets span multiple nodes and are not present on the current node"
    return ('sbroad: invalid option: cannot satisfy "forward = %s": %s, try using "forward = %s" instead'
            % (wanted, reason, possible))


def statement_tokens(sql):
    """The tokens of a statement the dialect accepted (its OPTION already stripped)."""
    return dialect.merge_signs(dialect._split_statements(dialect.tokenize(sql)))


def hash_rule(version):
    """The hashing rule of `version`'s release line, as bucket_hash_reference names it (State.hash_rule):
    26.1's where the version has integral_double_hash, else 25.5's."""
    return (bucket_hash_reference.RULE_26_1 if emu_caps.has("integral_double_hash", version)
            else bucket_hash_reference.RULE_25_5)


def forward_verdict(state, instance, version, toks, wanted, params):
    """Picodata's refusal text for a statement under `forward = wanted` at `instance` (state: the
    state.json document), or None when it runs (or its bucket set is not known here)."""
    if wanted in (None, "on") or not emu_caps.has("forward", version):
        return None
    tables = {t["name"]: t for t in state.get("tables", [])}
    tiers = {t["name"]: t for t in state.get("tiers", [])}

    def hash_key(table, vals):
        return bucket_hash_reference.bucket_id(vals, tiers[table["tier"]]["bucket_count"], hash_rule(version))

    def owner(tier, b):
        return next((rs for lo, hi, rs in state.get("buckets", {}).get(tier, []) if lo <= b <= hi), None)

    buckets = bucket_set(toks, tables, params, emu_caps.has("prune_by_bucket_id", version), hash_key)
    if buckets is None:
        return None
    inst = next(i for i in state["instances"] if i["name"] == instance)
    rs = next(r for r in state["replicasets"] if r["name"] == inst["replicaset"])
    return forward_refusal(wanted, possible_forward(buckets, owner, rs["name"], rs.get("master") != instance))


# ---- reads that must be leader reads (26.1.1+) -----------------------------------------------------

def leader_read_refusal(state, toks):
    """Picodata's refusal of a read whose read_preference is not leader (the caller checked that), or
    None: effective_read_preference in src/sql/dispatch.rs:741-770 at 26.1.1, 750-779 at 26.1.6,
    726-755 at 26.2.1-rc1 to 26.3.0, called for the reads that dispatch by buckets (reads of a
    sharded table; a read of global tables only runs on the instance itself, exec_ir_on_any_node,
    src/sql/router.rs:573 at 26.1.1): an unlogged table among the statement's tables first, then the
    cluster's sql_preemption. SbroadError::Invalid of Entity::Option ("invalid option: ...") behind
    traft's "sbroad: " (src/traft/error.rs:139)."""
    tables = {t["name"]: t for t in state.get("tables", [])}
    named = [tables[n] for _, n in table_refs(toks) if n in tables]
    if not any(not t["global"] for t in named):
        return None
    if any(t.get("unlogged") for t in named):
        return "sbroad: invalid option: read_preference must be set to 'leader' when querying unlogged tables"
    if state.get("sql_preemption"):
        return "sbroad: invalid option: read_preference must be set to 'leader' when sql_preemption is enabled"
    return None


# ---- a scalar aggregate over an empty bucket set (before 26.2.1-rc2) -------------------------------

AGGREGATES = frozenset(["count", "sum", "avg", "min", "max", "total", "group_concat", "string_agg"])


def scalar_aggregate(toks):
    """Whether the statement is SELECT <aggregates> FROM ... without GROUP BY: an aggregate call in
    the top-level select list, and no GROUP BY at the top level."""
    if not toks or not _word(toks[0], "select"):
        return False
    depth, agg = 0, False
    for i, t in enumerate(toks):
        if t.text == "(":
            depth += 1
        elif t.text == ")":
            depth -= 1
        elif depth == 0 and _word(t, "group") and i + 1 < len(toks) and _word(toks[i + 1], "by"):
            return False
        elif (depth == 0 and t.kind == "ident" and t.low in AGGREGATES and i + 1 < len(toks)
              and toks[i + 1].text == "("):
            agg = True
    return agg


def empty_set_aggregate(state, version, toks, params):
    """Whether Picodata answers this read with a row of NULLs: a scalar aggregate whose bucket set is
    empty (its key equalities contradict each other) on a version before the fix of 26.2.1-rc2
    (capability empty_set_aggregate): the reduce stage sums the answers of no storage
    (`sum(count_1)` over an empty virtual table), so count(*) is NULL, not 0
    (test/int/sql/eliminate_motion.sql scalar-agg-1 expects null at 26.1.6, 26.2.1-rc1 and 26.3.0,
    0 at 26.2.1-rc2; src/sql/router.rs bucket_dispatch at 26.2.1-rc2)."""
    if emu_caps.has("empty_set_aggregate", version) or not scalar_aggregate(toks):
        return False
    tables = {t["name"]: t for t in state.get("tables", [])}
    tiers = {t["name"]: t for t in state.get("tiers", [])}

    def hash_key(table, vals):
        return bucket_hash_reference.bucket_id(vals, tiers[table["tier"]]["bucket_count"], hash_rule(version))

    return bucket_set(toks, tables, params, emu_caps.has("prune_by_bucket_id", version), hash_key) == set()


# ---- a dead master stalls the tier: which statements wait for it --------------------------------
# Picodata's coordinator sends a statement to the storages through Lua (src/sql/dispatch.lua,
# one_step_dispatch and two_step_dispatch, 25.5.1 to 26.3.0): reads and writes, one step or two,
# first call vshard's wait_masters_connect on router:routeall(), every replicaset of the tier, with
# the statement's deadline, and ignore its result. A master that cannot be reached makes the wait
# last the whole deadline (DEFAULT_QUERY_TIMEOUT, 360 s, src/sql/router.rs; no statement or cluster
# option changes it): then the statement is sent to the masters it needs with no time left, and the
# collection fails with "dql timeout exceeded" (future_wait) after the live ones received it (a
# write is applied there). The 26.1.1+ local fast path (capability local_execution:
# should_single_rs_dispatch_locally / should_single_rs_buckets_dispatch_locally in
# src/sql/dispatch.rs, 26.1.1 to 26.3.0) runs a statement whose buckets all belong to this
# instance's replicaset on this instance, without Lua: at its master (read_preference leader, the
# default, and every write), at a replica for read_preference replica, anywhere in it for any; a
# statement without a sharding key (all buckets) only when the tier has that one replicaset.
# Global tables and the catalog are not dispatched (their bucket set is "any").

def dispatch_plan(state, instance, version, toks, params, read_preference, write):
    """How the coordinator `instance` runs a statement (state: state.json): None when no Lua
    dispatch happens (no sharded table, or the local fast path), else {"tiers": the tiers whose
    masters it waits for, "targets": the replicasets it is sent to, by name}."""
    tables = {t["name"]: t for t in state.get("tables", [])}
    tiers = {t["name"]: t for t in state.get("tiers", [])}

    def hash_key(table, vals):
        return bucket_hash_reference.bucket_id(vals, tiers[table["tier"]]["bucket_count"], hash_rule(version))

    def owner(tier, b):
        return next((rs for lo, hi, rs in state.get("buckets", {}).get(tier, []) if lo <= b <= hi), None)

    buckets = bucket_set(toks, tables, params, emu_caps.has("prune_by_bucket_id", version), hash_key)
    if buckets == "any":
        return None
    inst = next(i for i in state["instances"] if i["name"] == instance)
    my_rs = inst["replicaset"]
    rs_of = {r["name"]: r for r in state.get("replicasets", []) if r.get("state") != "expelled"}
    is_replica = rs_of.get(my_rs, {}).get("master") != instance
    pref = "leader" if write else (read_preference or "leader").lower()
    here = {"leader": not is_replica, "replica": is_replica, "any": True}.get(pref, False)
    if isinstance(buckets, set):
        used = sorted({t for t, _ in buckets})
        targets = sorted({owner(t, b) for t, b in buckets} - {None})
        if (emu_caps.has("local_execution", version) and here and targets == [my_rs]
                and len(used) == 1):
            return None
        return {"tiers": used, "targets": targets}
    used = sorted({tables[n]["tier"] for _, n in table_refs(toks)
                   if n in tables and not tables[n]["global"]})
    targets = sorted(r for r, v in rs_of.items() if v["tier"] in used)
    if (buckets == "all" and emu_caps.has("local_execution", version) and here and targets == [my_rs]):
        return None
    return {"tiers": used, "targets": targets}


def stopped_masters(state, tiers):
    """The replicasets of `tiers` whose master the catalog shows Offline (picoemu stop), by name."""
    inst = {i["name"]: i for i in state.get("instances", [])}
    return sorted(r["name"] for r in state.get("replicasets", [])
                  if r.get("state") != "expelled" and r["tier"] in tiers
                  and inst.get(r.get("master"), {}).get("state") == "Offline")


def dql_timeout_text(state, plan):
    """Picodata's error once the deadline has passed: the Lua error of one_step_dispatch /
    two_step_dispatch, `Error on replicaset <uuid>: dql timeout exceeded` (dispatch.lua, future_wait
    and the fail label, 25.5.1 to 26.3.0), a box error of type ClientError (PROC_LUA, made by
    vshard's error.make) that tlua reads through its __tostring, json.encode; Rust wraps it as
    TarantoolError ProcLua ("box error: ProcLua: ...", tarantool/src/error.rs), then
    SbroadError::DispatchError (sql/dispatch.rs, lua_*_plan_dispatch callers), then "sbroad: "
    (src/traft/error.rs), at every tag. The replicaset named is one the statement was sent to that
    is running (the first by name here; Picodata names the first whose future it waited for), else
    the stopped one. The JSON's other fields (trace, base_type, ...) and their order are Picodata's
    hash order: the emulator gives type, code and message only; match the message."""
    rs_of = {r["name"]: r for r in state.get("replicasets", [])}
    stopped = set(stopped_masters(state, plan["tiers"]))
    live = [r for r in plan["targets"] if r not in stopped]
    name = (live or plan["targets"] or sorted(stopped) or [None])[0]
    uuid = rs_of.get(name, {}).get("uuid", "?")
    return ('sbroad: box error: ProcLua: {"type":"ClientError","code":32,"message":"Error on replicaset '
            '%s: dql timeout exceeded"}' % uuid)
