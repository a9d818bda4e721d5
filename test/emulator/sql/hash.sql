-- murmur3 (32-bit, as Tarantool's vshard hashes a key) and Picodata's MessagePack key encodings,
-- in PL/pgSQL: the storage triggers compute a row's bucket with them. A 32-bit product x * C is
-- written ((x * lo) + (((x * hi) & 65535) << 16)) & 4294967295 with lo, hi the 16-bit halves of C,
-- so that bigint never overflows (c1 = 0xcc9e2d51, c2 = 0x1b873593, fmix 0x85ebca6b, 0xc2b2ae35).

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
    k := ((k * 11601) + (((k * 52382) & 65535) << 16)) & 4294967295;
    k := ((k << 15) | (k >> 17)) & 4294967295;
    k := ((k * 13715) + (((k * 7047) & 65535) << 16)) & 4294967295;
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
    k := ((k * 11601) + (((k * 52382) & 65535) << 16)) & 4294967295;
    k := ((k << 15) | (k >> 17)) & 4294967295;
    k := ((k * 13715) + (((k * 7047) & 65535) << 16)) & 4294967295;
    h := h # k;
  END IF;
  h := h # n;
  h := h # (h >> 16);
  h := ((h * 51819) + (((h * 34283) & 65535) << 16)) & 4294967295;
  h := h # (h >> 13);
  h := ((h * 44597) + (((h * 49842) & 65535) << 16)) & 4294967295;
  h := h # (h >> 16);
  RETURN h;
END $f$;

CREATE OR REPLACE FUNCTION _picoemu.bucket_id(key bytea, bucket_count int) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
$f$ SELECT _picoemu.murmur3_32(key, 13) % bucket_count + 1 $f$;

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

-- Doubles hash by the hashing rule of the emulated version's release line (picoemu.hash_rule, from
-- picoemu.conf; src/core/bucket_hash.h says where each was read). 25.5: every double is cb +
-- big-endian IEEE 754. 26.1 (from the 26.1.0 tag on): a finite integral double v with
-- -2^63 <= v < 2^64 hashes as the MessagePack integer it equals, marker included (-0.0 as 0, 2^63
-- and above as unsigned cf); NaN, the infinities, fractions and values outside that range as their
-- 8 big-endian IEEE 754 bytes without the cb header. Integers keep their marker under both.
CREATE OR REPLACE FUNCTION _picoemu.enc_double_25_5(v float8) RETURNS bytea
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$f$ SELECT CASE WHEN v IS NULL THEN '\xc0'::bytea ELSE '\xcb'::bytea || float8send(v) END $f$;

CREATE OR REPLACE FUNCTION _picoemu.enc_double_26_1(v float8) RETURNS bytea
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $f$
DECLARE
  b bytea;
BEGIN
  IF v IS NULL THEN RETURN '\xc0'::bytea; END IF;
  IF v IN ('NaN'::float8, 'Infinity'::float8, '-Infinity'::float8) OR v <> trunc(v)
     OR v < -9223372036854775808::float8 OR v >= 18446744073709551616::float8 THEN
    RETURN float8send(v);
  END IF;
  IF v >= 9223372036854775808::float8 THEN  -- beyond bigint: cf + the 64 bits, top bit set
    b := int8send((v - 9223372036854775808::float8)::int8);
    RETURN '\xcf'::bytea || set_byte(b, 0, get_byte(b, 0) | 128);
  END IF;
  RETURN _picoemu.enc_int(v::int8);
END $f$;

-- STABLE: it reads the setting. Unset (a server without a version) means the newest line's rule.
CREATE OR REPLACE FUNCTION _picoemu.enc_double(v float8) RETURNS bytea
LANGUAGE sql STABLE PARALLEL SAFE AS
$f$ SELECT CASE coalesce(nullif(current_setting('picoemu.hash_rule', true), ''), '26.1')
                WHEN '25.5' THEN _picoemu.enc_double_25_5(v) ELSE _picoemu.enc_double_26_1(v) END $f$;

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
  IF length(nib) % 2 = 1 THEN nib := '0' || nib; END IF;
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
