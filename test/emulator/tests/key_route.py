"""Routing by the sharding key on one server: support.key_route's comparison of the fast path with
the full parser (~10 s), on a one-instance cluster started on a free port range
(test/tools/port_range.py) and removed, or on the private port of a running instance.

Usage (from test/emulator): python3 -m tests.key_route [--port P]   (P: an instance's private port,
user admin/admin). The self-test runs the same comparison on one of its clusters."""

import argparse
import json
import os
import subprocess
import sys
import tempfile
from typing import List, Optional

from picoemu_lib.paths import PICOEMU, TOOLS_DIR

from .support.key_route import compare


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--port", type=int)
    a = ap.parse_args(argv)
    tmp: Optional[str] = None
    port = a.port
    emu: List[str] = []
    if port is None:
        base = int(subprocess.run([sys.executable, os.path.join(TOOLS_DIR, "port_range.py"), "--pid", str(os.getpid())],
                                  capture_output=True, text=True, check=True).stdout.strip())
        tmp = tempfile.mkdtemp(prefix="picoemu-keyroute-", dir="/tmp")
        os.chmod(tmp, 0o755)
        emu = [PICOEMU, "--dir", os.path.join(tmp, "c")]
        subprocess.run(emu + ["--base-port", str(base), "up", "--replicasets", "1", "--replication-factor", "1"],
                       check=True, capture_output=True, timeout=300)
        port = json.loads(subprocess.run(emu + ["status", "--json"], check=True, capture_output=True,
                                         text=True).stdout)["instances"][0]["private_port"]
    try:
        n, answered, routed, problems = compare(port)
    finally:
        if tmp:
            subprocess.run(emu + ["down"], capture_output=True, timeout=120)
            os.rmdir(tmp)
    for p in problems[:50]:
        print("FAIL " + p)
    print("%d statements: %d routed by the full parser, %d answered by the fast path; %d problems"
          % (n, routed, answered, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
