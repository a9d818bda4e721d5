"""Keeping every instance in step with the state file: the catalog file of every instance, the
bucket ranges, settings and topology-dependent objects of every running master (each master's
objects rebuilt when their SQL changed), and the standbys' replay. Every wait is bounded."""

import os
import time
from typing import Callable, Collection, Optional, TypeVar

from .. import pg
from ..errors import EmuError
from ..sqlgen import catalog as catalog_sql
from ..sqlgen import topology as topology_sql
from ..sqlgen.text import lit
from ..state import Inst
from .core import Cluster, log

CATALOG_FILE = "picoemu_catalog.json"
T = TypeVar("T")


def run_again_on_deadlock(run: Callable[[], T], tries: int = 10) -> T:
    """Runs run() (one transaction of picoemu's own) again when PostgreSQL chose it as the victim
    of a deadlock with the statements of the load, or its lock wait timed out: it was rolled back
    as a whole, so running it again is safe. A client statement chosen as the victim is run again
    by its front (40P01)."""
    for attempt in range(tries):
        try:
            return run()
        except pg.SqlError as exc:
            text = str(exc)
            if attempt == tries - 1 or ("deadlock detected" not in text and "lock timeout" not in text):
                raise
            log("picoemu's own transaction met a lock conflict with the load, running it again (%d): %s"
                % (attempt + 1, text.splitlines()[0][:200]))
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("not reached")


def serving_port(cl: Cluster, rs_name: str) -> int:
    """The port other instances reach replicaset rs_name at: its master's, running or not. A
    Picodata coordinator sends a statement's part to the replicaset's master (vshard callrw,
    read_preference leader, the default), so while that master is stopped the part fails; it is
    not read from a replica."""
    port: int = cl.require().master(rs_name)["port"]
    return port


def replica_port(cl: Cluster, rs_name: str) -> Optional[int]:
    """The private port of the replica the master of rs_name reads its own part from when a
    session asks for replica reads (the first member that is not the master, running or not:
    while it is stopped such reads fail, as Picodata's wait for a replica times out), or None
    when the replicaset has no replica."""
    st = cl.require()
    master = st.replicaset(rs_name)["master"]
    return next((i["port"] for i in st.members(rs_name) if i["name"] != master and not i["expelled"]), None)


def write_catalog_files(cl: Cluster) -> None:
    """Writes picoemu_catalog.json into the data directory of every instance that is not expelled,
    running or not, standbys included: the catalog views of every instance read it."""
    st = cl.require()
    doc = catalog_sql.catalog_doc(st)
    for i in st.active_instances():
        d = cl.datadir(i)
        if os.path.isdir(d):
            cl.write_file_atomic(os.path.join(d, CATALOG_FILE), doc, 0o600)


def sync(cl: Cluster, wait: bool = True, first: Collection[str] = ()) -> None:
    """Writes the bucket ranges (and, when they changed, the topology-dependent objects) on every
    running master, then the catalog file of every instance, then waits until the running
    standbys have replayed it. The catalog comes last: a client that reads a new master or
    owner in it finds that master's objects already rebuilt (a just promoted master would
    otherwise still reach its old master through picoemu_self)."""
    st = cl.require()
    ports = {r["name"]: serving_port(cl, r["name"]) for r in st.live_replicasets()}
    cat = catalog_sql.catalog_sql(st)
    order = sorted(st.live_replicasets(), key=lambda r: r["name"] not in first)
    for r in order:
        m = st.master(r["name"])
        if not cl.running(m):
            continue
        ddl = topology_sql.ddl_sql(st, r["name"], ports, replica_port(cl, r["name"]))
        h = topology_sql.ddl_hash(ddl)
        what = "master %s" % m["name"]
        cur = pg.psql_value(m["port"], "SELECT value FROM _picoemu.meta WHERE key = 'ddl_hash'", what=what)
        script = "BEGIN;\n" + cat
        if cur != h:
            script += ddl + ("INSERT INTO _picoemu.meta VALUES ('ddl_hash', %s) ON CONFLICT (key) "
                             "DO UPDATE SET value = EXCLUDED.value;\n" % lit(h))
        script += "COMMIT;\n"
        port = m["port"]
        run_again_on_deadlock(lambda: pg.psql(port, script, what=what))
    write_catalog_files(cl)
    if wait:
        wait_replicas(cl)


def wait_replicas(cl: Cluster) -> None:
    st = cl.require()
    for r in st.live_replicasets():
        m = st.master(r["name"])
        if not cl.running(m):
            continue
        lsn = pg.psql_value(m["port"], "SELECT pg_current_wal_insert_lsn()", what="master %s" % m["name"])
        for i in st.members(r["name"]):
            if i is m or i["expelled"] or not cl.running(i):
                continue
            wait_replay(cl, i, lsn)


def wait_replay(cl: Cluster, inst: Inst, lsn: Optional[str], timeout: int = pg.REPLAY_TIMEOUT) -> None:
    deadline = time.time() + timeout
    delay = 0.02
    while True:
        got = pg.psql_value(inst["port"], "SELECT pg_last_wal_replay_lsn() >= '%s'::pg_lsn" % lsn,
                            what="replica %s" % inst["name"], timeout=20)
        if got == "t":
            return
        if time.time() > deadline:
            raise EmuError("replica %s has not replayed its master's WAL up to %s after %ds (see %s)"
                           % (inst["name"], lsn, timeout, cl.logfile(inst)))
        time.sleep(delay)
        delay = min(delay * 2, 0.25)
