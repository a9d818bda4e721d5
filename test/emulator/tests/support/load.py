"""Concurrent clients through the fronts, for the self-test (pgwire connections, one thread each,
bounded in statements and in time)."""

import threading
import time
from typing import Any, Dict, Optional, Sequence

from picoemu_lib import pgwire as w

CLIENT = "picoroute"


def hammer(port: int, sql: str, clients: int = 4, count: int = 40, seconds: float = 30, extended_every: int = 2,
           params: Optional[Sequence[Sequence[object]]] = None) -> Dict[str, Any]:
    """clients connections to port each send sql count times (the odd clients in the extended
    protocol, the others as simple queries), all stopping after seconds. With params (a list of
    parameter tuples), every client sends sql in the extended protocol, the i-th time with
    params[i % len(params)]. Returns
    {"ok": acknowledged, "errors": [texts], "hung": clients whose answer did not come in time}."""
    res: Dict[str, Any] = {"ok": 0, "errors": [], "hung": 0, "sent": 0}
    lock = threading.Lock()
    deadline = time.time() + seconds

    def client(k: int) -> None:
        try:
            conn = w.Conn(port, CLIENT, CLIENT, timeout=max(5.0, seconds + 5), application_name="selftest-conc")
        except Exception as exc:  # noqa: BLE001 (counted, reported)
            with lock:
                res["errors"].append("connect: %r" % exc)
            return
        try:
            for i in range(count):
                if time.time() > deadline:
                    break
                with lock:
                    res["sent"] += 1
                if params:
                    ans = w.extended(conn, sql, params=params[i % len(params)])
                elif k % extended_every == 1:
                    ans = w.extended(conn, sql)
                else:
                    ans = conn.query(sql)
                errs = w.errors(ans)
                with lock:
                    if errs:
                        res["errors"].append("%s %s" % (errs[0].get("C"), errs[0].get("M")))
                    elif any(t == "C" for t, _ in ans):
                        res["ok"] += 1
        except OSError as exc:  # a socket timeout: the statement hangs
            with lock:
                res["hung"] += 1
                res["errors"].append("no answer: %r" % exc)
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(timeout=seconds + 20)
    return res


def summary(res: Dict[str, Any]) -> str:
    errs = sorted(set(res["errors"]))
    return "%d sent, %d acknowledged, %d errors (%s), %d hung" % (
        res["sent"], res["ok"], len(res["errors"]), "; ".join(e[:200] for e in errs[:3]), res["hung"])
