#!/usr/bin/env python3
"""Independent reference for Picodata's bucket id (Python 3, standard library only).

bucket_id = murmur3_x86_32(key bytes, seed 13) % bucket_count + 1, where the key bytes are the
sharding-key values, each encoded as Picodata encodes it, concatenated in key order
(see the Picodata facts document, section 3: how Picodata computes bucket_id).

This file deliberately shares no code with src/core/bucket_hash.cpp: it exists so that the two
implementations can be checked against each other. It is also imported by the test cluster
emulator:

    import bucket_hash_reference as ref
    ref.bucket_id([1], 3000)                      # -> 1934
    ref.bucket_id(["lol", 5], 3000)               # -> 442
    ref.bucket_id([decimal.Decimal("1")], 3000)   # -> 2135
    ref.bucket_id([1.0], 3000)                    # -> 2099 (Picodata up to 26.1.0)
    ref.bucket_id([1.0], 3000, ref.INTEGRAL_AS_INTEGER)  # -> 1934 (26.1.1 and later)

Supported value types: int, str, bool, None, float, decimal.Decimal, uuid.UUID.

Doubles (float) hash by one of two rules, the last argument of encode_value, encode_key and
bucket_id:
    IEEE754               Picodata up to 26.1.0 (the default): cb + 8 bytes big-endian IEEE 754.
    INTEGRAL_AS_INTEGER   Picodata 26.1.1 and later (a breaking change of its CHANGELOG; the tuple
                          hash of its tarantool): a finite integral double v, -2**63 <= v < 2**64,
                          hashes as the MessagePack integer int(v) (so -0.0 as 0); NaN, the
                          infinities, fractions and integral values outside that range stay
                          IEEE 754.

Command line:
    bucket_hash_reference.py --self-test
    bucket_hash_reference.py [--count N] [--hex] [--double-rule ieee754|integral-as-integer]
                              int:1 text:lol decimal:1.0 uuid:... bool:true null double:2.5
"""

import decimal
import math
import struct
import sys
import uuid

SEED = 13
DEFAULT_BUCKET_COUNT = 3000
MAX_DECIMAL_DIGITS = 38
IEEE754 = "ieee754"
INTEGRAL_AS_INTEGER = "integral-as-integer"
DOUBLE_RULES = (IEEE754, INTEGRAL_AS_INTEGER)

_MASK32 = 0xFFFFFFFF


def _rotl32(x, r):
    return ((x << r) | (x >> (32 - r))) & _MASK32


def _fmix32(h):
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _MASK32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _MASK32
    h ^= h >> 16
    return h


def murmur3_x86_32(data, seed=0):
    """MurmurHash3_x86_32 of a bytes-like object (blocks read little-endian)."""
    data = bytes(data)
    c1 = 0xCC9E2D51
    c2 = 0x1B873593
    h = seed & _MASK32
    nblocks = len(data) // 4
    for i in range(nblocks):
        (k,) = struct.unpack_from("<I", data, 4 * i)
        k = (k * c1) & _MASK32
        k = _rotl32(k, 15)
        k = (k * c2) & _MASK32
        h ^= k
        h = _rotl32(h, 13)
        h = (h * 5 + 0xE6546B64) & _MASK32
    tail = data[4 * nblocks:]
    k = 0
    for i, byte in enumerate(tail):
        k |= byte << (8 * i)
    if tail:
        k = (k * c1) & _MASK32
        k = _rotl32(k, 15)
        k = (k * c2) & _MASK32
        h ^= k
    h ^= len(data)
    return _fmix32(h)


def encode_int(value):
    """Most compact MessagePack integer, marker included."""
    if value >= 0:
        if value <= 0x7F:
            return bytes([value])
        if value <= 0xFF:
            return b"\xcc" + struct.pack(">B", value)
        if value <= 0xFFFF:
            return b"\xcd" + struct.pack(">H", value)
        if value <= 0xFFFFFFFF:
            return b"\xce" + struct.pack(">I", value)
        if value <= 0xFFFFFFFFFFFFFFFF:
            return b"\xcf" + struct.pack(">Q", value)
        raise OverflowError("integer %d does not fit in 64 bits" % value)
    if value >= -32:
        return struct.pack(">b", value)
    if value >= -0x80:
        return b"\xd0" + struct.pack(">b", value)
    if value >= -0x8000:
        return b"\xd1" + struct.pack(">h", value)
    if value >= -0x80000000:
        return b"\xd2" + struct.pack(">i", value)
    if value >= -0x8000000000000000:
        return b"\xd3" + struct.pack(">q", value)
    raise OverflowError("integer %d does not fit in 64 bits" % value)


def encode_ext(ext_type, payload):
    """MessagePack extension: fixext when the length is 1/2/4/8/16, else ext8/16/32."""
    n = len(payload)
    fixed = {1: 0xD4, 2: 0xD5, 4: 0xD6, 8: 0xD7, 16: 0xD8}
    if n in fixed:
        header = bytes([fixed[n]])
    elif n <= 0xFF:
        header = b"\xc7" + struct.pack(">B", n)
    elif n <= 0xFFFF:
        header = b"\xc8" + struct.pack(">H", n)
    else:
        header = b"\xc9" + struct.pack(">I", n)
    return header + struct.pack(">b", ext_type) + payload


def encode_decimal(value):
    """Tarantool decimal (ext type 1): scale as MessagePack int, then packed BCD with sign nibble.

    The scale is kept (Decimal("1.0") != Decimal("1")); negative zero is encoded with the
    positive sign nibble, matching src/core/bucket_hash.cpp.
    """
    if not isinstance(value, decimal.Decimal):
        value = decimal.Decimal(value)
    if not value.is_finite():
        raise ValueError("decimal %s is not a finite number" % value)
    sign, digits, exponent = value.as_tuple()
    if exponent > 0:
        raise ValueError("decimal %s has a positive exponent; write it in plain form" % value)
    # Decimal already drops leading zeros of the coefficient ("007.5" -> (7, 5)) and keeps
    # trailing ones ("1.10" -> (1, 1, 0)); zero is the single digit 0.
    digits = list(digits)
    while len(digits) > 1 and digits[0] == 0:
        digits.pop(0)
    scale = -exponent
    if len(digits) > MAX_DECIMAL_DIGITS:
        raise OverflowError("decimal %s has more than %d digits" % (value, MAX_DECIMAL_DIGITS))
    if scale > MAX_DECIMAL_DIGITS:
        raise OverflowError("decimal %s has more than %d fractional digits"
                            % (value, MAX_DECIMAL_DIGITS))
    negative = sign == 1 and any(digits)
    nibbles = digits + [0xD if negative else 0xC]
    if len(nibbles) % 2:
        nibbles.insert(0, 0)
    bcd = bytes((nibbles[i] << 4) | nibbles[i + 1] for i in range(0, len(nibbles), 2))
    return encode_ext(1, encode_int(scale) + bcd)


def encode_double(value, double_rule=IEEE754):
    """A double by one of DOUBLE_RULES (see the module's docstring)."""
    if double_rule not in DOUBLE_RULES:
        raise ValueError("unknown double rule %r" % (double_rule,))
    if double_rule == INTEGRAL_AS_INTEGER and math.isfinite(value) and value.is_integer():
        as_int = int(value)
        if -2 ** 63 <= as_int < 2 ** 64:
            return encode_int(as_int)
    return b"\xcb" + struct.pack(">d", value)


def encode_value(value, double_rule=IEEE754):
    """Picodata's hashing encoding of one key value."""
    if value is None:
        return b"\xc0"
    if isinstance(value, bool):  # before int: bool is a subclass of int
        return b"\xc3" if value else b"\xc2"
    if isinstance(value, int):
        return encode_int(value)
    if isinstance(value, float):
        return encode_double(value, double_rule)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, decimal.Decimal):
        return encode_decimal(value)
    if isinstance(value, uuid.UUID):
        return b"\xd8\x02" + value.bytes
    raise TypeError("cannot hash a value of type %s" % type(value).__name__)


def encode_key(values, double_rule=IEEE754):
    return b"".join(encode_value(v, double_rule) for v in values)


def bucket_id_for_bytes(key_bytes, bucket_count):
    if bucket_count < 1:
        raise ValueError("bucket_count must be at least 1")
    return murmur3_x86_32(key_bytes, SEED) % bucket_count + 1


def bucket_id(values, bucket_count=DEFAULT_BUCKET_COUNT, double_rule=IEEE754):
    """Bucket id (1..bucket_count) of a sharding key given as a list of Python values."""
    return bucket_id_for_bytes(encode_key(values, double_rule), bucket_count)


def self_test():
    D = decimal.Decimal
    checks = [
        # published MurmurHash3_x86_32 vectors
        (murmur3_x86_32(b"", 0), 0),
        (murmur3_x86_32(b"", 1), 0x514E28B7),
        (murmur3_x86_32(b"", 0xFFFFFFFF), 0x81F16F39),
        (murmur3_x86_32(b"\x00\x00\x00\x00", 0), 0x2362F9DE),
        (murmur3_x86_32(b"\xff\xff\xff\xff", 0), 0x76293B50),
        (murmur3_x86_32(b"\x21\x43\x65\x87", 0), 0xF55B516B),
        (murmur3_x86_32(b"\x21\x43\x65\x87", 0x5082EDEE), 0x2362F9DE),
        (murmur3_x86_32(b"\x21\x43\x65", 0), 0x7E4A8634),
        (murmur3_x86_32(b"\x21\x43", 0), 0xA0F7B07A),
        (murmur3_x86_32(b"\x21", 0), 0x72661CF4),
        (murmur3_x86_32(b"hello", 0), 0x248BFA47),
        (murmur3_x86_32(b"The quick brown fox jumps over the lazy dog", 0), 0x2E4FF723),
        # verified against Picodata (facts, section 3)
        (bucket_id([1], 3000), 1934),
        (bucket_id(["lol", 5], 3000), 442),
        (encode_value(D("1")), bytes.fromhex("d501001c")),
        (bucket_id([D("1")], 3000), 2135),
        # encodings
        (encode_value(D("1.0")), bytes.fromhex("c7030101010c")),
        (encode_value(D("1.00")), bytes.fromhex("c7030102100c")),
        (encode_value(D("-12.340")), bytes.fromhex("d6010312340d")),
        (encode_value(D("-0")), bytes.fromhex("d501000c")),
        (encode_value(D("0.00")), bytes.fromhex("d501020c")),
        (encode_value(D("007.5")), bytes.fromhex("c7030101075c")),
        (encode_value(uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")),
         bytes.fromhex("d802" + "00112233445566778899aabbccddeeff")),
        (encode_value(2.0), bytes.fromhex("cb4000000000000000")),
        (encode_value(True), b"\xc3"),
        (encode_value(None), b"\xc0"),
        (encode_value(-33), b"\xd0\xdf"),
        (encode_value(2 ** 64 - 1), b"\xcf" + b"\xff" * 8),
    ] + _double_checks()
    failures = 0
    for i, (got, want) in enumerate(checks):
        if got != want:
            failures += 1
            print("self-test check %d failed: got %r, want %r" % (i, got, want))
    if failures:
        print("self-test: %d of %d checks failed" % (failures, len(checks)))
        return 1
    print("self-test: all %d checks passed" % len(checks))
    return 0


def _double_checks():
    """Both double rules: Picodata's own buckets for 1.0 and every edge of the integral range."""
    new = INTEGRAL_AS_INTEGER
    inf = float("inf")
    h = bytes.fromhex
    checks = [
        # Picodata's test/int/sql/test_known_defects.sql: at 26.1.0 `1::double` -> 2099; from
        # 26.1.1 doubles hash like the integer they equal, and integer 1 -> 1934
        (bucket_id([1.0], 3000), 2099),
        (bucket_id([1.0], 3000, new), 1934),
        (bucket_id(["lol", 5.0], 3000, new), 442),
        (bucket_id(["lol", 5.0], 3000), bucket_id_for_bytes(b"lol" + h("cb4014000000000000"), 3000)),
    ]
    # value, IEEE 754 bytes (both rules when the integral form is None), integral form
    edges = [
        (1.0, "cb3ff0000000000000", "01"),
        (-3.0, "cbc008000000000000", "fd"),
        (1.5, "cb3ff8000000000000", None),
        (1e300, "cb7e37e43c8800759c", None),
        (-0.0, "cb8000000000000000", "00"),
        (float("nan"), "cb7ff8000000000000", None),
        (inf, "cb7ff0000000000000", None),
        (-inf, "cbfff0000000000000", None),
        (255.0, "cb406fe00000000000", "ccff"),
        (-33.0, "cbc040800000000000", "d0df"),
        (2.0 ** 53, "cb4340000000000000", "cf0020000000000000"),
        (2.0 ** 63, "cb43e0000000000000", "cf8000000000000000"),
        (2.0 ** 64 - 2048, "cb43efffffffffffff", "cffffffffffffff800"),
        (2.0 ** 64, "cb43f0000000000000", None),
        (-2.0 ** 63, "cbc3e0000000000000", "d38000000000000000"),
        (-2.0 ** 63 - 2048, "cbc3e0000000000001", None),
    ]
    for value, ieee, integral in edges:
        checks.append((encode_value(value).hex(), ieee))
        checks.append((encode_value(value, new).hex(), integral or ieee))
    return checks


def _parse_arg(arg):
    kind, _, text = arg.partition(":")
    if kind == "null" and not text:
        return None
    if kind == "int":
        return int(text, 10)
    if kind == "text":
        return text
    if kind == "bool":
        if text in ("true", "false"):
            return text == "true"
        raise ValueError("bool must be true or false")
    if kind == "double":
        return float(text)
    if kind == "decimal":
        return decimal.Decimal(text)
    if kind == "uuid":
        return uuid.UUID(text)
    raise ValueError("unknown value %r" % arg)


def main(argv):
    args = list(argv)
    if args == ["--self-test"]:
        return self_test()
    count = DEFAULT_BUCKET_COUNT
    show_hex = False
    double_rule = IEEE754
    values = []
    try:
        while args:
            arg = args.pop(0)
            if arg == "--count":
                count = int(args.pop(0))
            elif arg == "--hex":
                show_hex = True
            elif arg == "--double-rule":
                double_rule = args.pop(0)
                if double_rule not in DOUBLE_RULES:
                    raise ValueError("unknown double rule %r" % double_rule)
            else:
                values.append(_parse_arg(arg))
        key = encode_key(values, double_rule)
        result = bucket_id_for_bytes(key, count)
    except (ValueError, IndexError, OverflowError, decimal.InvalidOperation) as exc:
        print("bucket_hash_reference: %s" % exc, file=sys.stderr)
        return 2
    if show_hex:
        print(key.hex())
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
