"""Cluster description (state.json) and the bucket arithmetic of the Picodata emulator.

The state file is the emulator's source of truth: every instance's catalog is generated from it.
Nothing here talks to a server.
"""

import json
import os
import uuid

import emu_caps

STATE_VERSION = 1
DB_NAME = "picodata"
ADMIN_USER = "admin"
ADMIN_PASSWORD = "admin"
CLIENT_USER = "picoroute"
CLIENT_PASSWORD = "picoroute"
# Emulated Picodata builds (`picoemu up --picodata V`, V one of emu_caps.BUILDS, the text of
# _pico_instance.picodata_version) and what each can do: the capabilities of picoroute's table
# (src/core/capabilities.json, read by emu_caps.py), by their names there; see the README's "Versions".
VERSIONS = {name: emu_caps.capabilities(name) for name in emu_caps.BUILDS}
DEFAULT_VERSION = emu_caps.DEFAULT_BUILD
IPROTO_PORT_OFFSET = 500  # iproto address advertised in _pico_peer_address: base + 500 + index
PRIVATE_PORT_OFFSET = 200  # the instance's PostgreSQL server, behind its front: base + 200 + index
CATALOG_TABLES = ["_pico_instance", "_pico_peer_address", "_pico_replicaset", "_pico_tier", "_pico_table",
                  "_pico_index"]
PUBLIC_TABLES = ["_pico_instance", "_pico_peer_address"]  # what role PUBLIC reads in Picodata


class EmuError(Exception):
    """An error reported to the user as `picoemu: <message>` with exit code 1."""


def compact_json(value):
    return json.dumps(value, separators=(",", ":"))


class State:
    def __init__(self, data, path):
        self.d = data
        self.path = path

    # ---- persistence -------------------------------------------------------------------------
    @classmethod
    def load(cls, path):
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

    def save(self, chown=None):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.d, f, indent=1, sort_keys=True)
            f.write("\n")
        if chown:
            os.chown(tmp, chown[0], chown[1])
        os.replace(tmp, self.path)

    # ---- lookups ------------------------------------------------------------------------------
    @property
    def version(self):
        return self.d.get("picodata_version", DEFAULT_VERSION)

    def cap(self, name):
        """A capability of the emulated Picodata build (a name of src/core/capabilities.json)."""
        return VERSIONS[self.version][name]

    def hash_rule(self):
        """The hashing rule of the emulated version's release line, named as
        test/tools/bucket_hash_reference.py and the storages' picoemu.hash_rule name it: "26.1" from
        the 26.1.0 tag on (capability integral_double_hash), else "25.5". See src/core/bucket_hash.h.
        A cluster made with `up --wrong-hash double` hashes by the other rule (emu_caps.hash_rule)."""
        return emu_caps.hash_rule(self.version, self.d.get("wrong_hash") == "double")

    @property
    def tiers(self):
        return self.d["tiers"]

    @property
    def replicasets(self):
        return self.d["replicasets"]

    @property
    def instances(self):
        return self.d["instances"]

    @property
    def tables(self):
        return self.d["tables"]

    @staticmethod
    def _named(items, name, error):
        """The item of items called name; else EmuError(error % (name, every name, or "none"))."""
        for x in items:
            if x["name"] == name:
                return x
        raise EmuError(error % (name, ", ".join(x["name"] for x in items) or "none"))

    def tier(self, name):
        return self._named(self.tiers, name, "tier '%s' doesn't exist (tiers: %s)")

    def default_tier(self):
        for t in self.tiers:
            if t["is_default"]:
                return t
        return self.tiers[0]

    def replicaset(self, name):
        return self._named(self.replicasets, name, "replicaset '%s' doesn't exist (replicasets: %s)")

    def instance(self, name):
        return self._named(self.instances, name, "instance '%s' doesn't exist (instances: %s)")

    def table(self, name):
        return self._named(self.tables, name, "table '%s' was not created by picoemu (tables: %s)")

    def members(self, rs_name):
        return [i for i in self.instances if i["replicaset"] == rs_name]

    def master(self, rs_name):
        return self.instance(self.replicaset(rs_name)["master"])

    def live_replicasets(self, tier=None):
        return [r for r in self.replicasets
                if r["state"] != "expelled" and (tier is None or r["tier"] == tier)]

    def active_instances(self):
        return [i for i in self.instances if not i["expelled"]]

    # ---- allocation ---------------------------------------------------------------------------
    def new_instance(self, rs, tier, index_in_rs, port_ok=lambda port: True):
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

    def new_replicaset(self, tier):
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

    def advertised_port(self, inst):
        """The pgproto port the catalog advertises for `inst`: its front's, or with
        `up --advertise-private` its PostgreSQL server's private port (clients then bypass the
        fronts; the fronts still run on their own ports)."""
        if self.d.get("advertise_private"):
            return inst["port"]
        return inst.get("pgproto_port", inst["port"])

    def bump_tier_version(self, tier_name):
        t = self.tier(tier_name)
        t["vshard_config_version"] += 1
        t["bucket_state_version"] += 1


def new_state(path, base_port, tiers, advertise_wildcard, auth, picodata_version=DEFAULT_VERSION,
              advertise_private=False):
    try:
        emu_caps.build(picodata_version)
    except ValueError as e:
        raise EmuError(str(e))
    data = {
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


# ---- bucket arithmetic ---------------------------------------------------------------------------
# A tier's bucket map is stored as ranges [start, end, replicaset_name], sorted, covering 1..N.
# For computation it is expanded into an owner list indexed by bucket id (index 0 unused).

def expand(ranges, bucket_count):
    owners = [None] * (bucket_count + 1)
    for start, end, rs in ranges:
        for b in range(start, end + 1):
            owners[b] = rs
    return owners


def compress(owners):
    ranges = []
    for b in range(1, len(owners)):
        rs = owners[b]
        if rs is None:
            continue
        if ranges and ranges[-1][2] == rs and ranges[-1][1] == b - 1:
            ranges[-1][1] = b
        else:
            ranges.append([b, b, rs])
    return ranges


def target_counts(bucket_count, weights):
    """weights: list of (name, weight) -> {name: count}; largest remainder, ties in list order."""
    total = sum(w for _, w in weights)
    if total <= 0:
        raise EmuError("all replicasets have weight 0: nowhere to put the buckets")
    exact = [(name, bucket_count * w / total) for name, w in weights]
    counts = {name: int(x) for name, x in exact}
    left = bucket_count - sum(counts.values())
    order = sorted(range(len(exact)), key=lambda i: (-(exact[i][1] - int(exact[i][1])), i))
    for i in order[:left]:
        counts[exact[i][0]] += 1
    return counts


def rebalance(owners, targets):
    """Minimal-movement rebalance: each replicaset above its target gives away its highest buckets;
    the freed buckets, ascending, fill the replicasets below target in the order of `targets`.
    Unowned buckets (None) and replicasets absent from `targets` give everything away."""
    new = list(owners)
    counts = {}
    for b in range(1, len(owners)):
        counts[owners[b]] = counts.get(owners[b], 0) + 1
    freed = []
    surplus = {rs: c - targets.get(rs, 0) for rs, c in counts.items()}
    for b in range(len(owners) - 1, 0, -1):
        rs = owners[b]
        if rs is None or surplus.get(rs, 0) > 0:
            freed.append(b)
            if rs is not None:
                surplus[rs] -= 1
    freed.sort()
    pos = 0
    for rs, want in targets.items():
        need = want - counts.get(rs, 0)
        for _ in range(max(need, 0)):
            new[freed[pos]] = rs
            pos += 1
    assert pos == len(freed), "rebalance left %d buckets without owner" % (len(freed) - pos)
    return new


def segments(old, new):
    """Maximal runs of buckets whose owner changes: [(src, dst, start, end)], src may be None."""
    out = []
    for b in range(1, len(old)):
        if old[b] == new[b]:
            continue
        if out and out[-1][0] == old[b] and out[-1][1] == new[b] and out[-1][3] == b - 1:
            out[-1][3] = b
        else:
            out.append([old[b], new[b], b, b])
    return [tuple(s) for s in out]
