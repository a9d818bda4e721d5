"""SQL the emulator runs on its servers: the static schema of an instance (Picodata's catalog tables,
the hash functions, strict-mode helpers), the catalog rows generated from the state, and the
per-replicaset objects of sharded tables (storage, postgres_fdw foreign tables, views, triggers)."""

import hashlib
import json
import re

from emu_state import (ADMIN_PASSWORD, ADMIN_USER, CLIENT_PASSWORD, CLIENT_USER,
                       DB_NAME, VERSIONS, EmuError, compact_json)


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
-- Versions without forward=off (before 26.2.1) have no strict mode: the setting is ignored there.
CREATE OR REPLACE FUNCTION _picoemu.strict_enabled() RETURNS boolean
LANGUAGE plpgsql STABLE AS $f$
DECLARE s text := current_setting('picoemu.strict', true);
BEGIN
  IF NOT coalesce(current_setting('picoemu.forward', true), 'off')::boolean THEN RETURN false; END IF;
  IF s IS NOT NULL AND s <> '' THEN RETURN s::boolean; END IF;
  RETURN coalesce((SELECT value::boolean FROM _picoemu.setting WHERE key = 'strict'), false);
END $f$;

-- Whether this instance reads its own replicaset's part of a sharded table from its local storage
-- (true), or asks the master of its replicaset through the foreign server picoemu_self (false):
-- * on a standby, only with read_preference replica or any (session setting picoemu.read_preference,
--   default leader), and only on versions whose replicas serve reads (26.1+);
-- * on a master, always, except on versions without local execution (25.5): the read then costs one
--   more hop, to itself.
-- IMMUTABLE on purpose: the planner folds it, so the branch not taken has no scan at all (a foreign
-- scan would connect even when not run). A plan cached in a session keeps the value it was planned
-- with.
CREATE OR REPLACE FUNCTION _picoemu.read_local() RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE pref text := lower(coalesce(nullif(current_setting('picoemu.read_preference', true), ''), 'leader'));
BEGIN
  IF pref NOT IN ('leader', 'replica', 'any') THEN
    RAISE EXCEPTION 'picoemu: invalid read_preference "%" (leader, replica or any)', pref USING ERRCODE = '22023';
  END IF;
  IF pg_is_in_recovery() THEN
    RETURN coalesce(current_setting('picoemu.replica_reads', true), 'off')::boolean AND pref IN ('replica', 'any');
  END IF;
  RETURN coalesce(current_setting('picoemu.local_exec', true), 'on')::boolean;
END $f$;

-- Buckets being moved away from this replicaset (picoemu_transfer.json in the data directory,
-- written by picoemu while it copies them): writes to them are refused as vshard refuses them
-- (TRANSFER_IS_IN_PROGRESS). A file, not a table, so that every transaction sees it at once,
-- whatever its snapshot.
CREATE OR REPLACE FUNCTION _picoemu.check_transfer(tbl text, tier text, b bigint) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog AS $f$
DECLARE dst text;
BEGIN
  IF pg_stat_file('picoemu_transfer.json', true) IS NULL THEN RETURN; END IF;
  SELECT x.dst INTO dst
    FROM json_to_recordset(coalesce(pg_read_file('picoemu_transfer.json', 0, 100000000, true), '[]')::json)
         AS x(tier text, bucket_start bigint, bucket_end bigint, dst text)
   WHERE x.tier = $2 AND $3 BETWEEN x.bucket_start AND x.bucket_end LIMIT 1;
  IF dst IS NOT NULL THEN
    RAISE EXCEPTION 'Bucket % is transferring to replicaset %', b, dst USING ERRCODE = 'XX000',
      DETAIL = format('picoemu: table "%s", instance %s: the bucket is being moved (vshard TRANSFER_IS_IN_PROGRESS)',
                      tbl, current_setting('picoemu.instance')),
      HINT = 'retry on the new owner once the move is published';
  END IF;
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


KEY_ROUTE_FUNCTIONS = r"""
-- Picodata routes a statement by its sharding-key predicate on every version: this recognises the
-- simple shape "SELECT ... FROM t WHERE ... AND key = literal ..." (also UPDATE t SET ... WHERE and
-- DELETE FROM t WHERE) in the statement the client sent (current_query()) and computes the bucket
-- the way the storage does. Anything it is not sure about (parameters, OR, joins, subqueries, several
-- statements, a literal whose type differs from the column's, IS NULL, ...) gives NULL: not routed,
-- every replicaset is asked, which costs more, never less.
CREATE OR REPLACE FUNCTION _picoemu.key_bucket(q text, tbl text, keycols text[], keycls text[], bucket_count int)
RETURNS bigint LANGUAGE plpgsql IMMUTABLE AS $f$
DECLARE
  lits text[] := '{}';
  m text;
  w text;
  terms text[] := '{}';
  t text;
  r text[];
  col text;
  val text;
  found_cols text[] := '{}';
  found_vals text[] := '{}';
  key bytea := '';
  k int;
  pos int;
BEGIN
  IF q IS NULL OR length(q) > 20000 THEN RETURN NULL; END IF;
  -- string literals out of the way: 'x' -> #<n>#
  LOOP
    m := substring(q from '''(?:[^'']|'''')*''');
    EXIT WHEN m IS NULL;
    lits := lits || replace(substr(m, 2, length(m) - 2), '''''', '''');
    q := overlay(q placing '#' || cardinality(lits) || '#' from position(m in q) for length(m));
    EXIT WHEN cardinality(lits) > 100;
  END LOOP;
  IF q ~ '--|/\*|\$' THEN RETURN NULL; END IF;
  q := regexp_replace(q, ';\s*$', '');
  IF position(';' in q) > 0 THEN RETURN NULL; END IF;
  q := lower(regexp_replace(q, '\s+', ' ', 'g'));
  q := replace(q, '"', '');
  IF q ~ '\m(join|union|except|intersect)\M' OR q ~ '^\s*with\M'
     OR (SELECT count(*) FROM regexp_matches(q, '\mselect\M', 'g')) > 1 THEN
    RETURN NULL;
  END IF;
  r := regexp_match(q, '^\s*(?:select .+? from|update|delete from) (?:public\.)?([a-z_][a-z0-9_]*) (?:set .+? )?where (.+)$');
  IF r IS NULL OR r[1] <> tbl THEN RETURN NULL; END IF;
  w := regexp_replace(r[2], ' (order by|group by|limit|having|option|returning|offset)\M.*$', '');
  -- a conjunction only: with no OR and no NOT, parentheses do not change which terms must hold
  IF w ~ '\m(or|not)\M' THEN RETURN NULL; END IF;
  terms := regexp_split_to_array(w, ' and ');
  FOREACH t IN ARRAY terms LOOP
    -- without its parentheses, the term must read exactly "column = literal"
    t := btrim(translate(t, '()', ''));
    r := regexp_match(t, '^([a-z_][a-z0-9_]*) ?= ?(-?[0-9]+|#[0-9]+#)$');
    IF r IS NULL THEN
      r := regexp_match(t, '^(-?[0-9]+|#[0-9]+#) ?= ?([a-z_][a-z0-9_]*)$');
      IF r IS NOT NULL THEN r := ARRAY[r[2], r[1]]; END IF;
    END IF;
    IF r IS NOT NULL AND NOT (r[1] = ANY(found_cols)) THEN
      found_cols := found_cols || r[1];
      found_vals := found_vals || r[2];
    END IF;
  END LOOP;
  FOR k IN 1 .. cardinality(keycols) LOOP
    pos := array_position(found_cols, keycols[k]);
    IF pos IS NULL THEN RETURN NULL; END IF;
    val := found_vals[pos];
    IF keycls[k] = 'int' AND val ~ '^-?[0-9]+$' AND length(val) < 19 THEN
      key := key || _picoemu.enc_int(val::int8);
    ELSIF keycls[k] = 'text' AND val ~ '^#[0-9]+#$' THEN
      key := key || _picoemu.enc_text(lits[substr(val, 2, length(val) - 2)::int]);
    ELSE
      RETURN NULL;
    END IF;
  END LOOP;
  RETURN _picoemu.bucket_id(key, bucket_count);
EXCEPTION WHEN OTHERS THEN
  RETURN NULL;
END $f$;

-- The last statement's answer is kept in the session (picoemu.key_cache): a statement asks once per
-- branch of the view.
CREATE OR REPLACE FUNCTION _picoemu.asked(tbl text, tier text, rs text, keycols text[], keycls text[], bucket_count int)
RETURNS boolean LANGUAGE plpgsql STABLE AS $f$
DECLARE
  q text := current_query();
  tag text := md5(coalesce(q, '') || '|' || tbl || '|' || bucket_count);
  c text := current_setting('picoemu.key_cache', true);
  b bigint;
  o text;
BEGIN
  IF c IS NOT NULL AND split_part(c, ':', 1) = tag THEN
    b := nullif(split_part(c, ':', 2), '')::bigint;
  ELSE
    b := _picoemu.key_bucket(q, tbl, keycols, keycls, bucket_count);
    PERFORM set_config('picoemu.key_cache', tag || ':' || coalesce(b::text, ''), false);
  END IF;
  IF b IS NULL THEN RETURN true; END IF;
  o := _picoemu.owner_of(tier, b);
  RETURN o IS NULL OR o = rs;
END $f$;
"""


def static_schema_sql(auth):
    """Run once on the template server (database DB_NAME), copied into every master."""
    enc = "md5" if auth == "md5" else "scram-sha-256"
    return r"""
SET password_encryption = '%(enc)s';
ALTER ROLE %(admin)s PASSWORD %(admin_pw)s;
CREATE ROLE %(client)s LOGIN PASSWORD %(client_pw)s;
CREATE EXTENSION postgres_fdw;

CREATE SCHEMA _picoemu;
-- The catalog is not stored in tables: every instance, standbys included, reads it from the file
-- picoemu_catalog.json that picoemu writes into its data directory, as every Picodata instance
-- applies the catalog from the Raft log. A standby thus shows a stopped master Offline at once.
CREATE FUNCTION _picoemu.catalog_file() RETURNS json
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $f$
DECLARE t text := pg_read_file('picoemu_catalog.json', 0, 100000000, true);
BEGIN
  IF t IS NULL THEN
    RAISE EXCEPTION 'picoemu: the catalog file picoemu_catalog.json is missing in the data directory of instance %%',
      current_setting('picoemu.instance', true) USING ERRCODE = 'PE003';
  END IF;
  RETURN t::json;
END $f$;
-- The rows of one catalog table, for a user that may read it: the grants are part of the catalog
-- document too (picoemu grant/revoke), so every instance applies the same ones. (A check for the
-- clients picoemu knows, not a security boundary: _picoemu.catalog_file() is callable by all.)
CREATE FUNCTION _picoemu.catalog_doc(tbl text) RETURNS json
LANGUAGE plpgsql STABLE SET search_path = pg_catalog AS $f$
DECLARE doc json := _picoemu.catalog_file();
BEGIN
  IF NOT (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
     AND NOT EXISTS (SELECT 1 FROM json_array_elements_text(doc -> 'grants' -> tbl) g
                      WHERE g IN ('PUBLIC', current_user)) THEN
    RAISE EXCEPTION 'permission denied for table %%', tbl USING ERRCODE = '42501';
  END IF;
  RETURN doc -> tbl;
END $f$;
GRANT EXECUTE ON FUNCTION _picoemu.catalog_doc(text) TO PUBLIC;
CREATE VIEW public._pico_instance AS SELECT * FROM json_to_recordset(_picoemu.catalog_doc('_pico_instance')) AS x(
  name text, uuid text, raft_id bigint, replicaset_name text, replicaset_uuid text, current_state json,
  target_state json, failure_domain json, tier text, picodata_version text, sync_incarnation bigint,
  target_state_reason text, target_state_change_time timestamptz);
CREATE VIEW public._pico_peer_address AS SELECT * FROM json_to_recordset(_picoemu.catalog_doc('_pico_peer_address')) AS x(
  raft_id bigint, address text, connection_type text);
CREATE VIEW public._pico_replicaset AS SELECT * FROM json_to_recordset(_picoemu.catalog_doc('_pico_replicaset')) AS x(
  name text, uuid text, current_master_name text, target_master_name text, tier text,
  weight double precision, weight_origin text, state text, current_config_version bigint,
  target_config_version bigint, promotion_vclock json, master_change_counter bigint,
  current_bucket_state_version bigint, target_bucket_state_version bigint);
CREATE VIEW public._pico_tier AS SELECT * FROM json_to_recordset(_picoemu.catalog_doc('_pico_tier')) AS x(
  name text, replication_factor bigint, can_vote boolean, current_vshard_config_version bigint,
  target_vshard_config_version bigint, vshard_bootstrapped boolean, bucket_count bigint,
  is_default boolean, current_bucket_state_version bigint, target_bucket_state_version bigint);
CREATE VIEW public._pico_table AS SELECT * FROM json_to_recordset(_picoemu.catalog_doc('_pico_table')) AS x(
  id bigint, name text, distribution json, format json, schema_version bigint, operable boolean,
  engine text, owner bigint, description text);
GRANT SELECT ON public._pico_instance, public._pico_peer_address, public._pico_replicaset,
  public._pico_tier, public._pico_table TO PUBLIC;

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
%(keyroute)s
""" % {"enc": enc, "admin": ident(ADMIN_USER), "admin_pw": lit(ADMIN_PASSWORD),
       "client": ident(CLIENT_USER), "client_pw": lit(CLIENT_PASSWORD),
       "hash": hash_functions_sql(), "strict": STRICT_FUNCTIONS, "keyroute": KEY_ROUTE_FUNCTIONS}


BUCKET_FUNCTION = r"""
CREATE OR REPLACE FUNCTION public._pico_bucket(tier text) RETURNS json
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog AS $f$
DECLARE r text; doc json := _picoemu.catalog_file();
BEGIN
  IF $1 IS NULL THEN RAISE EXCEPTION '_pico_bucket: tier name is null'; END IF;
  IF NOT EXISTS (SELECT 1 FROM json_array_elements(doc -> '_pico_tier') t WHERE t ->> 'name' = $1) THEN
    RAISE EXCEPTION '_pico_bucket: tier ''%'' doesn''t exist', $1;
  END IF;
  SELECT '[' || coalesce(string_agg(format(
      '{"bucket_id_start":%s,"bucket_id_end":%s,"current_replicaset_uuid":%s,'
      '"target_replicaset_uuid":%s,"tier_name":%s,"state":"active"}',
      b.bucket_start, b.bucket_end, to_json(b.replicaset_uuid), to_json(b.replicaset_uuid),
      to_json(b.tier)), ',' ORDER BY b.bucket_start), '') || ']'
    INTO r FROM json_to_recordset(doc -> 'buckets')
                AS b(tier text, bucket_start bigint, bucket_end bigint, replicaset_uuid text)
   WHERE b.tier = $1;
  RETURN r::json;
END $f$;
GRANT EXECUTE ON FUNCTION public._pico_bucket(text) TO PUBLIC;
"""


# ---- catalog rows ----------------------------------------------------------------------------------
def _values(rows):
    return ",\n".join("(" + ", ".join(v for v in row) + ")" for row in rows)


def catalog_doc(st):
    """The catalog as the JSON document every instance reads (picoemu_catalog.json): one list of row
    objects per catalog table, plus the bucket ranges behind _pico_bucket."""
    rs_by_name = {r["name"]: r for r in st.replicasets}
    release = VERSIONS[st.version]["release"]
    insts, peers = [], []
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
        peers.append({"raft_id": i["raft_id"], "address": "%s:%d" % (host, i.get("pgproto_port", i["port"])),
                      "connection_type": "pgproto"})
    tier_by_name = {t["name"]: t for t in st.tiers}
    rss = []
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
               "engine": "memtx", "owner": 1, "description": ""} for t in st.tables]
    buckets = [{"tier": tier, "bucket_start": a, "bucket_end": b, "replicaset_name": rs,
                "replicaset_uuid": rs_by_name[rs]["uuid"]}
               for tier, ranges in st.d["buckets"].items() for a, b, rs in ranges]
    return compact_json({"_pico_instance": insts, "_pico_peer_address": peers, "_pico_replicaset": rss,
                         "_pico_tier": tiers, "_pico_table": tables, "buckets": buckets,
                         "grants": st.d["grants"]}) + "\n"


def catalog_sql(st):
    """What the masters' storage triggers and strict mode read from tables: the bucket ranges and the
    strict setting."""
    rs_by_name = {r["name"]: r for r in st.replicasets}
    range_rows = []
    for tier, ranges in st.d["buckets"].items():
        for start, end, rs in ranges:
            range_rows.append([lit(tier), lit(start), lit(end), lit(rs), lit(rs_by_name[rs]["uuid"])])
    out = "DELETE FROM _picoemu.bucket_range;\n"
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


def _branch_pred(ranges, prune):
    """The ranges of one branch of a view, on _bucket (a copy of bucket_id). With prune (26.2.1+), the
    equivalence bucket_id = _bucket lets the planner carry a query's bucket_id = N over to _bucket and
    exclude the branches that cannot hold N (constraint_exclusion = on); a range condition on
    bucket_id is not carried over, so bucket_id BETWEEN never restricts. Without prune, nothing ties
    the two columns: every branch runs and only filters."""
    if not ranges:
        return "false"
    p = "(" + " OR ".join("_bucket BETWEEN %d::int8 AND %d::int8" % (a, b) for a, b in ranges) + ")"
    return ("bucket_id = _bucket AND " + p) if prune else p


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
        # _bucket repeats bucket_id: the views restrict each branch by _bucket, so that only an
        # equality on bucket_id (through the equivalence bucket_id = _bucket) can prune a branch, never
        # a range such as bucket_id BETWEEN a AND b (see _branch_pred)
        out.append("CREATE TABLE IF NOT EXISTS %s (%s, bucket_id bigint NOT NULL, _bucket bigint GENERATED "
                   "ALWAYS AS (bucket_id) STORED, PRIMARY KEY (%s));" % (LOCAL % name, col_defs, pk))
        out.append("CREATE INDEX IF NOT EXISTS %s ON %s (bucket_id);"
                   % (ident(t["name"] + "_bucket_id"), LOCAL % name))
    else:
        out.append("CREATE TABLE IF NOT EXISTS %s (%s, PRIMARY KEY (%s));" % (LOCAL % name, col_defs, pk))
    all_cols = cnames + (["bucket_id"] if sharded else [])
    sel = ", ".join(ident(c) for c in all_cols)
    ft_cols = col_defs + (", bucket_id bigint, _bucket bigint GENERATED ALWAYS AS (bucket_id) STORED"
                          if sharded else "")
    tier = st.tier(t["tier"]) if sharded else None
    if sharded:
        peers = [p for p in peers if st.replicaset(p)["tier"] == t["tier"]]
    for rs in peers:
        out.append("CREATE FOREIGN TABLE %s (%s) SERVER %s OPTIONS (schema_name '_picoemu_local', "
                   "table_name %s);" % (remote_rel(t, rs), ft_cols, ident(server_name(rs)), lit(t["name"])))
    if sharded:
        out.append("CREATE FOREIGN TABLE %s (%s) SERVER %s OPTIONS (schema_name '_picoemu_local', "
                   "table_name %s);" % (remote_rel(t, "self"), ft_cols, ident(server_name("self")),
                                        lit(t["name"])))
    tname = lit(t["name"])
    if sharded:
        n = tier["bucket_count"]
        # storage trigger: computes bucket_id, refuses rows of buckets this replicaset does not own,
        # and writes to buckets being moved away (vshard TRANSFER_IS_IN_PROGRESS)
        out.append(r"""CREATE OR REPLACE FUNCTION _picoemu.%(fn)s() RETURNS trigger LANGUAGE plpgsql AS $f$
DECLARE nb bigint;
BEGIN
  IF TG_OP = 'DELETE' THEN
    PERFORM _picoemu.check_transfer(%(tname)s, %(tier)s, OLD.bucket_id);
    RETURN OLD;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    PERFORM _picoemu.check_transfer(%(tname)s, %(tier)s, OLD.bucket_id);
  END IF;
  nb := %(hash)s;
  IF NEW.bucket_id IS NULL THEN NEW.bucket_id := nb;
  ELSIF NEW.bucket_id <> nb THEN
    RAISE EXCEPTION 'picoemu: row of table "%%" has bucket_id %% but its sharding key hashes to bucket %%', %(tname)s, NEW.bucket_id, nb;
  END IF;
  PERFORM _picoemu.check_transfer(%(tname)s, %(tier)s, nb);
  IF NOT _picoemu.owns(%(tier)s, nb) THEN
    RAISE EXCEPTION 'picoemu: instance %% (replicaset %%) does not own bucket %% of tier %%: refusing to store a row of table "%%" (owner: %%)',
      current_setting('picoemu.instance'), current_setting('picoemu.replicaset'), nb, %(tier)s, %(tname)s,
      coalesce(_picoemu.owner_of(%(tier)s, nb), '(none)') USING ERRCODE = 'PE002';
  END IF;
  RETURN NEW;
END $f$;
DROP TRIGGER IF EXISTS picoemu_store ON %(local)s;
CREATE TRIGGER picoemu_store BEFORE INSERT OR UPDATE OR DELETE ON %(local)s FOR EACH ROW EXECUTE FUNCTION _picoemu.%(fn)s();"""
                   % {"fn": ident("store__" + t["name"]), "hash": hash_expr(t, n), "tname": tname,
                      "tier": lit(t["tier"]), "local": LOCAL % name})
        ranges = {}
        for a, b, rs in st.d["buckets"][t["tier"]]:
            ranges.setdefault(rs, []).append((a, b))
        prune = st.cap("bucket_prune")
        own = _branch_pred(ranges.get(self_rs, []), prune)
        # this replicaset's part: the local storage, or its master through picoemu_self (a standby
        # without read_preference, or a version without local execution); see _picoemu.read_local()
        # routing by the sharding key (every version): a branch runs only if the statement does
        # not fix the key to a literal of a bucket another replicaset owns (_picoemu.asked, a
        # one-time filter evaluated before the branch's scan starts)
        by_name = {c["name"]: c for c in cols}
        asked = lambda rs: "_picoemu.asked(%s, %s, %s, ARRAY[%s]::text[], ARRAY[%s]::text[], %d)" % (
            tname, lit(t["tier"]), lit(rs), ", ".join(lit(k) for k in t["sharding_key"]),
            ", ".join(lit(by_name[k]["cls"]) for k in t["sharding_key"]), n)
        branches = ["SELECT %s FROM %s WHERE %s AND _picoemu.read_local() AND %s"
                    % (sel, LOCAL % name, own, asked(self_rs)),
                    "SELECT %s FROM %s WHERE %s AND NOT _picoemu.read_local() AND %s"
                    % (sel, remote_rel(t, "self"), own, asked(self_rs))]
        for rs in peers:
            if not ranges.get(rs):
                continue
            p = _branch_pred(ranges[rs], prune)
            branches.append("SELECT %s FROM %s WHERE %s AND %s AND NOT _picoemu.strict_enabled()"
                            % (sel, remote_rel(t, rs), p, asked(rs)))
            branches.append("SELECT %s FROM %s WHERE %s AND %s AND _picoemu.strict_enabled() AND "
                            "_picoemu.refuse(%s, %s, bucket_id)" % (sel, remote_rel(t, rs), p, asked(rs), tname,
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
    # The views are locked first: a writer locks the view before the foreign tables and storage behind
    # it, so taking them in the same order cannot deadlock with writes in flight (they are waited for).
    out.append(r"""DO $d$ DECLARE s record; BEGIN
  FOR s IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_trigger tg ON tg.tgrelid = c.oid AND tg.tgname = 'picoemu_route'
           WHERE n.nspname = 'public' AND c.relkind = 'v' ORDER BY c.relname LOOP
    EXECUTE format('LOCK TABLE public.%I IN ACCESS EXCLUSIVE MODE', s.relname);
  END LOOP;
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
    for rs in peers + ["self"]:
        port = serving_ports[self_rs if rs == "self" else rs]
        out.append("CREATE SERVER %s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host '127.0.0.1', "
                   "port %s, dbname %s, fetch_size '10000', connect_timeout '5', "
                   "application_name %s);" % (ident(server_name(rs)), lit(str(port)),
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
    return "\n".join(out) + "\n"


def ddl_hash(sql):
    return hashlib.sha256(sql.encode()).hexdigest()[:16]
