#!/usr/bin/env python3
"""INSERT forms an application may send through picoroute, timed with psycopg 3: row by row
(`execute` per row, as an ORM without batching does), `executemany` (psycopg 3 pipelines the
statements, still one INSERT per row), one multi-row `INSERT ... VALUES (...), (...)`,
`INSERT ... SELECT FROM unnest(arrays)`, and `COPY ... FROM STDIN`. Each form inserts the same N
rows (default 2000) into `ins`; figures are medians of the runs (wall time, client side) and the
speed-up of each form over row by row.

Starts, on 127.0.0.1 only, an emulated Picodata cluster (2 replicasets x 2 instances, advertising
the private ports) and a PostgreSQL node with picoroute; every form runs once through the Picodata
fronts first (the audit must stay empty). Needs python3-psycopg.

Usage: bench/insert_forms.py [--rows 2000] [--runs 5] [--base-port B] [--port P] [--out FILE]
       [--quick]
Run as root or as the postgres user, after `make install`.
"""

import os
import statistics
import sys
import time

import psycopg

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import peers_bench as pb  # noqa: E402  (the emulator and node helpers)


def forms(conn, first, n):
    rows = [(first + i, "name_%d" % (first + i), i) for i in range(n)]
    out = {}
    with conn.cursor() as cur:
        t = time.monotonic()
        for r in rows:
            cur.execute("INSERT INTO ins (id, name, v) VALUES (%s, %s, %s)", r)
        out["row by row (execute per row)"] = time.monotonic() - t
        cur.execute("DELETE FROM ins WHERE id >= %s", (first,))
        t = time.monotonic()
        cur.executemany("INSERT INTO ins (id, name, v) VALUES (%s, %s, %s)", rows)
        out["executemany (pipelined, one INSERT per row)"] = time.monotonic() - t
        cur.execute("DELETE FROM ins WHERE id >= %s", (first,))
        t = time.monotonic()
        values = ", ".join(["(%s, %s, %s)"] * n)
        cur.execute("INSERT INTO ins (id, name, v) VALUES " + values, [x for r in rows for x in r])
        out["one multi-row INSERT ... VALUES"] = time.monotonic() - t
        cur.execute("DELETE FROM ins WHERE id >= %s", (first,))
        t = time.monotonic()
        cur.execute("INSERT INTO ins (id, name, v) SELECT * FROM unnest(%s::bigint[], %s::text[], "
                    "%s::bigint[])", ([r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]))
        out["INSERT ... SELECT FROM unnest(arrays)"] = time.monotonic() - t
        cur.execute("DELETE FROM ins WHERE id >= %s", (first,))
        t = time.monotonic()
        with cur.copy("COPY ins (id, name, v) FROM STDIN") as copy:
            for r in rows:
                copy.write_row(r)
        out["COPY ... FROM STDIN"] = time.monotonic() - t
        cur.execute("SELECT count(*) FROM ins WHERE id >= %s", (first,))
        if cur.fetchone()[0] != n:
            raise pb.BenchError("COPY did not store the %d rows" % n)
        cur.execute("DELETE FROM ins WHERE id >= %s", (first,))
    return out


def bench(args, emu, node):
    emu.cli("create-table", "ins", "--columns", "id int8, name text, v int8")
    node.psql(f"""
CREATE EXTENSION picoroute;
CREATE SERVER pico FOREIGN DATA WRAPPER picoroute
  OPTIONS (tier 'default', dbname '{pb.EMU_DB}', picodata_version '26.2.1', execution_options 'off');
CREATE USER MAPPING FOR CURRENT_USER SERVER pico
  OPTIONS (user '{pb.EMU_USER}', password '{pb.EMU_PASSWORD}');
CREATE FOREIGN TABLE ins (id bigint, name text, v bigint) SERVER pico OPTIONS (sharding_key 'id');
""")
    conn = psycopg.connect(node.dsn(), autocommit=True)
    audit = pb.front_pass(emu, node, lambda: forms(conn, 10_000_000, 20))
    conn.close()
    conn = psycopg.connect(node.dsn(), autocommit=True)
    forms(conn, 20_000_000, 50)  # warm: every connection of the session open
    samples = {}
    for run in range(args.runs):
        for form, secs in forms(conn, 30_000_000 + run * 1_000_000, args.rows).items():
            samples.setdefault(form, []).append(secs * 1000)
    conn.close()
    base = statistics.median(samples["row by row (execute per row)"])
    lines = [
        "## INSERT forms (bench/insert_forms.py)",
        "",
        f"{args.rows} rows of (bigint, text, bigint) into one foreign table over the emulator (2 "
        f"replicasets x 2 instances, private ports, batch_size 100), psycopg 3 in autocommit, "
        f"wall time on the client, median (min-max) of {args.runs} runs. Every form ran once "
        f"through the Picodata fronts first (`picoemu audit`: {audit}).",
        "",
        "| form | time | rows/s | speed-up over row by row |",
        "|---|---|---|---|",
    ]
    for form, s in samples.items():
        med = statistics.median(s)
        lines.append(f"| {form} | {med:.0f} ms ({min(s):.0f}-{max(s):.0f}) | "
                     f"{args.rows / med * 1000:.0f} | {base / med:.1f}x |")
    return "\n".join(lines) + "\n"


def main():
    ap = pb.small_bench_args(__doc__)
    ap.set_defaults(rows=2000, runs=5)
    args = pb.parse_small_args(ap)
    if args.quick:
        args.rows = 500
    pb.run_small_bench(args, lambda emu, node: bench(args, emu, node))


if __name__ == "__main__":
    main()
