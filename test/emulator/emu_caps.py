"""What each emulated Picodata version can do, read from the table picoroute itself uses
(src/core/capabilities.json; src/core/capabilities.h describes it), so that the emulator and
picoroute cannot disagree on a threshold.

has(capability, version) takes an emulated version name (`25.5`, `26.1`, `26.2`, `26.2.1`, `head`),
a version as Picodata reports it (`26.2.1-rc2`, `26.3.0-115-gdef426247`) or a (major, minor, patch)
tuple. This module is pure (no I/O but reading the table once).
"""

import json
import os
import re

TABLE_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "core",
                          "capabilities.json")

# The release each emulated version name stands for: the text of _pico_instance.picodata_version.
# `head` is a master build after bucket_id pruning reached master (git describe of that build).
RELEASES = {"25.5": "25.5.10", "26.1": "26.1.6", "26.2": "26.2.0", "26.2.1": "26.2.1",
            "head": "26.3.0-142-g812716f7e"}

_VERSION = re.compile(r"^(?:picodata )?(\d+)\.(\d+)(?:\.(\d+))?(?:-?rc(\d+))?(?:-(\d+)(?:-g[0-9a-fA-F]+)?)?"
                      r"(?:-dirty)?$")
_table = None


def table():
    global _table
    if _table is None:
        with open(TABLE_PATH) as f:
            _table = json.load(f)
    return _table


def parse_version(text):
    """(major, minor, patch, rc, commits) ordered as released (a release after its candidates), or
    None for what is not a version. The grammar of caps::parse_version."""
    m = _VERSION.match(text)
    if not m or (m.group(4) is not None and int(m.group(4)) == 0):
        return None
    major, minor, patch, rc, commits = (int(g) if g is not None else 0 for g in m.groups())
    return (major, minor, patch, rc if rc > 0 else float("inf"), commits)


def release_of(version):
    if isinstance(version, tuple):
        return "%d.%d.%d" % tuple((list(version) + [0, 0, 0])[:3])
    v = str(version).strip().lower()
    if v in ("master", "latest"):
        v = "head"
    return RELEASES.get(v, v)


def has(capability, version):
    """Whether `version` has `capability` (a name of capabilities.json): the last first-version
    listed for its release series or an earlier one is not later than it."""
    v = parse_version(release_of(version))
    if v is None:
        return False
    last = None
    for first in table()["capabilities"][capability]["since"]:
        f = parse_version(first)
        if f[:2] <= v[:2]:
            last = f
    if last is None:
        return False
    return last[:2] != v[:2] or v >= last


def dnf_chain_limit():
    return table()["dnf_chain_limit"]
