"""SQL the emulator runs on its servers: the static schema of an instance (Picodata's catalog tables,
the hash functions, strict-mode helpers), the catalog rows generated from the state, and the
per-replicaset objects of sharded tables (storage, postgres_fdw foreign tables, views, triggers)."""

import hashlib
import re

from emu_state import (ADMIN_PASSWORD, ADMIN_USER, CATALOG_TABLES, CLIENT_PASSWORD, CLIENT_USER,
                       DB_NAME, PICODATA_VERSION, EmuError, compact_json)


def ident(name):
    return '"' + name.replace('"', '""') + '"'


def lit(value):
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


# ---- user table columns ----------------------------------------------------------------------------
# (regex on the lower-cased type, canonical PostgreSQL type, class used for hashing, Picodata type)
_TYPES = [
    (r"smallint|int2", "int2", "int", "integer"),
    (r"integer|int|int4", "int4", "int", "integer"),
    (r"bigint|int8", "int8", "int", "integer"),
    (r"text|string", "text", "text", "string"),
    (r"(varchar|character varying)\s*\(\s*\d+\s*\)", None, "text", "string"),
    (r"varchar|character varying", "varchar", "text", "string"),
    (r"bool|boolean", "boolean", "bool", "boolean"),
    (r"float8|double precision|double", "float8", "double", "double"),
    (r"(numeric|decimal)\s*\(\s*\d+\s*(,\s*\d+\s*)?\)", None, "decimal", "decimal"),
    (r"numeric|decimal", "numeric", "decimal", "decimal"),
    (r"uuid", "uuid", "uuid", "uuid"),
    (r"timestamptz|timestamp with time zone|datetime", "timestamptz", "datetime", "datetime"),
]
NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


def _split_top(spec):
    parts, depth, cur = [], 0, ""
    for ch in spec:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_columns(spec):
    cols = []
    for part in _split_top(spec):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s+(.+?)(\s+not\s+null)?$", part, re.I)
        if not m:
            raise EmuError("cannot parse column definition %r (expected `name type [not null]`)" % part)
        name, typ, nn = m.group(1).lower(), " ".join(m.group(2).lower().split()), bool(m.group(3))
        if not NAME_RE.match(name) or name == "bucket_id":
            raise EmuError("bad column name %r (lower-case identifier, not bucket_id)" % name)
        for rx, canon, cls, pico in _TYPES:
            if re.fullmatch(rx, typ):
                pgtype = canon or typ.replace(" ", "")
                scale = None
                if cls == "decimal":
                    sm = re.search(r",\s*(\d+)", typ)
                    scale = int(sm.group(1)) if sm else (0 if "(" in typ else None)
                cols.append({"name": name, "type": pgtype, "cls": cls, "pico": pico,
                             "not_null": nn, "scale": scale})
                break
        else:
            raise EmuError("unsupported column type %r for %s (supported: int2 int4 int8 text varchar "
                           "bool float8 numeric uuid timestamptz)" % (typ, name))
    if not cols:
        raise EmuError("--columns lists no column")
    if len({c["name"] for c in cols}) != len(cols):
        raise EmuError("duplicate column name in --columns")
    return cols


ENCODER = {"int": "_picoemu.enc_int((%s)::int8)", "text": "_picoemu.enc_text((%s)::text)",
           "bool": "_picoemu.enc_bool(%s)", "double": "_picoemu.enc_double((%s)::float8)",
           "decimal": "_picoemu.enc_decimal((%s)::numeric)", "uuid": "_picoemu.enc_uuid(%s)"}


def hash_expr(table, bucket_count, rec="NEW"):
    by_name = {c["name"]: c for c in table["columns"]}
    parts = [ENCODER[by_name[k]["cls"]] % ("%s.%s" % (rec, ident(k))) for k in table["sharding_key"]]
    return "_picoemu.bucket_id(%s, %d)" % (" || ".join(parts), bucket_count)


def distribution_json(table):
    if table["global"]:
        return compact_json({"Global": None})
    return compact_json({"ShardedImplicitly": [table["sharding_key"], "murmur3", table["tier"]]})


def format_json(table):
    fields = [{"name": c["name"], "field_type": c["pico"],
               "is_nullable": not (c["not_null"] or c["name"] in table["primary_key"])}
              for c in table["columns"]]
    if not table["global"]:
        fields.append({"name": "bucket_id", "field_type": "unsigned", "is_nullable": True})
    return compact_json(fields)


# ---- murmur3 and Picodata's key encodings in PL/pgSQL -----------------------------------------------
def _mul(var, const):
    lo, hi = const & 0xFFFF, const >> 16
    return "((%s * %d) + (((%s * %d) & 65535) << 16)) & 4294967295" % (var, lo, var, hi)


def hash_functions_sql():
    c1, c2 = 0xCC9E2D51, 0x1B873593
    return r"""
CREATE OR REPLACE FUNCTION _picoemu.murmur3_32(data bytea, seed bigint) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $f$
DECLARE
  h bigint := seed & 4294967295;
  n int := length(data);
  nb int := length(data) / 4;
  k bigint;
  t int;
BEGIN
  FOR i IN 0 .. nb - 1 LOOP
    k := get_byte(data, 4*i)::bigint | (get_byte(data, 4*i+1)::bigint << 8)
         | (get_byte(data, 4*i+2)::bigint << 16) | (get_byte(data, 4*i+3)::bigint << 24);
    k := %(k_c1)s;
    k := ((k << 15) | (k >> 17)) & 4294967295;
    k := %(k_c2)s;
    h := h # k;
    h := ((h << 13) | (h >> 19)) & 4294967295;
    h := (h * 5 + 3864292196) & 4294967295;
  END LOOP;
  t := n - nb * 4;
  IF t > 0 THEN
    k := 0;
    IF t >= 3 THEN k := k # (get_byte(data, nb*4+2)::bigint << 16); END IF;
    IF t >= 2 THEN k := k # (get_byte(data, nb*4+1)::bigint << 8); END IF;
    k := k # get_byte(data, nb*4)::bigint;
    k := %(k_c1)s;
    k := ((k << 15) | (k >> 17)) & 4294967295;
    k := %(k_c2)s;
    h := h # k;
  END IF;
  h := h # n;
  h := h # (h >> 16);
  h := %(h_f1)s;
  h := h # (h >> 13);
  h := %(h_f2)s;
  h := h # (h >> 16);
  RETURN h;
END $f$;

CREATE OR REPLACE FUNCTION _picoemu.bucket_id(key bytea, bucket_count int) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
$f$ SELECT _picoemu.murmur3_32(key, 13) %% bucket_count + 1 $f$;

CREATE OR REPLACE FUNCTION _picoemu.enc_int(v bigint) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $f$
BEGIN
  IF v IS NULL THEN RETURN '\xc0'::bytea; END IF;
  IF v >= 0 THEN
    IF v <= 127 THEN RETURN set_byte('\x00'::bytea, 0, v::int); END IF;
    IF v <= 255 THEN RETURN '\xcc'::bytea || set_byte('\x00'::bytea, 0, v::int); END IF;
    IF v <= 65535 THEN RETURN '\xcd'::bytea || substring(int4send(v::int) from 3 for 2); END IF;
    IF v <= 4294967295 THEN RETURN '\xce'::bytea || substring(int8send(v) from 5 for 4); END IF;
    RETURN '\xcf'::bytea || int8send(v);
  END IF;
  IF v >= -32 THEN RETURN set_byte('\x00'::bytea, 0, (v + 256)::int); END IF;
  IF v >= -128 THEN RETURN '\xd0'::bytea || set_byte('\x00'::bytea, 0, (v + 256)::int); END IF;
  IF v >= -32768 THEN RETURN '\xd1'::bytea || int2send(v::int2); END IF;
  IF v >= -2147483648 THEN RETURN '\xd2'::bytea || int4send(v::int4); END IF;
  RETURN '\xd3'::bytea || int8send(v);
END $f$;

CREATE OR REPLACE FUNCTION _picoemu.enc_text(v text) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$f$ SELECT CASE WHEN v IS NULL THEN '\xc0'::bytea ELSE convert_to(v, 'UTF8') END $f$;

CREATE OR REPLACE FUNCTION _picoemu.enc_bool(v boolean) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$f$ SELECT CASE WHEN v IS NULL THEN '\xc0'::bytea WHEN v THEN '\xc3'::bytea ELSE '\xc2'::bytea END $f$;

CREATE OR REPLACE FUNCTION _picoemu.enc_double(v float8) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$f$ SELECT CASE WHEN v IS NULL THEN '\xc0'::bytea ELSE '\xcb'::bytea || float8send(v) END $f$;

CREATE OR REPLACE FUNCTION _picoemu.enc_uuid(v uuid) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$f$ SELECT CASE WHEN v IS NULL THEN '\xc0'::bytea
           ELSE '\xd802'::bytea || decode(replace(v::text, '-', ''), 'hex') END $f$;

-- Tarantool decimal: MessagePack ext type 1 = scale (MessagePack int) + packed BCD + sign nibble.
CREATE OR REPLACE FUNCTION _picoemu.enc_decimal(v numeric) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $f$
DECLARE
  digits text;
  nib text;
  payload bytea;
  n int;
  hdr bytea;
BEGIN
  IF v IS NULL THEN RETURN '\xc0'::bytea; END IF;
  IF v = 'NaN'::numeric THEN RAISE EXCEPTION 'picoemu: cannot hash decimal NaN'; END IF;
  digits := ltrim(replace(abs(v)::text, '.', ''), '0');
  IF digits = '' THEN digits := '0'; END IF;
  nib := digits || CASE WHEN v < 0 THEN 'd' ELSE 'c' END;
  IF length(nib) %% 2 = 1 THEN nib := '0' || nib; END IF;
  payload := _picoemu.enc_int(scale(v)) || decode(nib, 'hex');
  n := length(payload);
  hdr := CASE n WHEN 1 THEN '\xd4'::bytea WHEN 2 THEN '\xd5'::bytea WHEN 4 THEN '\xd6'::bytea
                WHEN 8 THEN '\xd7'::bytea WHEN 16 THEN '\xd8'::bytea ELSE NULL END;
  IF hdr IS NULL THEN
    IF n <= 255 THEN hdr := '\xc7'::bytea || set_byte('\x00'::bytea, 0, n);
    ELSE hdr := '\xc8'::bytea || int2send(n::int2);
    END IF;
  END IF;
  RETURN hdr || '\x01'::bytea || payload;
END $f$;
""" % {"k_c1": _mul("k", c1), "k_c2": _mul("k", c2), "h_f1": _mul("h", 0x85EBCA6B),
       "h_f2": _mul("h", 0xC2B2AE35)}


STRICT_FUNCTIONS = r"""
-- Strict mode (Picodata's forward=off): the session setting picoemu.strict wins when set
-- (SET picoemu.strict = on, or options='-c picoemu.strict=on'); else the cluster-wide setting.
CREATE OR REPLACE FUNCTION _picoemu.strict_enabled() RETURNS boolean
LANGUAGE plpgsql STABLE AS $f$
DECLARE s text := current_setting('picoemu.strict', true);
BEGIN
  IF s IS NOT NULL AND s <> '' THEN RETURN s::boolean; END IF;
  RETURN coalesce((SELECT value::boolean FROM _picoemu.setting WHERE key = 'strict'), false);
END $f$;

CREATE OR REPLACE FUNCTION _picoemu.owner_of(tier text, b bigint) RETURNS text
LANGUAGE sql STABLE AS $f$
  SELECT replicaset_name FROM _picoemu.bucket_range r
   WHERE r.tier = $1 AND $2 BETWEEN r.bucket_start AND r.bucket_end $f$;

CREATE OR REPLACE FUNCTION _picoemu.refuse(tbl text, tier text, b bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $f$
BEGIN
  RAISE EXCEPTION 'picoemu: forward=off: bucket % of table "%" belongs to replicaset %, not to % (instance %)',
    b, tbl, coalesce(_picoemu.owner_of(tier, b), '(none)'), current_setting('picoemu.replicaset'),
    current_setting('picoemu.instance')
    USING ERRCODE = 'PE001', HINT = 'strict mode: send the statement to the master of the owning replicaset';
END $f$;

CREATE OR REPLACE FUNCTION _picoemu.owns(tier text, b bigint) RETURNS boolean
LANGUAGE sql STABLE AS $f$
  SELECT EXISTS (SELECT 1 FROM _picoemu.bucket_range r
                  WHERE r.tier = $1 AND $2 BETWEEN r.bucket_start AND r.bucket_end
                    AND r.replicaset_name = current_setting('picoemu.replicaset')) $f$;
"""


def static_schema_sql(auth):
    """Run once on the template server (database DB_NAME), copied into every master."""
    enc = "md5" if auth == "md5" else "scram-sha-256"
    return r"""
SET password_encryption = '%(enc)s';
ALTER ROLE %(admin)s PASSWORD %(admin_pw)s;
CREATE ROLE %(client)s LOGIN PASSWORD %(client_pw)s;
CREATE EXTENSION postgres_fdw;

CREATE TABLE public._pico_instance (
  name text PRIMARY KEY, uuid text NOT NULL UNIQUE, raft_id bigint NOT NULL UNIQUE,
  replicaset_name text NOT NULL, replicaset_uuid text NOT NULL, current_state json NOT NULL,
  target_state json NOT NULL, failure_domain json NOT NULL, tier text NOT NULL,
  picodata_version text NOT NULL, sync_incarnation bigint NOT NULL, target_state_reason text,
  target_state_change_time timestamptz);
CREATE TABLE public._pico_peer_address (
  raft_id bigint NOT NULL, address text NOT NULL, connection_type text NOT NULL,
  PRIMARY KEY (raft_id, connection_type));
CREATE TABLE public._pico_replicaset (
  name text PRIMARY KEY, uuid text NOT NULL UNIQUE, current_master_name text NOT NULL,
  target_master_name text NOT NULL, tier text NOT NULL, weight double precision NOT NULL,
  weight_origin text NOT NULL, state text NOT NULL, current_config_version bigint NOT NULL,
  target_config_version bigint NOT NULL, promotion_vclock json NOT NULL,
  master_change_counter bigint, current_bucket_state_version bigint,
  target_bucket_state_version bigint);
CREATE TABLE public._pico_tier (
  name text PRIMARY KEY, replication_factor bigint NOT NULL, can_vote boolean NOT NULL,
  current_vshard_config_version bigint NOT NULL, target_vshard_config_version bigint NOT NULL,
  vshard_bootstrapped boolean NOT NULL, bucket_count bigint NOT NULL, is_default boolean NOT NULL,
  current_bucket_state_version bigint, target_bucket_state_version bigint);
CREATE TABLE public._pico_table (
  id bigint PRIMARY KEY, name text NOT NULL UNIQUE, distribution json NOT NULL, format json NOT NULL,
  schema_version bigint NOT NULL, operable boolean NOT NULL, engine text NOT NULL,
  owner bigint NOT NULL, description text NOT NULL);
REVOKE ALL ON public._pico_instance, public._pico_peer_address, public._pico_replicaset,
  public._pico_tier, public._pico_table FROM PUBLIC;

CREATE SCHEMA _picoemu;
GRANT USAGE ON SCHEMA _picoemu TO PUBLIC;
CREATE TABLE _picoemu.meta (key text PRIMARY KEY, value text);
CREATE TABLE _picoemu.setting (key text PRIMARY KEY, value text);
CREATE TABLE _picoemu.bucket_range (
  tier text NOT NULL, bucket_start bigint NOT NULL, bucket_end bigint NOT NULL,
  replicaset_name text NOT NULL, replicaset_uuid text NOT NULL, PRIMARY KEY (tier, bucket_start));
CREATE TABLE _picoemu.guard (tier text NOT NULL, bucket_id bigint NOT NULL, PRIMARY KEY (tier, bucket_id));
GRANT SELECT ON ALL TABLES IN SCHEMA _picoemu TO PUBLIC;
CREATE SCHEMA _picoemu_local;
CREATE SCHEMA _picoemu_remote;
%(hash)s
%(strict)s
""" % {"enc": enc, "admin": ident(ADMIN_USER), "admin_pw": lit(ADMIN_PASSWORD),
       "client": ident(CLIENT_USER), "client_pw": lit(CLIENT_PASSWORD),
       "hash": hash_functions_sql(), "strict": STRICT_FUNCTIONS}


BUCKET_FUNCTION = r"""
CREATE OR REPLACE FUNCTION public._pico_bucket(tier text) RETURNS json
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $f$
DECLARE r text;
BEGIN
  IF $1 IS NULL THEN RAISE EXCEPTION '_pico_bucket: tier name is null'; END IF;
  IF NOT EXISTS (SELECT 1 FROM public._pico_tier t WHERE t.name = $1) THEN
    RAISE EXCEPTION '_pico_bucket: tier ''%'' doesn''t exist', $1;
  END IF;
  SELECT '[' || coalesce(string_agg(format(
      '{"bucket_id_start":%s,"bucket_id_end":%s,"current_replicaset_uuid":%s,'
      '"target_replicaset_uuid":%s,"tier_name":%s,"state":"active"}',
      b.bucket_start, b.bucket_end, to_json(b.replicaset_uuid), to_json(b.replicaset_uuid),
      to_json(b.tier)), ',' ORDER BY b.bucket_start), '') || ']'
    INTO r FROM _picoemu.bucket_range b WHERE b.tier = $1;
  RETURN r::json;
END $f$;
GRANT EXECUTE ON FUNCTION public._pico_bucket(text) TO PUBLIC;
"""


# ---- catalog rows ----------------------------------------------------------------------------------
def _values(rows):
    return ",\n".join("(" + ", ".join(v for v in row) + ")" for row in rows)


def _insert(table, cols, rows):
    out = "DELETE FROM public.%s;\n" % table
    if rows:
        out += "INSERT INTO public.%s (%s) VALUES\n%s;\n" % (table, ", ".join(cols), _values(rows))
    return out


def catalog_sql(st):
    rs_by_name = {r["name"]: r for r in st.replicasets}
    inst_rows, peer_rows = [], []
    for i in st.instances:
        state = "Expelled" if i["expelled"] else i["state"]
        sj = lit(compact_json([state, i["incarnation"]])) + "::json"
        inst_rows.append([lit(i["name"]), lit(i["uuid"]), lit(i["raft_id"]), lit(i["replicaset"]),
                          lit(rs_by_name[i["replicaset"]]["uuid"]), sj, sj, "'{}'::json",
                          lit(i["tier"]), lit(PICODATA_VERSION), lit(i["incarnation"]), "NULL",
                          lit(i["state_change_time"]) + "::timestamptz"])
        host = "0.0.0.0" if st.d["advertise_wildcard"] else "127.0.0.1"
        peer_rows.append([lit(i["raft_id"]), lit("127.0.0.1:%d" % i["iproto_port"]), "'iproto'"])
        peer_rows.append([lit(i["raft_id"]), lit("%s:%d" % (host, i.get("pgproto_port", i["port"]))),
                          "'pgproto'"])
    tier_by_name = {t["name"]: t for t in st.tiers}
    rs_rows = []
    for r in st.replicasets:
        t = tier_by_name[r["tier"]]
        rs_rows.append([lit(r["name"]), lit(r["uuid"]), lit(r["master"]), lit(r["master"]),
                        lit(r["tier"]), lit(float(r["weight"])), lit(r["weight_origin"]),
                        lit(r["state"]), lit(r["config_version"]), lit(r["config_version"]),
                        "'{}'::json", lit(r["master_change_counter"]), lit(t["bucket_state_version"]),
                        lit(t["bucket_state_version"])])
    tier_rows = [[lit(t["name"]), lit(t["replication_factor"]), lit(t["can_vote"]),
                  lit(t["vshard_config_version"]), lit(t["vshard_config_version"]),
                  lit(t["bucket_count"] > 0), lit(t["bucket_count"]), lit(t["is_default"]),
                  lit(t["bucket_state_version"]), lit(t["bucket_state_version"])] for t in st.tiers]
    table_rows = [[lit(t["id"]), lit(t["name"]), lit(distribution_json(t)) + "::json",
                   lit(format_json(t)) + "::json", lit(t["schema_version"]), "true", "'memtx'", "1", "''"]
                  for t in st.tables]
    range_rows = []
    for tier, ranges in st.d["buckets"].items():
        for start, end, rs in ranges:
            range_rows.append([lit(tier), lit(start), lit(end), lit(rs), lit(rs_by_name[rs]["uuid"])])
    out = _insert("_pico_instance", ["name", "uuid", "raft_id", "replicaset_name", "replicaset_uuid",
                                     "current_state", "target_state", "failure_domain", "tier",
                                     "picodata_version", "sync_incarnation", "target_state_reason",
                                     "target_state_change_time"], inst_rows)
    out += _insert("_pico_peer_address", ["raft_id", "address", "connection_type"], peer_rows)
    out += _insert("_pico_replicaset", ["name", "uuid", "current_master_name", "target_master_name",
                                        "tier", "weight", "weight_origin", "state",
                                        "current_config_version", "target_config_version",
                                        "promotion_vclock", "master_change_counter",
                                        "current_bucket_state_version", "target_bucket_state_version"],
                   rs_rows)
    out += _insert("_pico_tier", ["name", "replication_factor", "can_vote",
                                  "current_vshard_config_version", "target_vshard_config_version",
                                  "vshard_bootstrapped", "bucket_count", "is_default",
                                  "current_bucket_state_version", "target_bucket_state_version"],
                   tier_rows)
    out += _insert("_pico_table", ["id", "name", "distribution", "format", "schema_version",
                                   "operable", "engine", "owner", "description"], table_rows)
    out += "DELETE FROM _picoemu.bucket_range;\n"
    if range_rows:
        out += ("INSERT INTO _picoemu.bucket_range (tier, bucket_start, bucket_end, replicaset_name, "
                "replicaset_uuid) VALUES\n%s;\n" % _values(range_rows))
    out += ("INSERT INTO _picoemu.setting VALUES ('strict', %s) "
            "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;\n" % lit("on" if st.d["strict"] else "off"))
    return out


# ---- per-replicaset objects -------------------------------------------------------------------------
def _pred(ranges):
    if not ranges:
        return "false"
    return "(" + " OR ".join("bucket_id BETWEEN %d::int8 AND %d::int8" % (a, b) for a, b in ranges) + ")"


def server_name(rs_name):
    return "picoemu_" + rs_name


def remote_rel(table, rs_name):
    return "_picoemu_remote.%s" % ident("%s__%s" % (table["name"], rs_name))


LOCAL = "_picoemu_local.%s"


def _dispatch(var, targets, make_stmt, what):
    """IF var = 'rs1' THEN <stmt on rel1> ELSIF ... ELSE RAISE."""
    bucket = "OLD.bucket_id" if var == "old_owner" else "nb"
    out = []
    for n, (rs, rel) in enumerate(targets):
        out.append("%s %s = %s THEN %s;" % ("IF" if n == 0 else "ELSIF", var, lit(rs), make_stmt(rel)))
    out.append("ELSE RAISE EXCEPTION 'picoemu: %s: no replicaset for bucket %%', %s; END IF;"
               % (what, bucket))
    return "\n    ".join(out)


def table_ddl(st, t, self_rs, peers):
    """Objects of one user table on the master of replicaset self_rs. peers: [rs_name] of the other
    live replicasets that have a foreign server."""
    name = ident(t["name"])
    cols = t["columns"]
    cnames = [c["name"] for c in cols]
    col_defs = ", ".join("%s %s%s" % (ident(c["name"]), c["type"], " NOT NULL" if c["not_null"] else "")
                         for c in cols)
    sharded = not t["global"]
    out = []
    pk = ", ".join(ident(k) for k in t["primary_key"])
    if sharded:
        out.append("CREATE TABLE IF NOT EXISTS %s (%s, bucket_id bigint NOT NULL, PRIMARY KEY (%s));"
                   % (LOCAL % name, col_defs, pk))
        out.append("CREATE INDEX IF NOT EXISTS %s ON %s (bucket_id);"
                   % (ident(t["name"] + "_bucket_id"), LOCAL % name))
    else:
        out.append("CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s));" % (LOCAL % name, col_defs, pk))
    all_cols = cnames + (["bucket_id"] if sharded else [])
    sel = ", ".join(ident(c) for c in all_cols)
    ft_cols = col_defs + (", bucket_id bigint" if sharded else "")
    tier = st.tier(t["tier"]) if sharded else None
    if sharded:
        peers = [p for p in peers if st.replicaset(p)["tier"] == t["tier"]]
    for rs in peers:
        out.append("CREATE FOREIGN TABLE %s (%s) SERVER %s OPTIONS (schema_name '_picoemu_local', "
                   "table_name %s);" % (remote_rel(t, rs), ft_cols, ident(server_name(rs)), lit(t["name"])))
    tname = lit(t["name"])
    if sharded:
        n = tier["bucket_count"]
        # storage trigger: computes bucket_id, refuses rows of buckets this replicaset does not own
        out.append(r"""CREATE OR REPLACE FUNCTION _picoemu.%(fn)s() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE nb bigint := %(hash)s;
BEGIN
  IF NEW.bucket_id IS NULL THEN NEW.bucket_id := nb;
  ELSIF NEW.bucket_id <> nb THEN
    RAISE EXCEPTION 'picoemu: row of table "%%" has bucket_id %% but its sharding key hashes to bucket %%', %(tname)s, NEW.bucket_id, nb;
  END IF;
  IF NOT _picoemu.owns(%(tier)s, nb) THEN
    RAISE EXCEPTION 'picoemu: instance %% (replicaset %%) does not own bucket %% of tier %%: refusing to store a row of table "%%" (owner: %%)',
      current_setting('picoemu.instance'), current_setting('picoemu.replicaset'), nb, %(tier)s, %(tname)s,
      coalesce(_picoemu.owner_of(%(tier)s, nb), '(none)') USING ERRCODE = 'PE002';
  END IF;
  RETURN NEW;
END $f$;
DROP TRIGGER IF EXISTS picoemu_store ON %(local)s;
CREATE TRIGGER picoemu_store BEFORE INSERT OR UPDATE ON %(local)s FOR EACH ROW EXECUTE FUNCTION _picoemu.%(fn)s();"""
                   % {"fn": ident("store__" + t["name"]), "hash": hash_expr(t, n), "tname": tname,
                      "tier": lit(t["tier"]), "local": LOCAL % name})
        ranges = {}
        for a, b, rs in st.d["buckets"][t["tier"]]:
            ranges.setdefault(rs, []).append((a, b))
        branches = ["SELECT %s FROM %s WHERE %s" % (sel, LOCAL % name, _pred(ranges.get(self_rs, [])))]
        for rs in peers:
            if not ranges.get(rs):
                continue
            p = _pred(ranges[rs])
            branches.append("SELECT %s FROM %s WHERE %s AND NOT _picoemu.strict_enabled()"
                            % (sel, remote_rel(t, rs), p))
            branches.append("SELECT %s FROM %s WHERE %s AND _picoemu.strict_enabled() AND "
                            "_picoemu.refuse(%s, %s, bucket_id)" % (sel, remote_rel(t, rs), p, tname,
                                                                   lit(t["tier"])))
        nulls = ", ".join("NULL::%s AS %s" % (c["type"], ident(c["name"])) for c in cols)
        branches.append("SELECT %s, g.bucket_id FROM _picoemu.guard g WHERE g.tier = %s AND "
                        "_picoemu.strict_enabled() AND _picoemu.refuse(%s, %s, g.bucket_id)"
                        % (nulls, lit(t["tier"]), tname, lit(t["tier"])))
        out.append("CREATE VIEW public.%s AS\n  %s;" % (name, "\nUNION ALL\n  ".join(branches)))
        owner_case = "CASE " + " ".join("WHEN %%s BETWEEN %d AND %d THEN %s" % (a, b, lit(rs))
                                          for a, b, rs in st.d["buckets"][t["tier"]]) + " END"
        targets = [(self_rs, LOCAL % name)] + [(rs, remote_rel(t, rs)) for rs in peers]
        key_match = " AND ".join("%s = OLD.%s" % (ident(k), ident(k)) for k in t["primary_key"])
        key_match += " AND bucket_id = OLD.bucket_id"
        ins = lambda rel: "INSERT INTO %s (%s) VALUES (%s)" % (
            rel, sel, ", ".join("NEW.%s" % ident(c) for c in all_cols))
        upd = lambda rel: "UPDATE %s SET %s WHERE %s" % (
            rel, ", ".join("%s = NEW.%s" % (ident(c), ident(c)) for c in cnames), key_match)
        dele = lambda rel: "DELETE FROM %s WHERE %s" % (rel, key_match)
        strict_check = ("IF %%s <> %s AND _picoemu.strict_enabled() THEN PERFORM _picoemu.refuse(%s, %s, %%s); END IF;"
                        % (lit(self_rs), tname, lit(t["tier"])))
        out.append(r"""CREATE OR REPLACE FUNCTION _picoemu.%(fn)s() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public AS $f$
DECLARE nb bigint; owner text; old_owner text;
BEGIN
  IF TG_OP IN ('UPDATE', 'DELETE') THEN
    old_owner := %(old_case)s;
    %(old_check)s
  END IF;
  IF TG_OP = 'DELETE' THEN
    %(del_old)s
    RETURN OLD;
  END IF;
  nb := %(hash)s;
  IF TG_OP = 'INSERT' AND NEW.bucket_id IS NOT NULL AND NEW.bucket_id <> nb THEN
    RAISE EXCEPTION 'picoemu: bucket_id cannot be inserted: the sharding key of this row hashes to bucket %%', nb;
  END IF;
  IF TG_OP = 'UPDATE' AND NEW.bucket_id IS DISTINCT FROM OLD.bucket_id THEN
    RAISE EXCEPTION 'picoemu: bucket_id cannot be updated';
  END IF;
  NEW.bucket_id := nb;
  owner := %(new_case)s;
  %(new_check)s
  IF TG_OP = 'INSERT' THEN
    %(ins)s
  ELSIF owner = old_owner AND NEW.bucket_id = OLD.bucket_id THEN
    %(upd)s
  ELSE
    %(del_old)s
    %(ins)s
  END IF;
  RETURN NEW;
END $f$;
CREATE TRIGGER picoemu_route INSTEAD OF INSERT OR UPDATE OR DELETE ON public.%(name)s
  FOR EACH ROW EXECUTE FUNCTION _picoemu.%(fn)s();"""
                   % {"fn": ident("route__" + t["name"]), "hash": hash_expr(t, n),
                      "old_case": owner_case.replace("%s", "OLD.bucket_id"),
                      "new_case": owner_case.replace("%s", "nb"),
                      "old_check": strict_check % ("old_owner", "OLD.bucket_id"),
                      "new_check": strict_check % ("owner", "nb"),
                      "del_old": _dispatch("old_owner", targets, dele, "delete"),
                      "upd": _dispatch("owner", targets, upd, "update"),
                      "ins": _dispatch("owner", targets, ins, "insert"), "name": name})
    else:
        out.append("CREATE VIEW public.%s AS SELECT %s FROM %s;" % (name, sel, LOCAL % name))
        key_match = " AND ".join("%s = OLD.%s" % (ident(k), ident(k)) for k in t["primary_key"])
        rels = [LOCAL % name] + [remote_rel(t, rs) for rs in peers]
        ins = "\n    ".join("INSERT INTO %s (%s) VALUES (%s);" % (r, sel, ", ".join("NEW.%s" % ident(c) for c in cnames)) for r in rels)
        upd = "\n    ".join("UPDATE %s SET %s WHERE %s;" % (r, ", ".join("%s = NEW.%s" % (ident(c), ident(c)) for c in cnames), key_match) for r in rels)
        dele = "\n    ".join("DELETE FROM %s WHERE %s;" % (r, key_match) for r in rels)
        out.append(r"""CREATE OR REPLACE FUNCTION _picoemu.%(fn)s() RETURNS trigger LANGUAGE plpgsql
SECURITY DEFINER SET search_path = pg_catalog, public AS $f$
BEGIN
  IF TG_OP = 'INSERT' THEN
    %(ins)s
    RETURN NEW;
  ELSIF TG_OP = 'UPDATE' THEN
    %(upd)s
    RETURN NEW;
  END IF;
  %(dele)s
  RETURN OLD;
END $f$;
CREATE TRIGGER picoemu_route INSTEAD OF INSERT OR UPDATE OR DELETE ON public.%(name)s
  FOR EACH ROW EXECUTE FUNCTION _picoemu.%(fn)s();"""
                   % {"fn": ident("route__" + t["name"]), "ins": ins, "upd": upd, "dele": dele,
                      "name": name})
    out.append("GRANT SELECT, INSERT, UPDATE, DELETE ON public.%s TO PUBLIC;" % name)
    return "\n".join(out)


def ddl_sql(st, self_rs, serving_ports):
    """Objects that depend on the topology, for the master of self_rs. serving_ports: rs -> port of
    the instance the other replicasets reach (the master, or a running replica when it is down)."""
    out = []
    out.append(r"""DO $d$ DECLARE s record; BEGIN
  FOR s IN SELECT srvname FROM pg_foreign_server WHERE srvname LIKE 'picoemu\_%' LOOP
    EXECUTE format('DROP SERVER %I CASCADE', s.srvname);
  END LOOP;
  FOR s IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_trigger tg ON tg.tgrelid = c.oid AND tg.tgname = 'picoemu_route'
           WHERE n.nspname = 'public' AND c.relkind = 'v' LOOP
    EXECUTE format('DROP VIEW public.%I CASCADE', s.relname);
  END LOOP;
END $d$;""")
    peers = [r["name"] for r in st.replicasets if r["state"] != "expelled" and r["name"] != self_rs]
    for rs in peers:
        out.append("CREATE SERVER %s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', "
                   "port %s, dbname %s, fetch_size '10000', connect_timeout '5', "
                   "application_name %s);" % (ident(server_name(rs)), lit(str(serving_ports[rs])),
                                              lit(DB_NAME), lit("picoemu_fdw")))
        out.append("CREATE USER MAPPING FOR PUBLIC SERVER %s OPTIONS (user %s, password %s);"
                   % (ident(server_name(rs)), lit(ADMIN_USER), lit(ADMIN_PASSWORD)))
    for t in st.tables:
        out.append(table_ddl(st, t, self_rs, peers))
    out.append("DELETE FROM _picoemu.guard;")
    for t in st.tiers:
        if t["bucket_count"] > 0:
            out.append("INSERT INTO _picoemu.guard SELECT %s, g FROM generate_series(1, %d) g WHERE NOT "
                       "EXISTS (SELECT 1 FROM _picoemu.bucket_range r WHERE r.tier = %s AND g BETWEEN "
                       "r.bucket_start AND r.bucket_end AND r.replicaset_name = %s);"
                       % (lit(t["name"]), t["bucket_count"], lit(t["name"]), lit(self_rs)))
    if st.d["bucket_function"]:
        out.append(BUCKET_FUNCTION)
    else:
        out.append("DROP FUNCTION IF EXISTS public._pico_bucket(text);")
    roles = sorted({r for users in st.d["grants"].values() for r in users if r != "PUBLIC"}
                   | {CLIENT_USER})
    for table in CATALOG_TABLES:
        out.append("REVOKE ALL ON public.%s FROM PUBLIC, %s;" % (table, ", ".join(ident(r) for r in roles)))
        for r in st.d["grants"].get(table, []):
            out.append("GRANT SELECT ON public.%s TO %s;" % (table, "PUBLIC" if r == "PUBLIC" else ident(r)))
    return "\n".join(out) + "\n"


def ddl_hash(sql):
    return hashlib.sha256(sql.encode()).hexdigest()[:16]
