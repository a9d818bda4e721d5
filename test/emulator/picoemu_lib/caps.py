"""The Picodata builds the emulator emulates and what each can do, read from the table picoroute
itself uses (src/core/capabilities.json; src/core/capabilities.h states the rule), so that the
emulator and picoroute cannot disagree on a threshold.

The emulated builds are shipped releases, named as each build reports itself
(`_pico_instance.picodata_version`): BUILDS. has(capability, version) takes such a name or any
version as Picodata reports it (`26.2.1-rc2`, `26.3.0-115-gdef426247`, `picodata 26.2.1-rc2`) and
applies the table's rule: a version has what the newest release at or before it has. This module
is pure (no I/O but reading the table once).
"""

import functools
import json
import re
from typing import Any, Dict, List, Optional, Tuple, Union

from .paths import CAPABILITIES_JSON as TABLE_PATH

# A version as caps::parse_version orders it: (major, minor, patch, rc, commits), a release after
# its candidates (its rc is infinite).
Version = Tuple[int, int, int, Union[int, float], int]

# The builds `picoemu up --picodata` emulates: the newest release of each line Picodata shipped, and
# both candidates of 26.2.1, which differ in what picoroute and the emulator model (rc2 prunes by
# bucket_id, rc1 does not; rc1 has the same sources as the development tag 26.3.0, so it also
# stands for a 26.3.0 build). 25.6.0, 26.1.0, 26.2.0 and 26.3.0 open development lines and master
# is not a release: none is emulated.
BUILDS = ("25.5.10", "26.1.6", "26.2.1-rc1", "26.2.1-rc2")
DEFAULT_BUILD = "26.2.1-rc2"  # the newest release

_VERSION = re.compile(r"^(?:picodata )?(\d+)\.(\d+)(?:\.(\d+))?(?:-?rc(\d+))?(?:-(\d+)(?:-g[0-9a-fA-F]+)?)?"
                      r"(?:-dirty)?$")
_table: Optional[Dict[str, Any]] = None


def table() -> Dict[str, Any]:
    global _table
    if _table is None:
        with open(TABLE_PATH) as f:
            _table = json.load(f)
    return _table


def parse_version(text: object) -> Optional[Version]:
    """(major, minor, patch, rc, commits) ordered as released (a release after its candidates), or
    None for what is not a version. The grammar of caps::parse_version."""
    return _parse_text(str(text))


# The fronts ask has() several times per statement, always of the same few versions: the answers
# are remembered (the table does not change while a process runs).
@functools.lru_cache(maxsize=256)
def _parse_text(text: str) -> Optional[Version]:
    m = _VERSION.match(text)
    if not m or (m.group(4) is not None and int(m.group(4)) == 0):
        return None
    major, minor, patch, rc, commits = (int(g) if g is not None else 0 for g in m.groups())
    return (major, minor, patch, rc if rc > 0 else float("inf"), commits)


def version_at_least(version: object, first: str) -> bool:
    """Whether `version` is a version at or after the version `first`."""
    v, f = parse_version(version), parse_version(first)
    return v is not None and f is not None and v >= f


def releases() -> List[str]:
    """Every shipped release of the table, ascending, as its build reports it."""
    return [r["version"] for r in table()["releases"]]


def governing_release(version: object) -> Optional[str]:
    """The release whose capabilities `version` has: the newest release at or before it, or None
    (before every release, or not a version). caps::governing_release."""
    v = parse_version(version)
    if v is None:
        return None
    best: Optional[Tuple[Version, str]] = None
    for r in releases():
        p = parse_version(r)
        if p is not None and p <= v and (best is None or best[0] < p):
            best = (p, r)
    return best[1] if best else None


def has(capability: str, version: object) -> bool:
    """Whether `version` has `capability` (a name of capabilities.json): whether its governing
    release lies in one of the capability's release ranges. caps::has."""
    return _has(capability, str(version))


@functools.lru_cache(maxsize=1024)
def _has(capability: str, version: str) -> bool:
    r = governing_release(version)
    if r is None:
        return False
    p = _parsed(r)
    return any(_parsed(e["first"]) <= p <= _parsed(e["last"])
               for e in table()["capabilities"][capability]["releases"])


def _parsed(release: str) -> Version:
    """A release of the table, parsed (the table's own versions always parse)."""
    p = parse_version(release)
    if p is None:
        raise ValueError("src/core/capabilities.json names %r, which is not a version" % release)
    return p


def capabilities(version: object) -> Dict[str, bool]:
    """{capability name: bool} for every capability of the table."""
    return {name: has(name, version) for name in table()["capabilities"]}


def build(name: Optional[str]) -> str:
    """The emulated build called `name` (one of BUILDS), or ValueError naming them."""
    text = str(name or DEFAULT_BUILD).strip()
    if text not in BUILDS:
        raise ValueError("Picodata %s is not an emulated build: the emulator emulates the shipped builds %s"
                         % (text, ", ".join(BUILDS)))
    return text


def version_function_text(version: str) -> str:
    """What SQL version() returns on `version`: `picodata X` from 26.2.1-rc1 (proc_picodata_version,
    format_smolstr!("picodata {}", PICODATA_VERSION), src/info.rs:147@26.2.1-rc1 and
    :147@26.2.1-rc2), the bare PICODATA_VERSION before (src/info.rs:99@25.5.10, :146@26.1.6).
    PICODATA_VERSION is `git describe` of the build (GIT_DESCRIBE, build.rs:62@25.5.10,
    :144@26.2.1-rc2), the text _pico_instance.picodata_version also holds."""
    v = parse_version(version)
    if v is not None and v >= (26, 2, 1, 1, 0):
        return "picodata " + version
    return version


def hash_rule(version: object, wrong: bool = False) -> str:
    """The hashing rule of `version`'s release line, named as test/tools/bucket_hash_reference.py and
    the storages' picoemu.hash_rule name it: "26.1" where the version has integral_double_hash, else
    "25.5" (src/core/bucket_hash.h, hash_rule_for). `wrong`: the other rule, for a cluster made with
    `picoemu up --wrong-hash double` (a test device: it hashes doubles unlike the release it claims
    to be, where its rows are stored and in EXPLAIN alike)."""
    rule = "26.1" if has("integral_double_hash", version) else "25.5"
    if wrong:
        rule = "25.5" if rule == "26.1" else "26.1"
    return rule


def dnf_chain_limit() -> int:
    """Picodata's MAX_DNF_CHAINS (512)."""
    return int(table()["dnf_chain_limit"])


def dnf_most_chains() -> int:
    """The most OR-of-AND chains a WHERE clause may expand into and still be routed: 513.
    get_dnf_chains checks `result.len() + stack.len() > MAX_DNF_CHAINS` after popping a chain
    (sql-planner/src/ir/transformation/dnf.rs:218-221@26.1.6, sql-ir/src/ir/transformation/
    dnf.rs:218-221@26.2.1-rc1, crates/sql-ir/...:218-221@26.2.1-rc2): the chains built and pending
    then number one less than the clause's, so 513 chains expand and 514 give up (caps::kDnfMostChains)."""
    return dnf_chain_limit() + 1
