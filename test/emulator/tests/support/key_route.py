"""Routing by the sharding key: the fast path (_picoemu.key_bucket_fast, sql/key_route.sql) against
the full parser (_picoemu.key_bucket_full) on many statement shapes. For every statement, with no
bound values and with some, _picoemu.key_bucket must give exactly what key_bucket_full gives, and the
fast path must either say "not sure" (NULL) or give that same bucket; the shapes it is meant to answer
must be answered by it (else the check would pass with a fast path that answers nothing).
compare() runs them on one server: tests/key_route.py on a server of its own, the self-test on one
of its clusters."""

import json
import random
from typing import Any, Dict, List, Optional, Sequence, Tuple, TypeVar

from picoemu_lib import pgwire as w

T = TypeVar("T")
Case = Tuple[str, str, Optional[bool]]  # (statement, table, whether the fast path must answer it)

BUCKETS = 3000
# (table, sharding key, key column classes)
TABLES = [("users", ["id"], ["int"]), ("kv", ["k"], ["text"]), ("pair", ["a", "b"], ["int", "text"]),
          ("order", ["id"], ["int"]), ("t_2", ["from"], ["int"]), ("dbl", ["x"], ["double"])]
KEYWORDS = ["select", "from", "where", "set", "and", "or", "not", "join", "union", "public", "order", "by",
            "limit", "with", "offset", "returning", "having", "group", "option", "except", "intersect",
            "update", "delete"]


def fixed_cases() -> List[Case]:
    """(statement, table, whether the fast path must answer it): the shapes of the brief by hand."""
    yes = [
        'SELECT "id", "name", "v" FROM "users" WHERE ("id" = 12345)',
        "SELECT id, name, v FROM users WHERE id = 12345",
        "select * from users where id=5;",
        "SELECT id FROM public.users WHERE id = -7",
        'SELECT id FROM "public"."users" WHERE ( "id" = 0 ) ;  ',
        "SELECT id FROM users WHERE id = 007",
        "SELECT id FROM users WHERE id = -0",
        "SELECT id FROM users WHERE id = 999999999999999999",
        "SELECT id FROM users WHERE id = -99999999999999999",
        "\n\tSELECT\tid ,name\nFROM users\r\nWHERE id\t=\t42\n",
        "SeLeCt ID FrOm UsErS wHeRe Id = 3",
        'SELECT "ID" FROM "USERS" WHERE "Id" = 3',
        "SELECT k FROM kv WHERE k = 'abc'",
        "SELECT k, n FROM kv WHERE (k = 'a b; -- /* $1 select OR join ')",
        "SELECT k FROM kv WHERE k = ''",
        "SELECT k FROM kv WHERE k = 'Ünïcödé \"quoted\" (x)'",
    ]
    no = [
        'SELECT id FROM "order" WHERE id = 1',  # routed, but a table named as a keyword is left to the full parser
        "SELECT id FROM users WHERE id = 1234567890123456789",  # 19 characters: not routed
        "SELECT id FROM users WHERE id = -123456789012345678",
        "SELECT id FROM users WHERE id = 5 OR id = 6",
        "SELECT id FROM users WHERE id = $1",
        "SELECT id FROM users WHERE id = $2",
        "SELECT id FROM users WHERE id = 5 -- comment",
        "SELECT id FROM users WHERE id = /* c */ 5",
        "SELECT id FROM users u JOIN kv ON true WHERE id = 5",
        "SELECT id FROM users, kv WHERE id = 5",
        "SELECT id FROM users WHERE id IS NULL",
        "SELECT id FROM users WHERE id = NULL",
        "SELECT id FROM users WHERE id = '5'",
        "SELECT k FROM kv WHERE k = 5",
        "SELECT k FROM kv WHERE k = 'it''s'",
        "SELECT k FROM kv WHERE k = E'abc'",
        "SELECT k FROM kv WHERE k = $$abc$$",
        "SELECT id FROM users WHERE id IN (5)",
        "SELECT id FROM users WHERE id = 5 ORDER BY id",
        "SELECT id FROM users WHERE id = 5 LIMIT 1",
        "SELECT id FROM users WHERE id = 5; SELECT 1",
        "SELECT id FROM users WHERE NOT id = 5",
        "SELECT id FROM users WHERE id = 5.0",
        "SELECT id FROM users WHERE id = - 5",
        "SELECT id FROM users WHERE id = +5",
        "SELECT id FROM users WHERE id = 5::int8",
        "SELECT count(*) FROM users WHERE id = 5",
        "SELECT (SELECT 1) FROM users WHERE id = 5",
        "SELECT id FROM users WHERE id = (SELECT 5)",
        "WITH x AS (SELECT 1) SELECT id FROM users WHERE id = 5",
        "SELECT id FROM users WHERE id = 5 UNION ALL SELECT id FROM users WHERE id = 6",
        "EXPLAIN SELECT id FROM users WHERE id = 5",
        "UPDATE users SET v = 1 WHERE id = 5",
        "DELETE FROM users WHERE id = 5",
        "UPDATE \"users\" SET \"v\" = $1 WHERE (\"id\" = $2)",
        "SELECT id FROM other WHERE id = 5",
        "SELECT id FROM users WHERE other = 5",
        "SELECT from FROM users WHERE id = 5",
        'SELECT "from" FROM users WHERE id = 5',
        "SELECT id AS x FROM users WHERE id = 5",
        "SELECT u.id FROM users u WHERE u.id = 5",
        "SELECT users.id FROM users WHERE users.id = 5",
        "SELECT id FROM users WHERE (id) = (5)",
        "SELECT id FROM users WHERE 5 = id",
        "SELECT set_config('picoemu.vdbe_base', 'x', false);\nSELECT id FROM users WHERE id = 5",
        "SELECT a FROM pair WHERE a = 1 AND b = 'x'",
        "SELECT id FROM users WHERE id = 5 AND v = 1",
        "SELECT id FROM users WHERE v = 1 AND id = 5",
        'SELECT "id" FROM "users" WHERE ("id" = 5) AND ("bucket_id" = 219)',
        "SELECT k FROM kv WHERE n = 1 AND k = 'x AND y = 2'",
        "SELECT id FROM users WHERE id = 5 AND id = 6",
        "SELECT id FROM users WHERE (v = 1 and id = 5)",
        "SELECT id FROM users WHERE a = 1\nAND\tb = -2 AND id = 3 AND c = 4;",
        "SELECT k FROM kv WHERE k = 'x' AND n = 1",
        "SELECT id FROM users WHERE and = 1 AND id = 5",
        "SELECT id FROM users WHERE id = 5 AND and = 1",
        "SELECT id FROM users WHERE v = 1 AND from = 2 AND id = 5",
        "SELECT id FROM users WHERE v = 1 AND id = 5 AND v >= 0",
        "SELECT id FROM users WHERE v = 1 AND id = $1",
        "SELECT id FROM users WHERE v = 'x' AND id = 5",
        "SELECT id FROM users WHERE v = 1 AND AND id = 5",
        "SELECT id FROM users WHERE v = 1 AND (id = 5)) AND w = 1",
        "SELECT id FROM users WHERE v = 1 AND id = 5 AND",
        "SELECT id FROM users WHERE v = 1 AND id = 1234567890123456789",
        "SELECT a FROM pair WHERE a = 1",
        "SELECT x FROM dbl WHERE x = 1",
        "",
        "SELECT",
        "SELECT id FROM users WHERE id = 5 " + "x" * 20000,
    ]
    out: List[Case] = [(q, "kv" if " kv " in q else "users", True) for q in yes]
    return out + [(q, "order" if '"order"' in q else "users", False) for q in no]


def pick(rng: random.Random, xs: Sequence[T]) -> T:
    return xs[rng.randrange(len(xs))]


def case_word(rng: random.Random, word: str) -> str:
    r = rng.random()
    if r < 0.6:
        return word
    if r < 0.8:
        return word.upper()
    return "".join(c.upper() if rng.random() < 0.5 else c for c in word)


def blank(rng: random.Random) -> str:
    return pick(rng, [" ", " ", " ", "  ", "\t", "\n", " \n ", "\r\n"])


def name(rng: random.Random, n: str, quoted: Optional[bool] = None) -> str:
    q = rng.random() < 0.4 if quoted is None else quoted
    r = rng.random()
    if r < 0.03:
        return '"%s' % n  # an unbalanced quote
    return '"%s"' % n if q else case_word(rng, n)


def value(rng: random.Random, cls: str) -> str:
    r = rng.random()
    if r < 0.45:
        digits = pick(rng, [1, 2, 3, 5, 9, 10, 17, 18, 19, 20])
        v = str(rng.randrange(10 ** digits))
        return ("-" if rng.random() < 0.3 else "") + v
    if r < 0.8:
        alphabet = ["a", "b", " ", "x y", ";", "--", "/*", "$1", "select", "OR", "join", "\"", "()", "é", "#1#", "\\"]
        s = "".join(pick(rng, alphabet) for _ in range(rng.randrange(5)))
        if rng.random() < 0.15:
            s += "''"
        return "'%s'" % s
    return pick(rng, ["$1", "$2", "$3", "NULL", "5.5", "1e3", "-", "+5", "TRUE", "'5'::int8", "0x10", "- 5"])


def term(rng: random.Random, col: str, cls: str) -> str:
    v = value(rng, cls)
    eq = pick(rng, ["=", " = ", "= ", " =", "  =  ", "\t=\n"])
    body = "%s%s%s" % (name(rng, col), eq, v)
    r = rng.random()
    if r < 0.08:
        body = "%s%s%s" % (v, eq, name(rng, col))
    elif r < 0.12:
        body = "%s IS NULL" % name(rng, col)
    if rng.random() < 0.4:
        body = pick(rng, ["(%s)", "( %s )", "((%s))", "(%s", "%s)"]) % body
    return body


def random_case(rng: random.Random) -> Tuple[str, str]:
    tbl, keycols, keycls = pick(rng, TABLES)
    if rng.random() < 0.1:
        tbl = pick(rng, ["other", "users", "kv"]) if rng.random() < 0.5 else tbl
    cols = pick(rng, [["*"], ["id"], ["id", "name"], keycols, ["name", "v"], [pick(rng, KEYWORDS)],
                      ["x" + pick(rng, KEYWORDS)], ["v2", "_c"]])
    sel = pick(rng, [",", ", ", " , ", ",\n"]).join(c if c == "*" else name(rng, c) for c in cols)
    tname = name(rng, tbl)
    if rng.random() < 0.2:
        tname = pick(rng, ["public.", '"public".', "PUBLIC.", "public ."]) + tname
    terms = [term(rng, c, k) for c, k in zip(keycols, keycls)]
    r = rng.random()
    if r < 0.15:
        terms.append(term(rng, pick(rng, ["v", "bucket_id", "name", keycols[0]]), "int"))
    elif r < 0.2:
        terms = terms[:1]
    rng.shuffle(terms)
    conj = pick(rng, [" AND ", " and ", "\nAND\t", " OR ", " AND NOT "]) if rng.random() < 0.95 else ")AND("
    where = conj.join(terms)
    head = pick(rng, ["SELECT %s FROM %s WHERE %s", "select %s from %s where %s", "SELECT %s FROM %s WHERE %s",
                      "UPDATE %s SET v = 1 WHERE %s", "DELETE FROM %s WHERE %s"])
    if head.lower().startswith("select"):
        stmt = head.replace("SELECT", case_word(rng, "SELECT")).replace("FROM", case_word(rng, "FROM")).replace(
            "WHERE", case_word(rng, "WHERE")) % (sel, tname, where)
    else:
        stmt = head % (tname, where)
    if rng.random() < 0.3:
        stmt = stmt.replace(" ", blank(rng))
    tail = pick(rng, ["", "", ";", " ;", "; ", ";\n", ";;", " -- c", " LIMIT 1", " ORDER BY 1", "\n"])
    lead = pick(rng, ["", "", " ", "\n", "\t "])
    return lead + stmt + tail, tbl


def near_case(rng: random.Random) -> Tuple[str, str]:
    """A statement of the fast path's shape, most of the time, with one change at most."""
    tbl, keycols, keycls = pick(rng, TABLES[:2])
    cols = pick(rng, [["*"], ["id", "name", "v"], keycols, ["v2", "_c"], [pick(rng, KEYWORDS)]])
    sel = ", ".join(c if c == "*" else name(rng, c) for c in cols)
    v = value(rng, keycls[0]) if rng.random() < 0.3 else (
        str(rng.randrange(-10 ** 6, 10 ** 18)) if keycls[0] == "int" else "'k%d %s'" % (rng.randrange(10 ** 6), pick(rng, ["", "x", ";", "and"])))
    terms = ["%s = %s" % (name(rng, keycols[0]), v)]
    if rng.random() < 0.4:
        terms += ["%s = %s" % (name(rng, pick(rng, ["v", "bucket_id", "x1", keycols[0], "and", pick(rng, KEYWORDS)])),
                               pick(rng, [str(rng.randrange(-99, 10 ** 6)), "'s'", "$1"]))
                  for _ in range(rng.randrange(1, 4))]
        rng.shuffle(terms)
        terms = ["(%s)" % t if rng.random() < 0.3 else t for t in terms]
    stmt = "%s %s %s %s %s %s" % (case_word(rng, "select"), sel, case_word(rng, "from"), name(rng, tbl),
                                  case_word(rng, "where"), pick(rng, [" AND ", " and ", "\nAND "]).join(terms))
    change = rng.randrange(12)
    if change == 0:
        stmt = stmt.replace(" ", blank(rng))
    elif change == 1:
        stmt += pick(rng, [";", " ;", ";;", " AND v = 1", " OR v = 1", " -- x", "/* x */", " LIMIT 1"])
    elif change == 2:
        stmt = stmt.replace(" WHERE ", " WHERE (").replace(" where ", " where (") + ")"
    elif change == 3:
        stmt = stmt.replace(" %s " % name(rng, tbl, False), " public.%s " % tbl)
    elif change == 4:
        stmt = stmt.replace("=", pick(rng, ["==", "= =", "<>", ">="]))
    elif change == 5:
        stmt = pick(rng, ["EXPLAIN ", "(", "WITH x AS (SELECT 1) ", " "]) + stmt
    return stmt, tbl


def cases(n_random: int = 3000, n_near: int = 3000, seed: int = 20261201) -> List[Case]:
    """[(statement, table, whether the fast path must answer it for that table (False: for any
    table), or None: it may or may not)]."""
    out = fixed_cases()
    rng = random.Random(seed)
    out += [(q, t, None) for q, t in (random_case(rng) for _ in range(n_random))]
    out += [(q, t, None) for q, t in (near_case(rng) for _ in range(n_near))]
    return out


def key_of(tbl: str) -> Tuple[List[str], List[str]]:
    for t, cols, cls in TABLES:
        if t == tbl:
            return cols, cls
    return ["id"], ["int"]


COMPARE_SQL = """
SELECT c.i, f, u, k FROM json_to_recordset($1::json) AS c(i int, q text, tbl text, keycols text[], keycls text[]),
  LATERAL (SELECT _picoemu.key_bucket_fast(c.q, c.tbl, c.keycols, c.keycls, {n}) AS f,
                  _picoemu.key_bucket_full(c.q, c.tbl, c.keycols, c.keycls, {n}) AS u,
                  _picoemu.key_bucket(c.q, c.tbl, c.keycols, c.keycls, {n}) AS k) r
ORDER BY c.i""".format(n=BUCKETS)

# bound values for the second pass: $1 an integer, $2 a text, $3 unbound
PARAMS = json.dumps(["4242", "it's"])


def compare(port: int, user: str = "admin", password: str = "admin") -> Tuple[int, int, int, List[str]]:
    """Runs every case on the server; returns (cases, answered by the fast path, full answers that
    route, [problems])."""
    all_cases = cases()
    rows: List[Dict[str, Any]] = []
    for q, tbl, must in all_cases:
        for t in [tbl] + [x[0] for x in TABLES[:3] if x[0] != tbl]:
            cols, cls = key_of(t)
            rows.append({"i": len(rows), "q": q, "tbl": t, "keycols": cols, "keycls": cls,
                         "must": must if t == tbl or must is False else None})
    problems: List[str] = []
    answered = routed = 0
    c = w.Conn(port, user, password)
    try:
        for params in ("", PARAMS):
            ans = c.query("SELECT set_config('picoemu.bind_params', '%s', false)" % params.replace("'", "''"))
            if w.errors(ans):
                raise RuntimeError(w.errors(ans))
            payload = json.dumps([{k: r[k] for k in ("i", "q", "tbl", "keycols", "keycls")} for r in rows])
            ans = w.extended(c, COMPARE_SQL, [payload])
            if w.errors(ans):
                raise RuntimeError(w.errors(ans))
            got = w.rows(ans)
            if len(got) != len(rows):
                problems.append("%d answers for %d cases" % (len(got), len(rows)))
            for r, (i, f, u, k) in zip(rows, got):
                answered += f is not None
                routed += u is not None
                what = "%r on %s (bound %s): fast %s, full %s, key_bucket %s" % (
                    r["q"][:200], r["tbl"], params or "none", f, u, k)
                if k != u or (f is not None and f != u):
                    problems.append(what)
                elif r["must"] is True and f is None:
                    problems.append("the fast path did not answer " + what)
                elif r["must"] is False and f is not None:
                    problems.append("the fast path answered " + what)
    finally:
        c.close()
    return len(rows) * 2, answered, routed, problems
