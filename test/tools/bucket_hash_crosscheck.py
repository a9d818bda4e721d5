#!/usr/bin/env python3
"""Cross-checks the C++ picoroute_hash tool against the Python reference, key by key.

    bucket_hash_crosscheck.py PATH/TO/picoroute_hash [--keys N]

Builds a deterministic set of keys (integer boundaries, texts, decimals of every length and scale,
uuids, doubles, booleans, nulls and composites of them), asks both implementations for the key
bytes and the bucket id under the hashing rule of each Picodata release line (25.5 and 26.1; see
src/core/bucket_hash.h), and reports every difference. Exit status 0 when all agree, 1 otherwise.
"""

import decimal
import math
import os
import random
import subprocess
import sys
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bucket_hash_reference as ref  # noqa: E402


def arg_of(value):
    """The picoroute_hash command-line form of a Python value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool:" + ("true" if value else "false")
    if isinstance(value, int):
        return "int:%d" % value
    if isinstance(value, float):
        return "double:" + repr(value)
    if isinstance(value, str):
        return "text:" + value
    if isinstance(value, decimal.Decimal):
        return "decimal:" + format(value, "f")
    if isinstance(value, uuid.UUID):
        return "uuid:" + str(value)
    raise TypeError(type(value))


def scalar_values(rng):
    values = [None, True, False, 0.0, -0.0, 2.0, 2.5, -1e300, 5e-324, "", "lol", "h\u00e9",
              "\u043f\u0440\u0438\u0432\u0435\u0442", "a b"]
    for edge in (0, 1, 31, 32, 127, 128, 255, 256, 65535, 65536, 2 ** 31, 2 ** 32 - 1, 2 ** 32,
                 2 ** 63 - 1):
        values += [edge, -edge]
    values += [2 ** 64 - 1, 2 ** 63, -2 ** 63, -33, -129, -32769, -2 ** 31 - 1]
    for text in ("0", "-0", "1", "1.0", "1.00", "007.5", "0.05", "-12.340", "0.00", "-0.00",
                 "9" * 38, "0." + "9" * 38, "-" + "1" * 37 + ".5"):
        values.append(decimal.Decimal(text))
    for _ in range(60):
        n = rng.randint(1, 38)
        digits = "".join(rng.choice("0123456789") for _ in range(n))
        point = rng.randint(0, n)
        text = rng.choice(["", "-"]) + digits[:point] + ("." if point < n else "") + digits[point:]
        values.append(decimal.Decimal(text))
    values += double_values(rng)
    for _ in range(20):
        values.append(uuid.UUID(int=rng.getrandbits(128)))
        values.append(rng.randint(-2 ** 63, 2 ** 64 - 1))
        values.append(rng.uniform(-1e6, 1e6))
        values.append("".join(rng.choice("abcXYZ019_-") for _ in range(rng.randint(1, 12))))
    return values


def double_values(rng):
    """Doubles around every edge of the 26.1 rule's integral range, and random ones."""
    inf = float("inf")
    values = [1.0, -1.0, -3.0, 1.5, -1.5, 0.5, 1e300, -1e300, float("nan"), inf, -inf,
              2.0 ** 53, 2.0 ** 53 + 2, -2.0 ** 53, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64]
    for edge in (2.0 ** 63, -2.0 ** 63, 2.0 ** 64, 2.0 ** 32, -2.0 ** 31, 2.0 ** 53, 1.0, 0.0):
        values += [math.nextafter(edge, inf), math.nextafter(edge, -inf)]
    for edge in (31, 32, 127, 128, 255, 256, 65535, 65536, 2 ** 31, 2 ** 32 - 1, 2 ** 32):
        values += [float(edge), float(-edge), float(-edge - 1)]
    for _ in range(40):
        values.append(float(rng.randint(-2 ** 63, 2 ** 64 - 1)))
        values.append(float(rng.randint(-10 ** 6, 10 ** 6)))
        values.append(rng.uniform(-1, 1) * 2.0 ** rng.randint(-60, 80))
    return values


def main(argv):
    if not argv or argv[0].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    tool = argv[0]
    extra = int(argv[argv.index("--keys") + 1]) if "--keys" in argv else 200
    rng = random.Random(20240613)
    scalars = scalar_values(rng)
    keys = [[v] for v in scalars]
    for _ in range(extra):
        keys.append([rng.choice(scalars) for _ in range(rng.randint(2, 4))])

    failures = 0
    checked = 0
    for i, key in enumerate(keys):
        count = rng.choice([1, 2, 16, 3000, 30000, 2 ** 32 - 1])
        # Every key under every rule: the rules must also agree where they should (no double).
        for rule in ref.RULES + (None,):
            cmd = [tool, "--count", str(count), "--hex"]
            if rule is not None:
                cmd += ["--rule", rule]
            cmd += [arg_of(v) for v in key]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            want_hex = ref.encode_key(key, rule or ref.RULE_25_5).hex()
            want_id = ref.bucket_id(key, count, rule or ref.RULE_25_5)
            lines = proc.stdout.split("\n")
            checked += 1
            if proc.returncode != 0 or lines[:2] != [want_hex, str(want_id)]:
                failures += 1
                print("key %d %r (count %d, rule %s): tool said %r (rc %d, stderr %r), reference %s %d"
                      % (i, key, count, rule, proc.stdout, proc.returncode, proc.stderr, want_hex,
                         want_id))

    for bad in (["--count", "0", "int:1"], ["decimal:1e3"], ["uuid:xyz"], ["bool:yes"],
                ["int:18446744073709551616"], ["int:-9223372036854775809"], ["float:1"], [],
                ["--rule", "x", "double:1"], ["--rule", "tarantool-2.11.8", "int:1"], ["--rule"]):
        proc = subprocess.run([tool] + bad, capture_output=True, text=True)
        if proc.returncode != 2 or not proc.stderr:
            failures += 1
            print("bad arguments %r: rc %d, stderr %r" % (bad, proc.returncode, proc.stderr))

    print("cross-check: %d keys, %d checks (every key under each rule and the default), %d failures"
          % (len(keys), checked, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
