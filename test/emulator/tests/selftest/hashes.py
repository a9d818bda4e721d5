"""The storages' hashing against the Python reference (test/tools/bucket_hash_reference.py, through
picoemu_lib.hashing): the PL/pgSQL encoders and murmur3 on many keys, the double rules at their
edges, and a float8 sharding key stored where the emulated version's rule puts it."""

import decimal
import random
import unittest
import uuid

from picoemu_lib import hashing

from ..support.cluster import emu, q

# Doubles around every edge of 26.1.1's rule (an integral double in [-2^63, 2^64) hashes as an integer).
DOUBLE_EDGES = [1.0, -3.0, 1.5, 1e300, -1e300, -0.0, 0.0, float("nan"), float("inf"), float("-inf"), 255.0, -33.0,
                2.0 ** 53, 2.0 ** 53 + 2, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 2.0 ** 64 - 2048, -2.0 ** 63 - 2048,
                2.0 ** 63 - 1024, 4294967296.0, -2147483649.0, 5e-324] + [e[0] for e in hashing.DOUBLE_EDGES]


def check_hash(tc: unittest.TestCase, port: int, rule: str) -> None:
    """The PL/pgSQL encoders against the Python reference; doubles by `rule`, the emulated version's."""
    D = decimal.Decimal
    random.seed(7)
    vals = [0, 1, -1, 127, 128, 255, 256, 65535, 65536, 2 ** 32 - 1, 2 ** 32, 2 ** 63 - 1, -32, -33, -128,
            -129, -32768, -32769, -2 ** 31, -2 ** 31 - 1, -2 ** 63, "", "lol", "héllo ☃", "a" * 37, True,
            False, None, 2.0, -0.0, 1.5e300, 3.14159, D("1"), D("1.0"), D("-12.340"), D("0.00"), D("007.5"),
            D("123456789012345678901234567890.12345678"), D("-0.001"),
            uuid.UUID("00112233-4455-6677-8899-aabbccddeeff"), uuid.uuid4()]
    vals += [random.randint(-2 ** 63, 2 ** 63 - 1) for _ in range(20)] + DOUBLE_EDGES

    def enc(v: object) -> str:
        if v is None:
            return "_picoemu.enc_int(NULL)"
        if isinstance(v, bool):
            return "_picoemu.enc_bool(%s)" % v
        if isinstance(v, int):
            return "_picoemu.enc_int('%d'::int8)" % v
        if isinstance(v, float):
            return "_picoemu.enc_double('%r'::float8)" % v
        if isinstance(v, str):
            return "_picoemu.enc_text('%s')" % v.replace("'", "''")
        if isinstance(v, D):
            return "_picoemu.enc_decimal('%s'::numeric)" % v
        return "_picoemu.enc_uuid('%s'::uuid)" % v
    keys = [[v] for v in vals] + [["lol", 5], [1, "x", D("2.5")], [uuid.uuid4(), -7, True]]
    sql = "SELECT " + ", ".join("encode(%s, 'hex') || ':' || _picoemu.bucket_id(%s, 3000)"
                                % (" || ".join(map(enc, k)), " || ".join(map(enc, k))) for k in keys)
    row = q(port, sql)[0]
    bad = [(k, got) for k, got in zip(keys, row)
           if got != hashing.encode_key(k, rule).hex() + ":" + str(hashing.bucket_id(k, 3000, rule))]
    with tc.subTest("hash: PL/pgSQL encoders + murmur3 match the Python reference on %d keys (%s)"
                    % (len(keys), rule)):
        tc.assertFalse(bad, repr(bad[:3]))
    for fn, fn_rule in (("enc_double_25_5", hashing.RULE_25_5), ("enc_double_26_1", hashing.RULE_26_1)):
        row = q(port, "SELECT " + ", ".join("encode(_picoemu.%s('%r'::float8), 'hex')" % (fn, v)
                                            for v in DOUBLE_EDGES))[0]
        bad = [(v, got) for v, got in zip(DOUBLE_EDGES, row) if got != hashing.encode_double(v, fn_rule).hex()]
        with tc.subTest("hash: %s matches the reference's %s rule on the edges" % (fn, fn_rule)):
            tc.assertFalse(bad, repr(bad[:3]))
    with tc.subTest("hash: verified examples 1 -> 1934, ('lol',5) -> 442, decimal 1 -> 2135"):
        tc.assertEqual(q(port, "SELECT _picoemu.bucket_id(_picoemu.enc_int(1), 3000), "
                               "_picoemu.bucket_id(_picoemu.enc_text('lol') || _picoemu.enc_int(5), 3000), "
                               "_picoemu.bucket_id(_picoemu.enc_decimal(1::numeric), 3000)")[0],
                       ["1934", "442", "2135"])


def double_key(tc: unittest.TestCase, d: str, port: int, version: str, integral: bool) -> None:
    """A float8 sharding key: 1.0 (stored by `insert`, hashed in Python) and -3.0, 1.5 (inserted with SQL,
    hashed by the storage trigger) land in the buckets of the emulated version's rule (26.1's when
    `integral`, else 25.5's)."""
    emu(d, "create-table", "dkeys", "--columns", "id float8, v text")
    emu(d, "insert", "dkeys", "--values", '[1.0, "insert"]')
    q(port, "INSERT INTO dkeys VALUES (-3.0, 'sql'), (1.5, 'sql')")
    got = q(port, "SELECT id::text, bucket_id::text FROM dkeys ORDER BY id")
    rule = hashing.RULE_26_1 if integral else hashing.RULE_25_5
    want = [[text, str(hashing.bucket_id([v], 3000, rule))] for text, v in (("-3", -3.0), ("1", 1.0), ("1.5", 1.5))]
    with tc.subTest("%s: float8 keys -3.0, 1.0, 1.5 stored in the buckets of the %s rule" % (version, rule)):
        tc.assertEqual(got, want)
    one, integer_one = hashing.bucket_id([1.0], 3000, rule), hashing.bucket_id([1], 3000)
    if integral:
        with tc.subTest("%s: the double 1.0 lands in the integer 1's bucket (1934), 1.5 in 510" % version):
            tc.assertEqual((one, integer_one, got[1][1], got[2][1]), (1934, 1934, "1934", "510"))
    else:
        with tc.subTest("%s: the double 1.0 lands in bucket 2099, not the integer 1's 1934; 1.5 in 632"
                        % version):
            tc.assertEqual((one, integer_one, got[1][1], got[2][1]), (2099, 1934, "2099", "632"))
    emu(d, "drop-table", "dkeys")
