"""The cluster's description (state.json), the emulator's source of truth: every instance's catalog
is generated from it. Nothing here talks to a server (the bucket arithmetic is in buckets.py).

The document is JSON as the picoemu commands write it; its parts are typed as dicts of Any (Doc,
Inst, ...), named for what they hold: nothing validates a state file beyond its version.
"""

import json
import os
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import caps as emu_caps
from .errors import EmuError

STATE_VERSION = 1
DB_NAME = "picodata"
ADMIN_USER = "admin"
ADMIN_PASSWORD = "admin"
CLIENT_USER = "picoroute"
CLIENT_PASSWORD = "picoroute"
# Emulated Picodata builds (`picoemu up --picodata V`, V one of emu_caps.BUILDS, the text of
# _pico_instance.picodata_version) and what each can do: the capabilities of picoroute's table
# (src/core/capabilities.json, read by caps.py), by their names there; see the README's "Versions".
VERSIONS = {name: emu_caps.capabilities(name) for name in emu_caps.BUILDS}
DEFAULT_VERSION = emu_caps.DEFAULT_BUILD
IPROTO_PORT_OFFSET = 500  # iproto address advertised in _pico_peer_address: base + 500 + index
PRIVATE_PORT_OFFSET = 200  # the instance's PostgreSQL server, behind its front: base + 200 + index
CATALOG_TABLES = ["_pico_instance", "_pico_peer_address", "_pico_replicaset", "_pico_tier", "_pico_table",
                  "_pico_index"]
PUBLIC_TABLES = ["_pico_instance", "_pico_peer_address"]  # what role PUBLIC reads in Picodata

Doc = Dict[str, Any]  # state.json
Inst = Dict[str, Any]  # an instance of state.json "instances"
Replicaset = Dict[str, Any]  # of "replicasets"
Tier = Dict[str, Any]  # of "tiers"
Table = Dict[str, Any]  # of "tables" (its "columns": Column dicts)
Column = Dict[str, Any]
TierSpec = Tuple[str, int, int, int]  # `up --tier NAME:R:F:N`: name, replicasets, replication factor, buckets


def compact_json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))


class State:
    def __init__(self, data: Doc, path: str) -> None:
        self.d = data
        self.path = path

    # ---- persistence -------------------------------------------------------------------------
    @classmethod
    def load(cls, path: str) -> Optional["State"]:
        try:
            with open(path) as f:
                data = json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise EmuError("cannot read state file %s: %s" % (path, exc))
        if data.get("version") != STATE_VERSION:
            raise EmuError("state file %s has version %r, expected %d; run `picoemu down` first"
                           % (path, data.get("version"), STATE_VERSION))
        return cls(data, path)

    def save(self, chown: Optional[Tuple[int, int]] = None) -> None:
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.d, f, indent=1, sort_keys=True)
            f.write("\n")
        if chown:
            os.chown(tmp, chown[0], chown[1])
        os.replace(tmp, self.path)

    # ---- lookups ------------------------------------------------------------------------------
    @property
    def version(self) -> str:
        return str(self.d.get("picodata_version", DEFAULT_VERSION))

    def cap(self, name: str) -> bool:
        """A capability of the emulated Picodata build (a name of src/core/capabilities.json)."""
        return VERSIONS[self.version][name]

    def hash_rule(self) -> str:
        """The hashing rule of the emulated version's release line, named as
        test/tools/bucket_hash_reference.py and the storages' picoemu.hash_rule name it: "26.1" from
        the 26.1.0 tag on (capability integral_double_hash), else "25.5". See src/core/bucket_hash.h.
        A cluster made with `up --wrong-hash double` hashes by the other rule (emu_caps.hash_rule)."""
        return emu_caps.hash_rule(self.version, self.d.get("wrong_hash") == "double")

    @property
    def tiers(self) -> List[Tier]:
        return self.d["tiers"]

    @property
    def replicasets(self) -> List[Replicaset]:
        return self.d["replicasets"]

    @property
    def instances(self) -> List[Inst]:
        return self.d["instances"]

    @property
    def tables(self) -> List[Table]:
        return self.d["tables"]

    @staticmethod
    def _named(items: List[Dict[str, Any]], name: str, error: str) -> Dict[str, Any]:
        """The item of items called name; else EmuError(error % (name, every name, or "none"))."""
        for x in items:
            if x["name"] == name:
                return x
        raise EmuError(error % (name, ", ".join(x["name"] for x in items) or "none"))

    def tier(self, name: str) -> Tier:
        return self._named(self.tiers, name, "tier '%s' doesn't exist (tiers: %s)")

    def default_tier(self) -> Tier:
        for t in self.tiers:
            if t["is_default"]:
                return t
        return self.tiers[0]

    def replicaset(self, name: str) -> Replicaset:
        return self._named(self.replicasets, name, "replicaset '%s' doesn't exist (replicasets: %s)")

    def instance(self, name: str) -> Inst:
        return self._named(self.instances, name, "instance '%s' doesn't exist (instances: %s)")

    def table(self, name: str) -> Table:
        return self._named(self.tables, name, "table '%s' was not created by picoemu (tables: %s)")

    def members(self, rs_name: str) -> List[Inst]:
        return [i for i in self.instances if i["replicaset"] == rs_name]

    def master(self, rs_name: str) -> Inst:
        return self.instance(self.replicaset(rs_name)["master"])

    def live_replicasets(self, tier: Optional[str] = None) -> List[Replicaset]:
        return [r for r in self.replicasets
                if r["state"] != "expelled" and (tier is None or r["tier"] == tier)]

    def active_instances(self) -> List[Inst]:
        return [i for i in self.instances if not i["expelled"]]

    # ---- allocation ---------------------------------------------------------------------------
    def new_instance(self, rs: Replicaset, tier: Tier, index_in_rs: int,
                     port_ok: Callable[[int], bool] = lambda port: True) -> Inst:
        """Allocates the next index k: the front (advertised pgproto address) listens on base+k, the
        PostgreSQL server on the private port base+200+k. Indexes whose ports cannot be bound now (e.g.
        a client socket in TIME_WAIT holds one: the default range lies inside Linux's ephemeral range)
        are skipped."""
        for _ in range(PRIVATE_PORT_OFFSET):
            k = self.d["next_index"]
            self.d["next_index"] = k + 1
            if port_ok(self.d["base_port"] + k) and port_ok(self.d["base_port"] + PRIVATE_PORT_OFFSET + k):
                break
        else:
            raise EmuError("no free port found from %d on" % self.d["base_port"])
        if self.d["base_port"] + k > 65535 - 1000:
            raise EmuError("port %d is too high; choose a lower --base-port" % (self.d["base_port"] + k))
        raft_id = self.d["next_raft_id"]
        self.d["next_raft_id"] = raft_id + 1
        inst = {
            "name": "%s_%d" % (rs["name"], index_in_rs),
            "uuid": str(uuid.uuid4()),
            "raft_id": raft_id,
            "replicaset": rs["name"],
            "tier": tier["name"],
            "port": self.d["base_port"] + PRIVATE_PORT_OFFSET + k,   # PostgreSQL (private)
            "pgproto_port": self.d["base_port"] + k,                  # the front (advertised)
            "iproto_port": self.d["base_port"] + IPROTO_PORT_OFFSET + k,
            "state": "Online",
            "incarnation": 1,
            "expelled": False,
            "state_change_time": None,
        }
        self.instances.append(inst)
        return inst

    def new_replicaset(self, tier: Tier) -> Replicaset:
        used = [int(r["name"].rsplit("_", 1)[1]) for r in self.replicasets
                if r["tier"] == tier["name"] and r["name"].rsplit("_", 1)[1].isdigit()]
        n = max(used, default=0) + 1
        rs = {
            "name": "%s_%d" % (tier["name"], n),
            "uuid": str(uuid.uuid4()),
            "tier": tier["name"],
            "master": None,
            "weight": 1.0,
            "weight_origin": "auto",
            "state": "ready",
            "config_version": 1,
            "master_change_counter": 0,
        }
        self.replicasets.append(rs)
        return rs

    def advertised_port(self, inst: Inst) -> int:
        """The pgproto port the catalog advertises for `inst`: its front's, or with
        `up --advertise-private` its PostgreSQL server's private port (clients then bypass the
        fronts; the fronts still run on their own ports)."""
        if self.d.get("advertise_private"):
            return inst["port"]
        return inst.get("pgproto_port", inst["port"])

    def bump_tier_version(self, tier_name: str) -> None:
        t = self.tier(tier_name)
        t["vshard_config_version"] += 1
        t["bucket_state_version"] += 1


def new_state(path: str, base_port: int, tiers: Sequence[TierSpec], advertise_wildcard: bool, auth: str,
              picodata_version: str = DEFAULT_VERSION, advertise_private: bool = False) -> State:
    try:
        emu_caps.build(picodata_version)
    except ValueError as e:
        raise EmuError(str(e))
    data: Doc = {
        "version": STATE_VERSION,
        "picodata_version": picodata_version,
        "base_port": base_port,
        "dbname": DB_NAME,
        "auth": auth,
        "advertise_wildcard": advertise_wildcard,
        "advertise_private": advertise_private,
        "next_index": 0,
        "next_raft_id": 1,
        "next_table_id": 1025,
        "schema_version": 1,
        "strict": False,
        "bucket_function": True,
        # Picodata's cluster settings enforced by the fronts (ALTER SYSTEM SET in Picodata)
        "sql_motion_row_max": 5000,
        "sql_vdbe_opcode_max": 45000,
        # table -> roles with SELECT; "PUBLIC" is the pseudo-role
        "grants": {t: (["PUBLIC", CLIENT_USER] if t in PUBLIC_TABLES else [CLIENT_USER]) for t in CATALOG_TABLES},
        "tiers": [],
        "replicasets": [],
        "instances": [],
        "buckets": {},
        "tables": [],
    }
    for i, (name, r, f, n) in enumerate(tiers):
        data["tiers"].append({
            "name": name, "replicasets": r, "replication_factor": f, "bucket_count": n,
            "is_default": i == 0, "can_vote": True, "vshard_config_version": 1,
            "bucket_state_version": 1,
        })
        data["buckets"][name] = []
    return State(data, path)
