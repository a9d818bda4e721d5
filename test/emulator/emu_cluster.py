"""Cluster operations of the emulator: building instances, keeping every running instance's catalog
in step with the state file, topology changes and moving sharded rows with their buckets."""

import contextlib
import datetime
import fcntl
import json
import os
import signal
import subprocess
import sys
import time

import emu_caps
import emu_pg as pg
import emu_sql as sqlgen
from emu_state import (ADMIN_PASSWORD, ADMIN_USER, DB_NAME, VERSIONS, EmuError, State, compress, expand,
                       new_state, rebalance, segments, target_counts)


CATALOG_FILE = "picoemu_catalog.json"
TRANSFER_FILE = "picoemu_transfer.json"


def log(msg):
    print("picoemu: " + msg, flush=True)


def now_iso():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")



def run_again_on_deadlock(run, tries=10):
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

class Cluster:
    def __init__(self, directory):
        self.dir = os.path.abspath(directory)
        self.state_path = os.path.join(self.dir, "state.json")
        self.st = State.load(self.state_path) if os.path.isdir(self.dir) else None
        self.owner = pg.server_owner()

    # ---- files and locking -------------------------------------------------------------------
    def require(self):
        if self.st is None:
            raise EmuError("no cluster in %s (run `picoemu up` first)" % self.dir)
        return self.st

    def save(self):
        self.st.save(chown=self.owner if pg.as_root() else None)

    @contextlib.contextmanager
    def locked(self, timeout=300):
        if not os.path.isdir(self.dir):
            yield
            return
        path = os.path.join(self.dir, ".lock")
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.time() + timeout
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.time() > deadline:
                        raise EmuError("another picoemu command holds %s for more than %ds" % (path, timeout))
                    time.sleep(0.1)
            # another command may have changed the state while we waited
            self.st = State.load(self.state_path)
            yield
        finally:
            os.close(fd)

    def mkdir(self, path):
        os.makedirs(path, exist_ok=True)
        if pg.as_root():
            os.chown(path, *self.owner)

    def write_file(self, path, text, mode=0o644):
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        if pg.as_root():
            os.chown(path, *self.owner)

    def ensure_dir(self):
        self.mkdir(self.dir)
        if pg.run_server_cmd(["test", "-w", self.dir, "-a", "-x", self.dir], "/", check=False).returncode:
            raise EmuError("the server user cannot write to %s (its parents must be traversable by "
                           "`postgres`); choose a --dir under /tmp" % self.dir)

    def inst_dir(self, inst):
        return os.path.join(self.dir, inst["name"])

    def datadir(self, inst):
        return os.path.join(self.dir, inst["name"], "data")

    def logfile(self, inst):
        return os.path.join(self.dir, inst["name"], "postgres.log")

    def running(self, inst):
        return pg.is_running(self.datadir(inst))

    # ---- the fronts (emu_front.py: the advertised pgproto port of each instance) --------------------
    def front_pidfile(self, inst):
        return os.path.join(self.inst_dir(inst), "front.pid")

    def front_log(self, inst):
        return os.path.join(self.inst_dir(inst), "front.log")

    @staticmethod
    def _front_pid(pidfile):
        try:
            with open(pidfile) as f:
                pid = int(f.read().strip())
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                return pid if b"emu_front.py" in f.read() else None
        except (OSError, ValueError):
            return None

    def front_running(self, inst):
        return self._front_pid(self.front_pidfile(inst)) is not None

    def start_front(self, inst, timeout=15):
        if self.front_running(inst):
            return
        pidfile = self.front_pidfile(inst)
        if os.path.exists(pidfile):
            os.unlink(pidfile)
        port = inst.get("pgproto_port", inst["port"])
        script = os.path.join(os.path.dirname(os.path.realpath(__file__)), "emu_front.py")
        python = sys.executable
        if pg.as_root() and os.path.exists("/usr/bin/python3"):
            python = "/usr/bin/python3"  # root's interpreter may live where postgres cannot read
        cmd = (["runuser", "-u", "postgres", "--"] if pg.as_root() else []) + [
            python, script, "--dir", self.dir, "--instance", inst["name"], "--pid-file", pidfile]
        with open(os.devnull, "rb") as devnull:
            subprocess.Popen(cmd, stdin=devnull, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             cwd=self.dir, start_new_session=True, close_fds=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.front_running(inst) and not pg.port_is_free(port):
                return
            time.sleep(0.05)
        tail = ""
        try:
            with open(self.front_log(inst), errors="replace") as f:
                tail = "".join(f.readlines()[-10:])
        except OSError:
            pass
        raise EmuError("the front of instance %s did not listen on port %d within %ds (see %s):\n%s"
                       % (inst["name"], port, timeout, self.front_log(inst), tail))

    def stop_front_pidfile(self, pidfile, timeout=10):
        pid = self._front_pid(pidfile)
        if pid is None:
            return False
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
        deadline = time.time() + timeout
        while time.time() < deadline and self._front_pid(pidfile) == pid:
            time.sleep(0.05)
        if self._front_pid(pidfile) == pid:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
            time.sleep(0.1)
        return True

    def stop_front(self, inst):
        self.stop_front_pidfile(self.front_pidfile(inst))

    def stop_server(self, inst):
        """Stops an instance: its front first (clients see the address go away), then its server."""
        self.stop_front(inst)
        pg.pg_stop(self.datadir(inst), self.dir)

    # ---- building servers --------------------------------------------------------------------
    def conf_text(self, name, rs, port, primary_port=None):
        st = self.st
        lines = [
            "# generated by picoemu; rewritten on every topology change",
            "listen_addresses = '127.0.0.1'",
            "port = %d" % port,
            "unix_socket_directories = ''",
            "max_connections = 100",
            "shared_buffers = 16MB",
            "wal_level = replica",
            "max_wal_senders = 16",
            "wal_keep_size = '256MB'",
            "hot_standby = on",
            "hot_standby_feedback = on",
            "wal_retrieve_retry_interval = '200ms'",
            "fsync = off",
            "constraint_exclusion = on",
            "password_encryption = '%s'" % ("md5" if st and st.d["auth"] == "md5" else "scram-sha-256"),
            "log_line_prefix = '%m [%p] %q%a '",
            "logging_collector = off",
            "autovacuum_naptime = '10s'",
            "cluster_name = '%s'" % name,
            "picoemu.instance = '%s'" % name,
            "picoemu.replicaset = '%s'" % rs,
        ]
        if st:  # what the emulated Picodata build can do (see emu_state.VERSIONS)
            lines += ["picoemu.picodata_version = '%s'" % st.version,
                      "picoemu.version_text = '%s'" % emu_caps.version_function_text(st.version),
                      "picoemu.forward = %s" % ("on" if st.cap("forward") else "off"),
                      "picoemu.local_exec = %s" % ("on" if st.cap("local_execution") else "off"),
                      "picoemu.replica_reads = %s" % ("on" if st.cap("read_preference") else "off"),
                      "picoemu.hash_rule = '%s'" % st.hash_rule()]
            if st.d.get("private_pgproto"):  # up --private-pgproto (private_pgproto.c)
                lines += ["shared_preload_libraries = '%s'" % self.private_pgproto_lib(),
                          "plan_cache_mode = force_custom_plan"]
        if primary_port:
            lines.append("primary_conninfo = 'host=127.0.0.1 port=%d user=%s password=%s "
                         "application_name=%s connect_timeout=5'" % (primary_port, ADMIN_USER,
                                                                     ADMIN_PASSWORD, name))
        return "\n".join(lines) + "\n"

    def private_pgproto_lib(self):
        return os.path.join(self.dir, "private_pgproto.so")

    def build_private_pgproto(self):
        """Compiles private_pgproto.c (up --private-pgproto) into the cluster's directory, against
        the server headers of the PostgreSQL that runs the instances."""
        version = pg.run_server_cmd([pg.pgbin("postgres"), "--version"], "/").stdout.split()[-1]
        major = version.split(".")[0]
        dirs = ["/usr/include/postgresql/%s/server" % major]
        try:
            out = subprocess.run(["pg_config", "--includedir-server"], capture_output=True, text=True,
                                 timeout=10)
            dirs.insert(0, out.stdout.strip())
        except (OSError, subprocess.TimeoutExpired):
            pass
        inc = next((d for d in dirs if d and os.path.exists(os.path.join(d, "postgres.h"))), None)
        if inc is None:
            raise EmuError("--private-pgproto needs the PostgreSQL %s server headers (postgresql-server-dev-%s)"
                           % (major, major))
        src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "private_pgproto.c")
        out = subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-I", inc, "-o", self.private_pgproto_lib(), src],
                             capture_output=True, text=True, timeout=120)
        if out.returncode != 0:
            raise EmuError("cannot compile %s: %s" % (src, out.stderr[-2000:]))
        os.chmod(self.private_pgproto_lib(), 0o755)

    def write_conf(self, inst, primary=None):
        d = self.datadir(inst)
        self.write_file(os.path.join(d, "picoemu.conf"),
                        self.conf_text(inst["name"], inst["replicaset"], inst["port"],
                                       primary["port"] if primary else None), 0o600)
        signal = os.path.join(d, "standby.signal")
        if primary:
            self.write_file(signal, "", 0o600)
        elif os.path.exists(signal):
            os.unlink(signal)

    def template_dir(self):
        return os.path.join(self.dir, "template")

    def make_template(self):
        tdir = self.template_dir()
        data = os.path.join(tdir, "data")
        if os.path.exists(os.path.join(data, "PG_VERSION")):
            return
        pg.remove_tree(tdir)
        self.mkdir(tdir)
        pwfile = os.path.join(tdir, "pw")
        self.write_file(pwfile, ADMIN_PASSWORD + "\n", 0o600)
        auth = "md5" if self.st.d["auth"] == "md5" else "scram-sha-256"
        pg.run_server_cmd([pg.pgbin("initdb"), "-D", data, "-U", ADMIN_USER, "--pwfile", pwfile,
                           "-E", "UTF8", "--locale=C", "-A", auth, "-N"], self.dir, timeout=120)
        os.unlink(pwfile)
        with open(os.path.join(data, "postgresql.conf"), "a") as f:
            f.write("\ninclude_if_exists = 'picoemu.conf'\n")
        self.write_file(os.path.join(data, "pg_hba.conf"),
                        "# generated by picoemu: password authentication on loopback only\n"
                        "host all all 127.0.0.1/32 %s\n"
                        "host replication all 127.0.0.1/32 %s\n" % (auth, auth), 0o600)
        port = pg.free_port()
        self.write_file(os.path.join(data, "picoemu.conf"), self.conf_text("template", "template", port), 0o600)
        logf = os.path.join(tdir, "postgres.log")
        pg.pg_start(data, logf, self.dir)
        try:
            pg.wait_ready(port, "template server")
            pg.psql(port, "CREATE DATABASE %s" % DB_NAME, dbname="postgres", what="template server")
            pg.psql(port, sqlgen.static_schema_sql(self.st.d["auth"], self.st.version), what="template server",
                    single_transaction=True)
        finally:
            pg.pg_stop(data, self.dir)

    def check_port(self, inst, wait=0):
        deadline = time.time() + wait
        ports = [inst["port"]] + ([inst["pgproto_port"]] if "pgproto_port" in inst and not self.front_running(inst) else [])
        for port in ports:
            while not pg.port_is_free(port) and time.time() < deadline:
                time.sleep(0.5)
            if not pg.port_is_free(port):
                raise EmuError("port %d for instance %s is in use on 127.0.0.1 (choose another "
                               "--base-port or PICOEMU_BASE_PORT)" % (port, inst["name"]))

    def create_master(self, inst):
        self.check_port(inst)
        self.mkdir(self.inst_dir(inst))
        pg.remove_tree(self.datadir(inst))
        pg.run_server_cmd(["cp", "-a", os.path.join(self.template_dir(), "data"), self.datadir(inst)],
                          self.dir)
        self.write_conf(inst)
        self.start_server(inst)

    def create_replica(self, inst, master, start=True):
        """(Re)builds inst as a streaming standby of master with pg_basebackup."""
        self.mkdir(self.inst_dir(inst))
        if self.running(inst):
            self.stop_server(inst)
        self.stop_front(inst)
        pg.remove_tree(self.datadir(inst))
        pg.run_server_cmd([pg.pgbin("pg_basebackup"), "-h", pg.HOST, "-p", str(master["port"]),
                           "-U", ADMIN_USER, "-D", self.datadir(inst), "-X", "stream", "-c", "fast",
                           "--no-sync", "-w"], self.dir, timeout=300,
                          env={"PGPASSWORD": ADMIN_PASSWORD, "PGCONNECT_TIMEOUT": "10"})
        self.write_conf(inst, primary=master)
        if start:
            self.check_port(inst, wait=70)
            self.start_server(inst)

    def start_server(self, inst):
        pg.pg_start(self.datadir(inst), self.logfile(inst), self.dir)
        pg.wait_ready(inst["port"], "instance %s" % inst["name"])
        self.start_front(inst)

    # ---- catalog synchronisation ---------------------------------------------------------------
    def serving_port(self, rs_name):
        """The port other instances reach replicaset rs_name at: its master's, running or not. A
        Picodata coordinator sends a statement's part to the replicaset's master (vshard callrw,
        read_preference leader, the default), so while that master is stopped the part fails; it is
        not read from a replica."""
        return self.st.master(rs_name)["port"]

    def replica_port(self, rs_name):
        """The private port of the replica the master of rs_name reads its own part from when a
        session asks for replica reads (the first member that is not the master, running or not:
        while it is stopped such reads fail, as Picodata's wait for a replica times out), or None
        when the replicaset has no replica."""
        master = self.st.replicaset(rs_name)["master"]
        return next((i["port"] for i in self.st.members(rs_name) if i["name"] != master and not i["expelled"]),
                    None)

    def write_catalog_files(self):
        """Writes picoemu_catalog.json into the data directory of every instance that is not expelled,
        running or not, standbys included: the catalog views of every instance read it."""
        doc = sqlgen.catalog_doc(self.st)
        for i in self.st.active_instances():
            d = self.datadir(i)
            if os.path.isdir(d):
                self.write_file_atomic(os.path.join(d, CATALOG_FILE), doc, 0o600)

    def write_file_atomic(self, path, text, mode=0o644):
        tmp = path + ".tmp"
        self.write_file(tmp, text, mode)
        os.replace(tmp, path)

    def sync(self, wait=True, first=()):
        """Writes the bucket ranges (and, when they changed, the topology-dependent objects) on every
        running master, then the catalog file of every instance, then waits until the running
        standbys have replayed it. The catalog comes last: a client that reads a new master or
        owner in it finds that master's objects already rebuilt (a just promoted master would
        otherwise still reach its old master through picoemu_self)."""
        st = self.st
        ports = {r["name"]: self.serving_port(r["name"]) for r in st.live_replicasets()}
        cat = sqlgen.catalog_sql(st)
        order = sorted(st.live_replicasets(), key=lambda r: r["name"] not in first)
        for r in order:
            m = st.master(r["name"])
            if not self.running(m):
                continue
            ddl = sqlgen.ddl_sql(st, r["name"], ports, self.replica_port(r["name"]))
            h = sqlgen.ddl_hash(ddl)
            what = "master %s" % m["name"]
            cur = pg.psql_value(m["port"], "SELECT value FROM _picoemu.meta WHERE key = 'ddl_hash'", what=what)
            script = "BEGIN;\n" + cat
            if cur != h:
                script += ddl + ("INSERT INTO _picoemu.meta VALUES ('ddl_hash', %s) ON CONFLICT (key) "
                                 "DO UPDATE SET value = EXCLUDED.value;\n" % sqlgen.lit(h))
            script += "COMMIT;\n"
            run_again_on_deadlock(lambda: pg.psql(m["port"], script, what=what))
        self.write_catalog_files()
        if wait:
            self.wait_replicas()

    def wait_replicas(self):
        st = self.st
        for r in st.live_replicasets():
            m = st.master(r["name"])
            if not self.running(m):
                continue
            lsn = pg.psql_value(m["port"], "SELECT pg_current_wal_insert_lsn()", what="master %s" % m["name"])
            for i in st.members(r["name"]):
                if i is m or i["expelled"] or not self.running(i):
                    continue
                self.wait_replay(i, lsn)

    def wait_replay(self, inst, lsn, timeout=pg.REPLAY_TIMEOUT):
        deadline = time.time() + timeout
        delay = 0.02
        while True:
            got = pg.psql_value(inst["port"], "SELECT pg_last_wal_replay_lsn() >= '%s'::pg_lsn" % lsn,
                                what="replica %s" % inst["name"], timeout=20)
            if got == "t":
                return
            if time.time() > deadline:
                raise EmuError("replica %s has not replayed its master's WAL up to %s after %ds (see %s)"
                               % (inst["name"], lsn, timeout, self.logfile(inst)))
            time.sleep(delay)
            delay = min(delay * 2, 0.25)

    # ---- commands: lifecycle -------------------------------------------------------------------
    def up(self, tiers, base_port, advertise_wildcard, auth, picodata_version, advertise_private=False,
           wrong_hash=None, private_pgproto=False):
        if self.st is not None:
            started = []
            for i in self.st.active_instances():
                if i["state"] == "Online" and not self.running(i):
                    self.check_port(i, wait=70)
                    self.start_server(i)
                    started.append(i["name"])
                elif self.running(i) and not self.front_running(i):
                    self.start_front(i)
                    started.append(i["name"] + " (front)")
            if started:
                log("restarted %s" % ", ".join(started))
                self.sync()
            log("cluster already exists in %s (options ignored; `picoemu down` to rebuild)" % self.dir)
            return
        self.ensure_dir()
        st = self.st = new_state(self.state_path, base_port, tiers, advertise_wildcard, auth, picodata_version,
                                     advertise_private)
        if wrong_hash:  # a test device (emu_explain.py): fixed for the life of the cluster
            st.d["wrong_hash"] = wrong_hash
        if private_pgproto:  # fixed for the life of the cluster, like advertise_private
            st.d["private_pgproto"] = True
            self.build_private_pgproto()
        for tier in st.tiers:
            for _ in range(tier["replicasets"]):
                rs = st.new_replicaset(tier)
                for j in range(1, tier["replication_factor"] + 1):
                    inst = st.new_instance(rs, tier, j, pg.port_is_free)
                    if j == 1:
                        rs["master"] = inst["name"]
            n = tier["bucket_count"]
            if n > 0:
                if tier["replicasets"] < 1:
                    raise EmuError("tier %s has buckets but no replicaset" % tier["name"])
                targets = target_counts(n, [(r["name"], 1.0) for r in st.live_replicasets(tier["name"])])
                st.d["buckets"][tier["name"]] = compress(rebalance([None] * (n + 1), targets))
        for i in st.instances:
            self.check_port(i)
        for i in st.instances:
            i["state_change_time"] = now_iso()
        self.save()
        self.make_template()
        for r in st.replicasets:
            self.create_master(st.master(r["name"]))
        self.sync(wait=False)
        for r in st.replicasets:
            m = st.master(r["name"])
            for i in st.members(r["name"]):
                if i is not m:
                    self.create_replica(i, m)
        self.wait_replicas()

    def down(self):
        if not os.path.isdir(self.dir):
            log("nothing to stop in %s" % self.dir)
            return
        if not os.path.exists(self.state_path) and not os.path.isdir(self.template_dir()):
            # refuse to delete a directory that picoemu did not create
            if os.listdir(self.dir) and not os.path.exists(os.path.join(self.dir, ".lock")):
                raise EmuError("%s does not look like a picoemu directory (no state.json); not removing it"
                               % self.dir)
        stopped = 0
        for entry in sorted(os.listdir(self.dir)):
            self.stop_front_pidfile(os.path.join(self.dir, entry, "front.pid"))
            data = os.path.join(self.dir, entry, "data")
            if pg.is_running(data):
                pg.pg_stop(data, self.dir)
                stopped += 1
        pg.remove_tree(self.dir)
        self.st = None
        log("stopped %d server(s), removed %s" % (stopped, self.dir))

    def stop(self, name):
        st = self.require()
        inst = st.instance(name)
        if inst["expelled"]:
            raise EmuError("instance %s is expelled" % name)
        if self.running(inst) or self.front_running(inst):
            self.stop_server(inst)
        if inst["state"] != "Offline":
            inst["state"] = "Offline"
            inst["state_change_time"] = now_iso()
            self.save()
        self.sync()

    def start(self, name):
        st = self.require()
        inst = st.instance(name)
        if inst["expelled"]:
            raise EmuError("instance %s is expelled" % name)
        if not self.running(inst):
            self.check_port(inst, wait=70)  # a client socket in TIME_WAIT may hold it for 60 s
            self.start_server(inst)
        elif not self.front_running(inst):
            self.start_front(inst)
        if inst["state"] != "Online":
            inst["state"] = "Online"
            inst["incarnation"] += 1
            inst["state_change_time"] = now_iso()
            self.save()
        self.sync()

    # ---- commands: topology --------------------------------------------------------------------
    def apply_bucket_map(self, tier_name, new_owners):
        """Moves the rows of every bucket whose owner changes, then publishes the new map. Nothing
        acknowledged is lost: (1) each old owner's master is told that the buckets are in flight
        (the file picoemu_transfer.json, phase "copy", read by its storage triggers: a write to them
        waits for the move, then runs again through the new map, see check_transfer in
        sql/strict.sql); (2) under a SHARE lock, which waits for the writers already in flight, the
        rows are copied to the new owner; (3) the mark's phase becomes "publish" and the new map is
        published (a reader sees each bucket on exactly one side: the coordinator's view reads it
        from its owner only); (4) the rows are deleted from the old owner and the mark is removed."""
        st = self.st
        tier = st.tier(tier_name)
        old = expand(st.d["buckets"][tier_name], tier["bucket_count"])
        segs = segments(old, new_owners)
        if not segs:
            log("tier %s: nothing to move" % tier_name)
            return 0
        involved = sorted({s[0] for s in segs if s[0]} | {s[1] for s in segs})
        for rs in involved:
            m = st.master(rs)
            if not self.running(m):
                raise EmuError("cannot move buckets of replicaset %s: its master %s is stopped (start it "
                               "or switch the master first)" % (rs, m["name"]))
        tables = [t for t in st.tables if not t["global"] and t["tier"] == tier_name]
        pairs = {}
        for src, dst, a, b in segs:
            if src is not None:
                pairs.setdefault((src, dst), []).append((a, b))
        marks = {}
        for (src, dst), ranges in pairs.items():
            marks.setdefault(src, []).extend({"tier": tier_name, "bucket_start": a, "bucket_end": b,
                                              "dst": dst} for a, b in ranges)
        mark_files = [os.path.join(self.datadir(st.master(src)), TRANSFER_FILE) for src in marks]

        def mark(phase):
            for src, entries in marks.items():
                self.write_file_atomic(os.path.join(self.datadir(st.master(src)), TRANSFER_FILE),
                                       json.dumps([dict(x, phase=phase) for x in entries]) + "\n", 0o600)
        try:
            mark("copy")
            for (src, dst), ranges in pairs.items():
                ms, md = st.master(src), st.master(dst)
                for t in tables:
                    rel = "_picoemu_local.%s" % sqlgen.ident(t["name"])
                    cols = ", ".join([sqlgen.ident(c["name"]) for c in t["columns"]] + ["bucket_id"])
                    data = pg.copy_out(ms["port"], "SELECT %s FROM %s WHERE %s" % (cols, rel, sqlgen._pred(ranges)),
                                       what="master %s" % ms["name"], lock_share=rel)
                    # rows left behind at the destination by an interrupted move are not visible
                    # anywhere (it did not own the buckets); drop them before copying
                    pg.psql(md["port"], "SET session_replication_role = replica; DELETE FROM %s WHERE %s;"
                            % (rel, sqlgen._pred(ranges)), what="master %s" % md["name"])
                    if data:
                        pg.copy_in(md["port"], "%s (%s)" % (rel, cols), data, what="master %s" % md["name"],
                                   bypass_triggers=True)
            st.d["buckets"][tier_name] = compress(new_owners)
            st.bump_tier_version(tier_name)
            self.save()
            # writes waiting at the old owners stop waiting within 50 ms from now on: a coordinator's
            # rebuild may wait for their locks on another server, which the old owner cannot see
            mark("publish")
            # the new owners first: a coordinator that already routes a bucket to its new owner
            # finds it accepting writes; the others still send them to the old owner, where they
            # wait and run again
            self.sync(wait=False, first={dst for _, dst in pairs})
            for (src, dst), ranges in pairs.items():
                ms = st.master(src)
                script = "".join("DELETE FROM _picoemu_local.%s WHERE %s;\n"
                                 % (sqlgen.ident(t["name"]), sqlgen._pred(ranges)) for t in tables)
                if script:
                    run_again_on_deadlock(lambda: pg.psql(
                        ms["port"], "SET session_replication_role = replica;\n" + script,
                        what="master %s" % ms["name"], single_transaction=True))
        finally:
            for f in mark_files:
                if os.path.exists(f):
                    os.unlink(f)
        self.wait_replicas()
        moved = sum(b - a + 1 for _, _, a, b in segs)
        log("tier %s: moved %d bucket(s) in %d range(s)" % (tier_name, moved, len(segs)))
        return moved

    def move(self, tier_name, start, end, rs_name):
        st = self.require()
        tier = st.tier(tier_name)
        n = tier["bucket_count"]
        if not (1 <= start <= end <= n):
            raise EmuError("bucket range %d..%d is outside 1..%d of tier %s" % (start, end, n, tier_name))
        rs = st.replicaset(rs_name)
        if rs["tier"] != tier_name or rs["state"] == "expelled":
            raise EmuError("replicaset %s is not a live replicaset of tier %s" % (rs_name, tier_name))
        owners = expand(st.d["buckets"][tier_name], n)
        for b in range(start, end + 1):
            owners[b] = rs_name
        self.apply_bucket_map(tier_name, owners)

    def rebalance(self, tier_name=None, weights=None):
        st = self.require()
        if weights:
            tiers = {st.replicaset(n)["tier"] for n in weights}
            if len(tiers) != 1 or (tier_name and tier_name not in tiers):
                raise EmuError("--weights must name replicasets of one tier (the --tier given)")
            tier_name = tiers.pop()
        names = [tier_name] if tier_name else [t["name"] for t in st.tiers]
        for tn in names:
            tier = st.tier(tn)
            live = st.live_replicasets(tn)
            if weights:
                for n, w in weights.items():
                    r = st.replicaset(n)
                    if r["state"] == "expelled":
                        raise EmuError("replicaset %s is expelled" % n)
                    r["weight"], r["weight_origin"] = float(w), "user"
            elif weights is None:
                for r in live:
                    r["weight"], r["weight_origin"] = 1.0, "auto"
            if tier["bucket_count"] == 0 or not live:
                self.save()
                continue
            targets = target_counts(tier["bucket_count"], [(r["name"], r["weight"]) for r in live])
            self.save()
            old = expand(st.d["buckets"][tn], tier["bucket_count"])
            if self.apply_bucket_map(tn, rebalance(old, targets)) == 0:
                self.sync()

    def add_replicaset(self, tier_name=None, rf=None, do_rebalance=True):
        st = self.require()
        tier = st.tier(tier_name) if tier_name else st.default_tier()
        rf = rf or tier["replication_factor"]
        if rf < 1:
            raise EmuError("--replication-factor must be at least 1")
        rs = st.new_replicaset(tier)
        members = [st.new_instance(rs, tier, j, pg.port_is_free) for j in range(1, rf + 1)]
        rs["master"] = members[0]["name"]
        for i in members:
            i["state_change_time"] = now_iso()
            self.check_port(i)
        self.save()
        self.make_template()
        self.create_master(members[0])
        self.sync(wait=False)
        globals_ = [t for t in st.tables if t["global"]]
        if globals_:
            src = next((st.master(r["name"]) for r in st.live_replicasets()
                        if r["name"] != rs["name"] and self.running(st.master(r["name"]))), None)
            if src is None:
                raise EmuError("no running master to copy global tables from")
            for t in globals_:
                rel = "_picoemu_local.%s" % sqlgen.ident(t["name"])
                data = pg.copy_out(src["port"], "SELECT * FROM %s" % rel, what="master %s" % src["name"])
                if data:
                    pg.copy_in(members[0]["port"], rel, data, what="master %s" % members[0]["name"])
        for i in members[1:]:
            self.create_replica(i, members[0])
        self.wait_replicas()
        log("added replicaset %s (%s)" % (rs["name"], ", ".join(i["name"] for i in members)))
        if do_rebalance and tier["bucket_count"] > 0:
            self.rebalance(tier["name"], weights={})
        return rs

    def expel(self, rs_name):
        st = self.require()
        rs = st.replicaset(rs_name)
        if rs["state"] == "expelled":
            log("replicaset %s is already expelled" % rs_name)
            return
        tier = st.tier(rs["tier"])
        others = [r for r in st.live_replicasets(rs["tier"]) if r["name"] != rs_name]
        owned = [x for x in st.d["buckets"][rs["tier"]] if x[2] == rs_name]
        if owned and not others:
            raise EmuError("cannot expel %s: it is the last replicaset of tier %s and holds its buckets"
                           % (rs_name, rs["tier"]))
        if others and [t for t in st.tables if t["global"]] and len(st.live_replicasets()) < 2:
            raise EmuError("cannot expel the last replicaset holding global tables")
        rs["state"] = "to-be-expelled"
        rs["weight"] = 0.0
        self.save()
        if owned:
            targets = target_counts(tier["bucket_count"], [(r["name"], r["weight"]) for r in others])
            old = expand(st.d["buckets"][rs["tier"]], tier["bucket_count"])
            self.apply_bucket_map(rs["tier"], rebalance(old, targets))
        for i in st.members(rs_name):
            if self.running(i) or self.front_running(i):
                self.stop_server(i)
            i["expelled"] = True
            i["state"] = "Offline"
            i["state_change_time"] = now_iso()
        rs["state"] = "expelled"
        self.save()
        self.sync()
        log("expelled replicaset %s" % rs_name)

    def switch_master(self, rs_name, to=None):
        st = self.require()
        rs = st.replicaset(rs_name)
        if rs["state"] == "expelled":
            raise EmuError("replicaset %s is expelled" % rs_name)
        old = st.master(rs_name)
        cands = [i for i in st.members(rs_name) if i is not old and not i["expelled"]]
        if to:
            target = st.instance(to)
            if target not in cands:
                raise EmuError("instance %s is not a replica of replicaset %s" % (to, rs_name))
        else:
            running = [i for i in cands if self.running(i)]
            if not running:
                raise EmuError("replicaset %s has no running replica to promote" % rs_name)
            target = running[0]
        if not self.running(target):
            raise EmuError("instance %s is stopped: start it before promoting it" % target["name"])
        was_running = self.running(old)
        if was_running:
            lsn = pg.psql_value(old["port"], "SELECT pg_current_wal_insert_lsn()", what="master %s" % old["name"])
            self.wait_replay(target, lsn)
            self.stop_server(old)
        pg.pg_promote(self.datadir(target), self.dir)
        deadline = time.time() + pg.START_TIMEOUT
        while pg.psql_value(target["port"], "SELECT pg_is_in_recovery()", what=target["name"]) != "f":
            if time.time() > deadline:
                raise EmuError("instance %s did not leave recovery after promotion" % target["name"])
            time.sleep(0.1)
        self.write_conf(target)  # drops primary_conninfo; PostgreSQL removed standby.signal itself
        pg.psql(target["port"], "SELECT pg_reload_conf()", what=target["name"])
        rs["master"] = target["name"]
        rs["master_change_counter"] += 1
        rs["config_version"] += 1
        if was_running:
            old["incarnation"] += 1
            old["state_change_time"] = now_iso()
        self.save()
        # publish the new master at once, as Picodata does: coordinators stop asking the stopped one
        # while the standbys are rebuilt
        self.sync(wait=False)
        for i in cands:
            if i is not target:
                self.create_replica(i, target, start=self.running(i))
        self.create_replica(old, target, start=was_running)
        self.sync()
        log("replicaset %s: master %s -> %s" % (rs_name, old["name"], target["name"]))

    # ---- commands: catalog toggles -------------------------------------------------------------
    def set_grant(self, table, user, grant):
        st = self.require()
        if table not in st.d["grants"]:
            raise EmuError("%s is not a catalog table (%s)" % (table, ", ".join(st.d["grants"])))
        users = st.d["grants"][table]
        if user != "PUBLIC":
            m = next((st.master(r["name"]) for r in st.live_replicasets() if self.running(st.master(r["name"]))), None)
            if m is None:
                raise EmuError("no running master to check role %s on" % user)
            if pg.psql_value(m["port"], "SELECT count(*) FROM pg_roles WHERE rolname = %s" % sqlgen.lit(user),
                             what="master %s" % m["name"]) != "1":
                raise EmuError("role %s does not exist (known: admin, %s, PUBLIC)" % (user, "picoroute"))
        if grant:
            if user not in users:
                users.append(user)
        else:
            if user in users:
                users.remove(user)
            if "PUBLIC" in users and user != "PUBLIC":
                users.remove("PUBLIC")
                log("note: %s was readable by PUBLIC; revoked from PUBLIC too" % table)
        self.save()
        self.sync()

    def set_flag(self, key, value):
        st = self.require()
        if key == "strict" and value and not st.cap("forward"):
            raise EmuError("strict mode (forward=off) does not exist in Picodata %s: it appeared in 26.2.1-rc1 "
                           "(create the cluster with `up --picodata` one of %s)"
                           % (st.version, ", ".join(v for v in VERSIONS if VERSIONS[v]["forward"])))
        st.d[key] = value
        self.save()
        self.sync()
