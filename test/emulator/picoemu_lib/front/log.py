"""The front's log (<dir>/<instance>/front.log, opened by server.main)."""

import datetime
import os
from typing import Optional, TextIO

_file: Optional[TextIO] = None
# PICOEMU_LOG_STATEMENTS=1 in the environment of "picoemu up": every statement a client sends (Query
# or Parse) is written to front.log as "statement: <text>", so a test can read what it was sent.
LOG_STATEMENTS = os.environ.get("PICOEMU_LOG_STATEMENTS") == "1"


def open_log(path: str) -> None:
    global _file
    _file = open(path, "a")


def log(msg: str) -> None:
    line = "%s [%d] %s\n" % (datetime.datetime.now().isoformat(timespec="milliseconds"), os.getpid(), msg)
    if _file:
        _file.write(line)
        _file.flush()
