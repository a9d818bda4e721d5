"""The private ports like pgproto (`up --private-pgproto`): paths.PRIVATE_PGPROTO_C compiled into the
cluster's directory, against the server headers of the PostgreSQL that runs the instances, and the
lines of the instances' configuration that load it. Fixed for the life of the cluster (state.json's
private_pgproto)."""

import os
import subprocess
from typing import List

from .. import pg
from ..errors import EmuError
from ..paths import PRIVATE_PGPROTO_C
from .core import Cluster


def library_path(cl: Cluster) -> str:
    return os.path.join(cl.dir, "private_pgproto.so")


def conf_lines(cl: Cluster) -> List[str]:
    """What the instances' configuration says for it: the library preloaded, and every execution
    planned with its own values (the planner hook sees the bound key of each one)."""
    return ["shared_preload_libraries = '%s'" % library_path(cl), "plan_cache_mode = force_custom_plan"]


def server_include_dir() -> str:
    """The server headers of the PostgreSQL major version that runs the instances (pg_config's first,
    else Debian's postgresql-server-dev-N)."""
    version = pg.run_server_cmd([pg.pgbin("postgres"), "--version"], "/").stdout.split()[-1]
    major = version.split(".")[0]
    dirs = ["/usr/include/postgresql/%s/server" % major]
    try:
        out = subprocess.run(["pg_config", "--includedir-server"], capture_output=True, text=True, timeout=10)
        dirs.insert(0, out.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    inc = next((d for d in dirs if d and os.path.exists(os.path.join(d, "postgres.h"))), None)
    if inc is None:
        raise EmuError("--private-pgproto needs the PostgreSQL %s server headers (postgresql-server-dev-%s)"
                       % (major, major))
    return inc


def build(cl: Cluster) -> None:
    """Compiles the library into the cluster's directory (readable by the servers' user)."""
    lib = library_path(cl)
    out = subprocess.run(["cc", "-O2", "-fPIC", "-shared", "-I", server_include_dir(), "-o", lib,
                          PRIVATE_PGPROTO_C], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise EmuError("cannot compile %s: %s" % (PRIVATE_PGPROTO_C, out.stderr[-2000:]))
    os.chmod(lib, 0o755)
