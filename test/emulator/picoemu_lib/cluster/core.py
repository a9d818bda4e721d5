"""The state directory of a cluster: its state file (state.json), the lock that runs the commands
that change something one after another, the paths of each instance's files, and writing files
the servers' OS user owns."""

import contextlib
import datetime
import fcntl
import os
import time
from typing import Iterator, Optional, Tuple

from .. import pg
from ..errors import EmuError
from ..state import Inst, State


def log(msg: str) -> None:
    print("picoemu: " + msg, flush=True)


def now_iso() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Cluster:
    """A cluster's state directory: st is its state (None before `up`)."""

    def __init__(self, directory: str) -> None:
        self.dir = os.path.abspath(directory)
        self.state_path = os.path.join(self.dir, "state.json")
        self.st: Optional[State] = State.load(self.state_path) if os.path.isdir(self.dir) else None
        self.owner: Tuple[int, int] = pg.server_owner()

    # ---- the state file and its lock ----------------------------------------------------------
    def require(self) -> State:
        if self.st is None:
            raise EmuError("no cluster in %s (run `picoemu up` first)" % self.dir)
        return self.st

    def save(self) -> None:
        self.require().save(chown=self.owner if pg.as_root() else None)

    @contextlib.contextmanager
    def locked(self, timeout: int = 300) -> Iterator[None]:
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

    # ---- files the servers' user owns ---------------------------------------------------------
    def mkdir(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)
        if pg.as_root():
            os.chown(path, *self.owner)

    def write_file(self, path: str, text: str, mode: int = 0o644) -> None:
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        if pg.as_root():
            os.chown(path, *self.owner)

    def write_file_atomic(self, path: str, text: str, mode: int = 0o644) -> None:
        tmp = path + ".tmp"
        self.write_file(tmp, text, mode)
        os.replace(tmp, path)

    def ensure_dir(self) -> None:
        self.mkdir(self.dir)
        if pg.run_server_cmd(["test", "-w", self.dir, "-a", "-x", self.dir], "/", check=False).returncode:
            raise EmuError("the server user cannot write to %s (its parents must be traversable by "
                           "`postgres`); choose a --dir under /tmp" % self.dir)

    # ---- an instance's files and processes ----------------------------------------------------
    def inst_dir(self, inst: Inst) -> str:
        return os.path.join(self.dir, inst["name"])

    def datadir(self, inst: Inst) -> str:
        return os.path.join(self.dir, inst["name"], "data")

    def logfile(self, inst: Inst) -> str:
        return os.path.join(self.dir, inst["name"], "postgres.log")

    def front_pidfile(self, inst: Inst) -> str:
        return os.path.join(self.inst_dir(inst), "front.pid")

    def front_log(self, inst: Inst) -> str:
        return os.path.join(self.inst_dir(inst), "front.log")

    def template_dir(self) -> str:
        return os.path.join(self.dir, "template")

    def running(self, inst: Inst) -> bool:
        return pg.is_running(self.datadir(inst))

    def front_running(self, inst: Inst) -> bool:
        return front_pid(self.front_pidfile(inst)) is not None


FRONT_PROCESS = b"picoemu-front"  # in the command line of a front's process (paths.FRONT_SCRIPT)


def front_pid(pidfile: str) -> Optional[int]:
    """The pid of the front whose pid file this is, when that process runs (and is a front)."""
    try:
        with open(pidfile) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            return pid if FRONT_PROCESS in f.read() else None
    except (OSError, ValueError):
        return None
