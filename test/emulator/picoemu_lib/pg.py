"""Running PostgreSQL programs for the emulator: server processes (as the postgres OS user when
invoked as root) and SQL through psql over TCP on 127.0.0.1. Every wait is bounded."""

import os
import pwd
import shutil
import socket
import subprocess
import time
from typing import Dict, List, Optional, Sequence, Tuple

from .errors import EmuError
from .state import ADMIN_PASSWORD, ADMIN_USER, DB_NAME

HOST = "127.0.0.1"
SQL_TIMEOUT = 120        # seconds for one psql invocation
START_TIMEOUT = 60       # pg_ctl start/stop/promote wait
REPLAY_TIMEOUT = 60      # standby catch-up wait
FIELD_SEP = "\x1f"


def bindir() -> str:
    path = os.environ.get("PICOEMU_PG_BINDIR")
    if path:
        return path
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, timeout=10)
        if out.returncode == 0 and os.path.exists(os.path.join(out.stdout.strip(), "initdb")):
            return out.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    if os.path.exists("/usr/lib/postgresql/15/bin/initdb"):
        return "/usr/lib/postgresql/15/bin"
    raise EmuError("PostgreSQL binaries not found: set PICOEMU_PG_BINDIR or put pg_config in PATH")


def pgbin(name: str) -> str:
    return os.path.join(bindir(), name)


def as_root() -> bool:
    return os.geteuid() == 0


def server_owner() -> Tuple[int, int]:
    """(uid, gid) that owns server files: postgres when run as root, else the current user."""
    if as_root():
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            raise EmuError("running as root needs an OS user `postgres` to run the servers")
        return pw.pw_uid, pw.pw_gid
    return os.getuid(), os.getgid()


def run_server_cmd(args: Sequence[str], cwd: str, timeout: float = START_TIMEOUT + 30,
                   env: Optional[Dict[str, str]] = None, check: bool = True) -> "subprocess.CompletedProcess[str]":
    """Runs a server-side program (initdb, pg_ctl, pg_basebackup, cp) as the server owner."""
    cmd = (["runuser", "-u", "postgres", "--"] if as_root() else []) + list(args)
    full_env = dict(os.environ)
    full_env.update({"LC_ALL": "C", "LANG": "C"})
    if env:
        full_env.update(env)
    try:
        res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                             env=full_env, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise EmuError("timed out after %ds: %s" % (timeout, " ".join(args)))
    if check and res.returncode != 0:
        raise EmuError("%s failed (exit %d): %s" % (os.path.basename(args[0]), res.returncode,
                                                      (res.stderr or res.stdout).strip()[-2000:]))
    return res


def port_is_free(port: int) -> bool:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((HOST, port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_port() -> int:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((HOST, 0))
    port: int = s.getsockname()[1]
    s.close()
    return port


def postmaster_pid(datadir: str) -> Optional[int]:
    try:
        with open(os.path.join(datadir, "postmaster.pid")) as f:
            pid = int(f.readline().strip())
    except (OSError, ValueError):
        return None
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmdline = f.read()
    except OSError:
        return None
    return pid if b"postgres" in cmdline else None


def is_running(datadir: str) -> bool:
    return postmaster_pid(datadir) is not None


def pg_start(datadir: str, logfile: str, cwd: str) -> None:
    run_server_cmd([pgbin("pg_ctl"), "-D", datadir, "-l", logfile, "-w", "-t", str(START_TIMEOUT),
                    "start"], cwd, check=False)
    if not is_running(datadir):
        tail = ""
        try:
            with open(logfile, errors="replace") as f:
                tail = "".join(f.readlines()[-15:])
        except OSError:
            pass
        raise EmuError("server in %s did not start; last log lines:\n%s" % (datadir, tail))


def pg_stop(datadir: str, cwd: str) -> None:
    """Stops a server: fast, then immediate, then SIGKILL. Never waits more than ~2 minutes."""
    if not is_running(datadir):
        return
    for mode in ("fast", "immediate"):
        run_server_cmd([pg_bin_ctl(), "-D", datadir, "-m", mode, "-w", "-t", str(START_TIMEOUT // 2),
                        "stop"], cwd, check=False)
        if not is_running(datadir):
            return
    pid = postmaster_pid(datadir)
    if pid:
        try:
            os.kill(pid, 9)
        except OSError:
            pass
        deadline = time.time() + 10
        while time.time() < deadline and is_running(datadir):
            time.sleep(0.1)
    if is_running(datadir):
        raise EmuError("could not stop the server in %s" % datadir)


def pg_bin_ctl() -> str:
    return pgbin("pg_ctl")


def pg_promote(datadir: str, cwd: str) -> None:
    run_server_cmd([pg_bin_ctl(), "-D", datadir, "-w", "-t", str(START_TIMEOUT), "promote"], cwd)


def remove_tree(path: str) -> None:
    if os.path.lexists(path):
        shutil.rmtree(path, ignore_errors=True)
        if os.path.lexists(path):
            run_server_cmd(["rm", "-rf", path], "/", check=False)


class SqlError(EmuError):
    pass


def psql(port: int, sql: str, user: str = ADMIN_USER, password: str = ADMIN_PASSWORD, dbname: str = DB_NAME,
         what: Optional[str] = None, timeout: int = SQL_TIMEOUT, stdin_data: Optional[str] = None,
         single_transaction: bool = False, extra: Sequence[str] = ()) -> List[List[str]]:
    """Runs SQL (a script, on stdin) on 127.0.0.1:port; returns rows as lists of strings (None for
    NULL is not distinguished: psql prints NULL as an empty field). Raises SqlError."""
    env = dict(os.environ)
    env.update({"PGPASSWORD": password, "PGCONNECT_TIMEOUT": "10", "PGAPPNAME": "picoemu",
                "PGOPTIONS": "-c statement_timeout=%ds -c lock_timeout=30s -c client_min_messages=warning"
                % timeout, "LC_ALL": "C"})
    for k in ("PGSERVICE", "PGSERVICEFILE", "PGSSLMODE", "PGHOSTADDR", "PGDATABASE", "PGUSER"):
        env.pop(k, None)
    cmd = [pgbin("psql"), "-X", "-q", "-A", "-t", "-F", FIELD_SEP, "-v", "ON_ERROR_STOP=1",
           "-h", HOST, "-p", str(port), "-U", user, "-d", dbname] + list(extra)
    if single_transaction:
        cmd.append("-1")
    if stdin_data is None:
        cmd += ["-f", "-"]
        data = sql
    else:
        cmd += ["-c", sql]
        data = stdin_data
    try:
        res = subprocess.run(cmd, input=data, capture_output=True, text=True, timeout=timeout + 15,
                             env=env)
    except subprocess.TimeoutExpired:
        raise SqlError("SQL on %s timed out after %ds" % (what or "port %d" % port, timeout))
    if res.returncode != 0:
        msg = res.stderr.strip()
        msg = "\n".join(line[len("psql:<stdin>:"):] if line.startswith("psql:<stdin>:") else line
                        for line in msg.splitlines())
        raise SqlError("SQL on %s failed: %s" % (what or "port %d" % port, msg[-3000:]))
    return [line.split(FIELD_SEP) for line in res.stdout.splitlines() if line != ""]


def psql_value(port: int, sql: str, what: Optional[str] = None, timeout: int = SQL_TIMEOUT,
               user: str = ADMIN_USER, password: str = ADMIN_PASSWORD) -> Optional[str]:
    rows = psql(port, sql, user=user, password=password, what=what, timeout=timeout)
    return rows[0][0] if rows else None


def copy_out(port: int, query: str, what: Optional[str] = None, lock_share: Optional[str] = None) -> str:
    """COPY (query) TO STDOUT, text format; returns the data as a string. With lock_share (a table),
    the copy runs in a transaction that first takes a SHARE lock on it, so it waits for the writers
    in flight and sees their rows."""
    env = dict(os.environ)
    env.update({"PGPASSWORD": ADMIN_PASSWORD, "PGCONNECT_TIMEOUT": "10", "PGAPPNAME": "picoemu"})
    cmd = [pgbin("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", HOST, "-p", str(port), "-U",
           ADMIN_USER, "-d", DB_NAME]
    if lock_share:
        cmd += ["-c", "SET lock_timeout = '60s'", "-c", "BEGIN", "-c", "LOCK TABLE %s IN SHARE MODE" % lock_share]
    cmd += ["-c", "COPY (%s) TO STDOUT" % query]
    if lock_share:
        cmd += ["-c", "COMMIT"]
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, timeout=SQL_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        raise SqlError("COPY out of %s timed out" % (what or port))
    if res.returncode != 0:
        raise SqlError("COPY out of %s failed: %s" % (what or port, res.stderr.strip()))
    return res.stdout


def copy_in(port: int, table_sql: str, data: str, what: Optional[str] = None,
            bypass_triggers: bool = False) -> None:
    env = dict(os.environ)
    env.update({"PGPASSWORD": ADMIN_PASSWORD, "PGCONNECT_TIMEOUT": "10", "PGAPPNAME": "picoemu"})
    cmd = [pgbin("psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", HOST, "-p", str(port), "-U",
           ADMIN_USER, "-d", DB_NAME]
    if bypass_triggers:
        cmd += ["-c", "SET session_replication_role = replica"]
    cmd += ["-c", "COPY %s FROM STDIN" % table_sql]
    try:
        res = subprocess.run(cmd, input=data, capture_output=True, text=True, timeout=SQL_TIMEOUT,
                             env=env)
    except subprocess.TimeoutExpired:
        raise SqlError("COPY into %s timed out" % (what or port))
    if res.returncode != 0:
        raise SqlError("COPY into %s failed: %s" % (what or port, res.stderr.strip()))


def wait_ready(port: int, what: str, timeout: int = START_TIMEOUT) -> None:
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            psql(port, "SELECT 1", dbname="postgres", what=what, timeout=10)
            return
        except SqlError as exc:
            last = exc
            time.sleep(0.2)
    raise EmuError("%s does not accept connections after %ds: %s" % (what, timeout, last))
