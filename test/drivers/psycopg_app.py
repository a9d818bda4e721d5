#!/usr/bin/env python3
"""An application written for PostgreSQL, run unchanged against picoroute foreign tables with
psycopg 3 (Debian's python3-psycopg): INSERT ... RETURNING, prepared statements past the switch to
generic plans, and errors caught by their PostgreSQL classes. Prints one line per check, "ok ..."
or "not ok ...", and exits 1 when a check failed. Run by test/t/072_drivers.pl with a libpq
connection string as its only argument; the foreign table app_users (id bigint, name text, score
bigint DEFAULT 7) must be empty."""
import sys

import psycopg
from psycopg import errors

failed = 0


def check(ok, what):
    global failed
    print("%s %s" % ("ok" if ok else "not ok", what))
    if not ok:
        failed += 1


def expect_error(conn, cls, sqlstate, sql, params=None):
    try:
        with conn.cursor() as cur:
            cur.execute(sql, params)
        check(False, "%s raises %s" % (sql, cls.__name__))
    except cls as e:
        check(e.sqlstate == sqlstate, "%s raises %s (%s)" % (sql, cls.__name__, e.sqlstate))
    except psycopg.Error as e:
        check(False, "%s raises %s, not %s %s: %s" % (sql, cls.__name__, type(e).__name__, e.sqlstate, e))


def main():
    conn = psycopg.connect(sys.argv[1], autocommit=True)
    with conn.cursor() as cur:
        # What an ORM sends for every insert: the key and the local default come back.
        cur.execute("INSERT INTO app_users (id, name) VALUES (%s, %s) RETURNING id, score", (1, "ann"))
        check(cur.fetchall() == [(1, 7)], "INSERT ... RETURNING id, score")
        cur.executemany("INSERT INTO app_users (id, name, score) VALUES (%s, %s, %s) RETURNING id",
                        [(2, "bob", 5), (3, "cy", 6)], returning=True)
        ids = []
        while True:
            ids += [r[0] for r in cur.fetchall()]
            if not cur.nextset():
                break
        check(ids == [2, 3], "executemany(returning=True): %r" % ids)
        cur.execute("INSERT INTO app_users (id, name) VALUES (4, 'di'), (5, 'ed') RETURNING *")
        check(cur.fetchall() == [(4, "di", 7), (5, "ed", 7)], "a multi-row INSERT ... RETURNING *")
        # A prepared statement run more than five times (the plan cache's generic plan).
        for i in range(8):
            cur.execute("UPDATE app_users SET name = %s WHERE id = %s", ("n%d" % i, 1), prepare=True)
        cur.execute("SELECT name FROM app_users WHERE id = %s", (1,), prepare=True)
        check(cur.fetchone() == ("n7",), "a prepared UPDATE past the generic plan")
    expect_error(conn, errors.UniqueViolation, "23505",
                 "INSERT INTO app_users (id, name) VALUES (%s, %s)", (1, "again"))
    expect_error(conn, errors.NotNullViolation, "23502",
                 "INSERT INTO app_users (id, name) VALUES (%s, NULL)", (9,))
    expect_error(conn, errors.NumericValueOutOfRange, "22003",
                 "UPDATE app_users SET score = score + 9223372036854775807 WHERE id = 1")
    expect_error(conn, errors.DivisionByZero, "22012",
                 "SELECT * FROM picoroute_exec('default', 1, 'SELECT \"score\" / 0 FROM \"app_users\" "
                 "WHERE \"id\" = 1', '{}'::text[]) AS t(x bigint)")
    # A text picoroute cannot place stays XX000.
    expect_error(conn, errors.InternalError_, "XX000",
                 "SELECT * FROM picoroute_exec('default', 1, 'SELEKT 1', '{}'::text[]) AS t(x bigint)")
    with conn.cursor() as cur:
        cur.execute("SELECT count(*) FROM app_users")
        check(cur.fetchone() == (5,), "the failed statements stored nothing")
    conn.close()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
