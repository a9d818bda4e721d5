"""The self-test's helpers on a cluster: picoemu commands (as subprocesses: the command is what is
tested), the status with private ports, SQL on an instance (through the wire protocol, as picoemu's
own psql sessions do: user admin, application_name picoemu; psql itself where its error text is
checked), the storage counters that show which instances a statement read, the catalog and the
storages checked, and the owner of a key computed from the status (as `picoemu locate` computes it).

Each helper counts its calls and their seconds (TIMES), for the self-test's summary."""

import json
import os
import subprocess
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar

from picoemu_lib import caps as emu_caps
from picoemu_lib import hashing, pg
from picoemu_lib import pgwire as w
from picoemu_lib.paths import PICOEMU
from picoemu_lib.state import Doc

BASE = int(os.environ.get("PICOEMU_SELFTEST_PORT", "57400"))
# The emulated builds of the two clusters, chosen by what they can do (never by name): the main
# cluster's has every capability of the table (it prunes by bucket_id: 26.2.1-rc2), the old one's none
# (25.5.10).
FULL = [b for b in emu_caps.BUILDS if all(emu_caps.capabilities(b).values())][-1]
BARE = [b for b in emu_caps.BUILDS if not any(emu_caps.capabilities(b).values())][0]
# What pg.psql sends (the limits of picoemu's own SQL): through a front, Picodata's startup options
# take none of these names, and the front only logs them.
OPTIONS = "-c statement_timeout=%ds -c lock_timeout=30s -c client_min_messages=warning" % pg.SQL_TIMEOUT
TIMES: Dict[str, List[float]] = {}  # helper -> [calls, seconds]
T = TypeVar("T")


def timed(what: str, run: Callable[[], T]) -> T:
    t0 = time.monotonic()
    try:
        return run()
    finally:
        entry = TIMES.setdefault(what, [0, 0.0])
        entry[0] += 1
        entry[1] += time.monotonic() - t0


def command_of(args: Sequence[str]) -> str:
    """The sub-command in picoemu's arguments: the first that is neither a common option (--dir,
    --base-port) nor its value."""
    it = iter(args)
    for a in it:
        if a in ("--dir", "--base-port"):
            next(it, None)
        elif not a.startswith("-"):
            return a
    return "?"


def emu(d: str, *args: str, expect_ok: bool = True) -> "subprocess.CompletedProcess[str]":
    """Runs `picoemu --dir d args...`; a failure is an error unless expect_ok is False."""
    res = timed("picoemu " + command_of(args),
                lambda: subprocess.run([PICOEMU, "--dir", d] + list(args), capture_output=True, text=True,
                                       timeout=150))
    if expect_ok and res.returncode != 0:
        raise RuntimeError("picoemu %s failed: %s%s" % (" ".join(args), res.stdout, res.stderr))
    return res


def status(d: str) -> Doc:
    """The status, with each instance's "port" replaced by its private PostgreSQL port: the checks of
    the self-test inspect the servers with PostgreSQL SQL, which the Picodata front refuses. The
    advertised port (the front) stays as "front_port"; the front scenario tests the front itself."""
    s: Doc = json.loads(emu(d, "status", "--json").stdout)
    for i in s.get("instances", []):
        i["front_port"], i["port"] = i["port"], i["private_port"]
    return s


class SqlError(Exception):
    """An error answered to q(): its SQLSTATE and message."""


def q(port: int, sql: str, user: str = "admin") -> List[List[str]]:
    """Runs sql (one statement or several) on 127.0.0.1:port as user (its password is its name) in a
    session of its own; returns the rows as pg.psql returns them: each value as text ("" for NULL),
    a row of one empty value dropped (psql prints an empty line). SqlError when the server answers
    an error."""
    def run() -> List[List[str]]:
        c = w.Conn(port, user, user, options=OPTIONS, application_name="picoemu", timeout=pg.SQL_TIMEOUT + 15)
        try:
            ans = c.query(sql)
        finally:
            c.close()
        errs = w.errors(ans)
        if errs:
            raise SqlError("SQL on port %d failed: %s %s" % (port, errs[0].get("C"), errs[0].get("M")))
        rows = [["" if v is None else v for v in row] for row in w.rows(ans)]
        return [row for row in rows if row != [""]]  # psql prints such a row as an empty line, dropped
    return timed("sql", run)


def q1(port: int, sql: str, user: str = "admin") -> Optional[str]:
    """The first value of the first row of q(), None when there is none (a single NULL too)."""
    rows = q(port, sql, user)
    return rows[0][0] if rows else None


def qv(port: int, sql: str, user: str = "admin") -> str:
    """q1() where a value must come: SqlError when none does."""
    v = q1(port, sql, user)
    if v is None:
        raise SqlError("SQL on port %d returned no value: %s" % (port, sql[:200]))
    return v


def qerr(port: int, sql: str, user: str = "admin", options: Optional[str] = None) -> str:
    """Runs sql with psql, returns its error text ('' when it succeeded): what a psql user reads."""
    env = dict(os.environ, PGPASSWORD=user)
    if options:
        env["PGOPTIONS"] = options
    res = timed("psql", lambda: subprocess.run(
        [pg.pgbin("psql"), "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", str(port), "-U", user,
         "-d", "picodata", "-c", sql], capture_output=True, text=True, timeout=60, env=env))
    return res.stderr.strip() if res.returncode else ""


def psql(port: int, sql: str, user: str = "admin") -> List[List[str]]:
    """Runs sql with psql (a script: its statements one by one, each in a transaction of its own)."""
    return timed("psql", lambda: pg.psql(port, sql, user=user, password=user))


CATALOG_DUMP = """
SELECT 'i', name, uuid, raft_id::text, replicaset_name, replicaset_uuid, current_state::text, target_state::text,
       failure_domain::text, tier FROM _pico_instance
UNION ALL SELECT 'p', raft_id::text, address, connection_type, '', '', '', '', '', '' FROM _pico_peer_address
UNION ALL SELECT 'r', name, uuid, current_master_name, target_master_name, tier, weight::text, state,
       weight_origin, current_config_version::text FROM _pico_replicaset
UNION ALL SELECT 't', name, replication_factor::text, bucket_count::text, is_default::text,
       vshard_bootstrapped::text, current_vshard_config_version::text, '', '', '' FROM _pico_tier
UNION ALL SELECT 'x', name, distribution::text, format::text, '', '', '', '', '', '' FROM _pico_table
UNION ALL SELECT 'b', _pico_bucket(t.name)::text, '', '', '', '', '', '', '', '' FROM _pico_tier t
ORDER BY 1, 2, 3, 4"""


COUNTER_SQL = ("SELECT seq_scan + coalesce(idx_scan, 0) FROM pg_stat_user_tables WHERE schemaname = "
               "'_picoemu_local' AND relname = 'users'")


def counter(port: int) -> int:
    return int(qv(port, COUNTER_SQL))


def touched(ports: Sequence[int], run: Callable[[], object], settle: float = 1.5) -> List[int]:
    """Runs run(), then returns the ports whose storage counters for users moved (statistics are
    published by the other sessions at most about once a second: poll, then let them settle)."""
    before = {p: counter(p) for p in ports}
    run()
    deadline = time.time() + 5
    moved: List[int] = []
    while time.time() < deadline and not moved:
        time.sleep(0.2)
        moved = [p for p in ports if counter(p) != before[p]]
    time.sleep(settle)
    return sorted(p for p in ports if counter(p) != before[p])


def running_ports(s: Doc) -> List[int]:
    return [i["port"] for i in s["instances"] if i["running"]]


def catalog_consistent(tc: Any, d: str, name: str) -> Tuple[Doc, List[List[str]]]:
    """Every running instance shows the same catalog (a check of tc); returns the status and it."""
    s = status(d)
    dumps = {i["name"]: q(i["port"], CATALOG_DUMP, "picoroute") for i in s["instances"] if i["running"]}
    first = next(iter(dumps.values()))
    same = all(v == first for v in dumps.values())
    with tc.subTest("%s: catalog identical on %d running instances" % (name, len(dumps))):
        tc.assertTrue(same, "" if same else json.dumps({k: v[:3] for k, v in dumps.items()})[:800])
    return s, first


def total_counts(s: Doc, table: str = "users") -> Dict[str, int]:
    return {i["name"]: int(qv(i["port"], "SELECT count(*) FROM %s" % table))
            for i in s["instances"] if i["running"]}


def storage_ok(s: Doc, table: str = "users") -> Dict[str, str]:
    """Every running instance stores only rows of buckets its replicaset owns: {instance: rows} of
    those that do not."""
    bad = {}
    for i in s["instances"]:
        if not i["running"]:
            continue
        n = q1(i["port"], "SELECT count(*) FROM _picoemu_local.%s x WHERE NOT EXISTS (SELECT 1 FROM "
               "_picoemu.bucket_range r WHERE x.bucket_id BETWEEN r.bucket_start AND r.bucket_end AND "
               "r.replicaset_name = %s)" % (table, "'%s'" % i["replicaset"]))
        if n != "0":
            bad[i["name"]] = str(n)
    return bad


def master_port(s: Doc, rs: str) -> int:
    m = next(r["master"] for r in s["replicasets"] if r["name"] == rs)
    port: int = next(i["port"] for i in s["instances"] if i["name"] == m)
    return port


def port_of(s: Doc, name: str) -> int:
    port: int = next(i["port"] for i in s["instances"] if i["name"] == name)
    return port


def owner(s: Doc, key: Sequence[object], tier: str = "default") -> Tuple[int, str]:
    """(bucket, replicaset) of a sharding key of integers or texts in a tier of the status: what
    `picoemu locate` prints (its bucket by test/tools/bucket_hash_reference.py, its owner from the
    tier's ranges), computed here for many keys at once. Doubles are left to locate (their rule is
    the cluster's)."""
    t = next(x for x in s["tiers"] if x["name"] == tier)
    b = hashing.bucket_id(key, t["bucket_count"])
    return b, next(r["replicaset"] for r in t["buckets"] if r["start"] <= b <= r["end"])
