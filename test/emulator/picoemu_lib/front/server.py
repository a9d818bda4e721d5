"""The front's process: it listens on the instance's advertised pgproto port and serves each client
in a Session, with what the sessions share (the settings, the audit, caches of verdicts, routes and
parameter types, counters for the log).

Usage: picoemu-front --dir DIR --instance NAME [--pid-file F]   (started and stopped by picoemu; logs
to <dir>/<instance>/front.log)
"""

import argparse
import asyncio
import os
import signal
import socket
from typing import Dict, List, Optional, Set, Tuple, Union

from .. import dialect
from .judge import Route
from .log import log, open_log
from .session import Session
from .settings import Audit, Settings
from .wire import HOST


class Front:
    def __init__(self, state_dir: str, instance: str) -> None:
        self.dir = state_dir
        self.settings = Settings(os.path.join(state_dir, "state.json"), instance)
        inst = self.settings.inst()
        self.port: int = inst.get("pgproto_port", inst["port"])
        self.private_port: int = inst["port"]
        self.audit = Audit(os.path.join(state_dir, "audit.jsonl"))
        self.type_cache: Dict[Tuple[str, Tuple[int, ...]], List[int]] = {}
        self.sessions: Set[Session] = set()  # open sessions (their statements count against pg_statement_max)
        # (statement text, version) -> Verdict or Reject (statements repeat)
        self.verdicts: Dict[Tuple[str, str], Union[dialect.Verdict, dialect.Reject]] = {}
        self.retried = 0  # statements run again (rerun.RETRY_STATES)
        self.move_statements = 0  # writes that met a bucket in flight (rerun.MOVE_STATES)
        self.move_reruns = 0  # their runs again
        self.routes: Dict[Tuple[str, str], Route] = {}  # (statement text, version) -> judge.Judge.route
        self.forward_refused = 0  # statements refused under forward (judge.Judge.refuse_forward)
        self.leader_refused = 0  # reads refused for not being leader reads (judge.Judge.refuse_non_leader_read)
        self.stalled = 0  # statements that waited for a stopped master (stall.Stall.stall)
        self.dnf_over = 0  # statements run over the DNF chain limit, not routed (rewrite.dnf_text)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await Session(self, reader, writer).run()

    async def serve(self, ready_file: Optional[str]) -> None:
        server = await asyncio.start_server(self.handle, HOST, self.port, reuse_address=True, reuse_port=True,
                                            limit=1 << 20)
        log("front of %s listening on %s:%d -> private %s:%d (Picodata %s)" % (
            self.settings.instance, HOST, self.port, HOST, self.private_port, self.settings.version))
        if ready_file:
            with open(ready_file, "w") as f:
                f.write("%d\n" % os.getpid())
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for s in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(s, stop.set)
        await stop.wait()
        server.close()
        log("front stopped")


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    p.add_argument("--dir", required=True)
    p.add_argument("--instance", required=True)
    p.add_argument("--pid-file")
    a = p.parse_args(argv)
    open_log(os.path.join(a.dir, a.instance, "front.log"))
    front = Front(a.dir, a.instance)
    # PICOEMU_FRONT_WORKERS > 1: worker processes share the port (SO_REUSEPORT). One process spends
    # about 55 us of CPU per statement round trip; on a 2-core machine a second one gained nothing.
    children = []
    for _ in range(max(1, int(os.environ.get("PICOEMU_FRONT_WORKERS", "1"))) - 1):
        pid = os.fork()
        if pid == 0:
            try:
                import ctypes
                ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG: die with the parent
            except (OSError, AttributeError):
                pass
            try:
                asyncio.run(front.serve(None))
            finally:
                os._exit(0)
        children.append(pid)
    try:
        asyncio.run(front.serve(a.pid_file))
    except OSError as exc:
        log("cannot listen on %s:%d: %s" % (HOST, front.port, exc))
        return 1
    finally:
        for pid in children:
            try:
                os.kill(pid, signal.SIGTERM)
                os.waitpid(pid, 0)
            except OSError:
                pass
    return 0
