"""Picodata's catalog as every instance shows it, generated from the state: the document the
catalog views read (picoemu_catalog.json), the rows the storages read from tables (bucket ranges,
settings), the columns of _pico_table and _pico_index, and the static schema of a new instance."""

import json
from typing import Any, Dict, List

from .. import caps as emu_caps
from ..state import ADMIN_PASSWORD, ADMIN_USER, CLIENT_PASSWORD, CLIENT_USER, State, Table, compact_json
from .text import ident, lit, sql_file, values_list


def static_schema_sql(auth: str, version: str) -> str:
    """Run once on the template server (database DB_NAME), copied into every master: the roles, the
    catalog views, the emulator's tables, the hash functions, strict mode and routing by key.
    `version`: the emulated version (_pico_table has the column opts from 26.1)."""
    opts = ", opts json" if emu_caps.has("unlogged_tables", version) else ""
    schema = sql_file("schema.sql", password_encryption=lit("md5" if auth == "md5" else "scram-sha-256"),
                      admin=ident(ADMIN_USER), admin_pw=lit(ADMIN_PASSWORD),
                      client=ident(CLIENT_USER), client_pw=lit(CLIENT_PASSWORD), table_opts=opts)
    return "\n".join([schema, sql_file("hash.sql"), sql_file("strict.sql"), sql_file("key_route.sql"),
                      sql_file("truncate.sql"), sql_file("part.sql")])


def distribution_json(table: Table) -> str:
    if table["global"]:
        return compact_json({"Global": None})
    return compact_json({"ShardedImplicitly": [table["sharding_key"], "murmur3", table["tier"]]})


def opts_json(table: Table) -> List[Dict[str, List[bool]]]:
    """_pico_table.opts (26.1.1+, a column only there: schema.sql): TableDef.opts, a list of
    TableOption, each a one-key map whose value is the variant's fields, [true] (src/schema.rs:77-93
    at 26.1.1; test/int/test_unlogged.py: [{"unlogged": [True]}]); [] for a table created without
    options (src/sql.rs:1569-1575 at 26.1.1)."""
    return [{"unlogged": [True]}] if table.get("unlogged") else []


def format_json(table: Table) -> str:
    fields: List[Dict[str, Any]] = [{"name": c["name"], "field_type": c["pico"],
               "is_nullable": not (c["not_null"] or c["name"] in table["primary_key"])}
              for c in table["columns"]]
    if not table["global"]:
        fields.append({"name": "bucket_id", "field_type": "unsigned", "is_nullable": True})
    return compact_json(fields)


def primary_index(table: Table) -> Dict[str, Any]:
    """The _pico_index row of a table's primary key: index 0, `parts` one [field, type, collation,
    is_nullable, path] per key column (test/int/test_basics.py:451@25.5.10)."""
    by_name = {c["name"]: c for c in table["columns"]}
    return {"table_id": table["id"], "id": 0, "name": "%s_pkey" % table["name"], "type": "tree",
            "opts": [{"unique": True}], "parts": [[k, by_name[k]["pico"], None, False, None]
                                                  for k in table["primary_key"]],
            "operable": True, "schema_version": table["schema_version"]}


def catalog_doc(st: State) -> str:
    """The catalog as the JSON document every instance reads (picoemu_catalog.json): one list of row
    objects per catalog table, plus the bucket ranges behind _pico_bucket."""
    rs_by_name = {r["name"]: r for r in st.replicasets}
    release = st.version  # the emulated build, as it reports itself
    insts: List[Dict[str, Any]] = []
    peers: List[Dict[str, Any]] = []
    host = "0.0.0.0" if st.d["advertise_wildcard"] else "127.0.0.1"
    for i in st.instances:
        state = [("Expelled" if i["expelled"] else i["state"]), i["incarnation"]]
        insts.append({"name": i["name"], "uuid": i["uuid"], "raft_id": i["raft_id"],
                      "replicaset_name": i["replicaset"], "replicaset_uuid": rs_by_name[i["replicaset"]]["uuid"],
                      "current_state": state, "target_state": state, "failure_domain": {}, "tier": i["tier"],
                      "picodata_version": release, "sync_incarnation": i["incarnation"],
                      "target_state_reason": None, "target_state_change_time": i["state_change_time"]})
        peers.append({"raft_id": i["raft_id"], "address": "127.0.0.1:%d" % i["iproto_port"],
                      "connection_type": "iproto"})
        peers.append({"raft_id": i["raft_id"], "address": "%s:%d" % (host, st.advertised_port(i)),
                      "connection_type": "pgproto"})
    tier_by_name = {t["name"]: t for t in st.tiers}
    rss: List[Dict[str, Any]] = []
    for r in st.replicasets:
        t = tier_by_name[r["tier"]]
        rss.append({"name": r["name"], "uuid": r["uuid"], "current_master_name": r["master"],
                    "target_master_name": r["master"], "tier": r["tier"], "weight": float(r["weight"]),
                    "weight_origin": r["weight_origin"], "state": r["state"],
                    "current_config_version": r["config_version"], "target_config_version": r["config_version"],
                    "promotion_vclock": {}, "master_change_counter": r["master_change_counter"],
                    "current_bucket_state_version": t["bucket_state_version"],
                    "target_bucket_state_version": t["bucket_state_version"]})
    tiers = [{"name": t["name"], "replication_factor": t["replication_factor"], "can_vote": t["can_vote"],
              "current_vshard_config_version": t["vshard_config_version"],
              "target_vshard_config_version": t["vshard_config_version"],
              "vshard_bootstrapped": t["bucket_count"] > 0, "bucket_count": t["bucket_count"],
              "is_default": t["is_default"], "current_bucket_state_version": t["bucket_state_version"],
              "target_bucket_state_version": t["bucket_state_version"]} for t in st.tiers]
    tables = [{"id": t["id"], "name": t["name"], "distribution": json.loads(distribution_json(t)),
               "format": json.loads(format_json(t)), "schema_version": t["schema_version"], "operable": True,
               "engine": "memtx", "owner": 1, "description": "", "opts": opts_json(t)} for t in st.tables]
    indexes = [primary_index(t) for t in st.tables]
    buckets = [{"tier": tier, "bucket_start": a, "bucket_end": b, "replicaset_name": rs,
                "replicaset_uuid": rs_by_name[rs]["uuid"]}
               for tier, ranges in st.d["buckets"].items() for a, b, rs in ranges]
    return compact_json({"_pico_instance": insts, "_pico_peer_address": peers, "_pico_replicaset": rss,
                         "_pico_tier": tiers, "_pico_table": tables, "_pico_index": indexes, "buckets": buckets,
                         "grants": st.d["grants"]}) + "\n"


def catalog_sql(st: State) -> str:
    """What the masters' storage triggers and strict mode read from tables: the bucket ranges and the
    strict setting."""
    rs_by_name = {r["name"]: r for r in st.replicasets}
    range_rows: List[List[str]] = []
    for tier, ranges in st.d["buckets"].items():
        for start, end, rs in ranges:
            range_rows.append([lit(tier), lit(start), lit(end), lit(rs), lit(rs_by_name[rs]["uuid"])])
    out = "DELETE FROM _picoemu.bucket_range;\n"
    if range_rows:
        out += ("INSERT INTO _picoemu.bucket_range (tier, bucket_start, bucket_end, replicaset_name, "
                "replicaset_uuid) VALUES\n%s;\n" % values_list(range_rows))
    out += ("INSERT INTO _picoemu.setting VALUES ('strict', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;\n" % lit("on" if st.d["strict"] else "off"))
    # the cluster's read_preference (picoemu set read_preference): a session that names none takes
    # it (_picoemu.read_part(), strict.sql)
    out += ("INSERT INTO _picoemu.setting VALUES ('read_preference', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;\n" % lit(st.d.get("read_preference", "leader")))
    return out
