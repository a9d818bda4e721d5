#!/usr/bin/env python3
"""Probes an emulated instance's Picodata front for its prepared-statement rules (picoemu_lib.stmts) with
raw protocol messages, and prints one JSON object of observations (test/t/064_prepared.pl checks them):

- a named statement prepared before DDL (picoemu create-table) fails at Bind with 42999 and
  Picodata's text for a session that asked for pico_stmt_invalidation=true (on 26.1 and later), and
  runs for a session that did not; closed and prepared again, it runs;
- DEALLOCATE name closes a named statement (its name can be prepared again);
- pg_statement_max: the Parse past the limit fails with Picodata's text.

Usage: stmt_probe.py --picoemu PATH --dir DIR --port PORT --user U --password P --table T
"""

import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List, Sequence

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))

from picoemu_lib import pgwire as w  # noqa: E402

Out = Dict[str, Any]


def run_named(conn: w.Conn, name: str, params: Sequence[object]) -> List[w.Answer]:
    conn.send(w.bind(params, stmt=name) + w.describe() + w.execute() + w.sync())
    return conn.until_ready()


def prepare(conn: w.Conn, name: str, sql: str) -> List[w.Answer]:
    conn.send(w.parse(sql, name=name) + w.sync())
    return conn.until_ready()


def summary(answers: List[w.Answer]) -> Out:
    errs = w.errors(answers)
    if errs:
        return {"error": errs[0].get("C"), "message": errs[0].get("M")}
    return {"rows": w.rows(answers)}


def picoemu(a: argparse.Namespace, *args: str) -> None:
    subprocess.run([a.picoemu, "--dir", a.dir] + list(args), check=True, capture_output=True, timeout=120)
    time.sleep(0.3)  # the fronts look at state.json at most every 0.1 s


def invalidation(a: argparse.Namespace, out: Out) -> None:
    sql = 'SELECT "id" FROM "%s" WHERE "id" = $1' % a.table
    asked = w.Conn(a.port, a.user, a.password, options="pico_stmt_invalidation=true")
    direct = w.Conn(a.port, a.user, a.password, extra={"pico_stmt_invalidation": "true"})
    plain = w.Conn(a.port, a.user, a.password)
    for key, conn in (("asked", asked), ("direct", direct), ("plain", plain)):
        out[key + "_prepare"] = summary(prepare(conn, "probe_1", sql))
        out[key + "_before"] = summary(run_named(conn, "probe_1", [1]))
    picoemu(a, "create-table", "probe_ddl", "--columns", "id int8")
    for key, conn in (("asked", asked), ("direct", direct), ("plain", plain)):
        out[key + "_after"] = summary(run_named(conn, "probe_1", [1]))
    asked.send(w.close(name="probe_1") + w.sync())
    asked.until_ready()
    out["asked_reprepare"] = summary(prepare(asked, "probe_1", sql))
    out["asked_rerun"] = summary(run_named(asked, "probe_1", [1]))
    out["deallocate"] = summary(asked.query("DEALLOCATE probe_1"))
    out["prepare_after_deallocate"] = summary(prepare(asked, "probe_1", sql))
    for conn in (asked, direct, plain):
        conn.close()


def statement_max(a: argparse.Namespace, out: Out) -> None:
    picoemu(a, "set", "pg_statement_max", "3")
    conn = w.Conn(a.port, a.user, a.password)
    results = [summary(prepare(conn, "probe_max_%d" % i, "SELECT 1")) for i in range(4)]
    out["statement_max"] = results
    conn.close()
    picoemu(a, "set", "pg_statement_max", "100000")


def main() -> None:
    p = argparse.ArgumentParser()
    for name in ("picoemu", "dir", "user", "password", "table"):
        p.add_argument("--" + name, required=True)
    p.add_argument("--port", type=int, required=True)
    a = p.parse_args()
    out: Out = {}
    invalidation(a, out)
    statement_max(a, out)
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
