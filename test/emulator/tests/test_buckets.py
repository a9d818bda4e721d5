"""The bucket arithmetic of the emulator without a server (picoemu_lib.buckets): a tier's map stored as
ranges and expanded into owners, the quotas of a rebalance (largest remainder, by weight), the
rebalance itself (minimal movement: a replicaset above its quota gives away its highest buckets, the
freed ones fill those below quota in order), and the moves that follow (the runs of buckets whose
owner changes, grouped by old and new owner). The cluster commands move, rebalance, add-replicaset
and expel (picoemu_lib.cluster.movement) are these functions plus the rows they carry."""

import random
import unittest
from typing import Dict, List, Optional

from picoemu_lib import buckets as b
from picoemu_lib.errors import EmuError


def owners_of(spec: str) -> b.Owners:
    """An owner list written as letters, one bucket each ("." for none): "aab." is buckets 1..4."""
    owners: b.Owners = [None]
    return owners + [None if c == "." else c for c in spec]


def spec_of(owners: b.Owners) -> str:
    return "".join("." if o is None else o for o in owners[1:])


def counts(owners: b.Owners) -> Dict[Optional[str], int]:
    out: Dict[Optional[str], int] = {}
    for o in owners[1:]:
        out[o] = out.get(o, 0) + 1
    return out


class RangesTest(unittest.TestCase):
    def test_expand_and_compress(self) -> None:
        ranges = [[1, 3, "a"], [4, 4, "b"], [5, 6, "a"]]
        owners = b.expand(ranges, 6)
        self.assertEqual(spec_of(owners), "aaabaa")
        self.assertEqual(b.compress(owners), ranges)
        self.assertEqual(b.compress(owners_of("aa..ab")), [[1, 2, "a"], [5, 5, "a"], [6, 6, "b"]])
        self.assertEqual(b.expand([], 3), [None, None, None, None])
        self.assertEqual(b.compress(owners_of("...")), [])

    def test_owner_ranges_and_literals(self) -> None:
        ranges = [[1, 10, "a"], [11, 20, "b"], [21, 30, "a"]]
        self.assertEqual(b.ranges_by_owner(ranges), {"a": [(1, 10), (21, 30)], "b": [(11, 20)]})
        self.assertEqual([b.owner_of(ranges, x) for x in (1, 10, 11, 30, 31, 0)], ["a", "a", "b", "a", None, None])
        self.assertEqual(b.multirange([(1, 10), (21, 30)]), "{[1,10],[21,30]}")
        self.assertEqual(b.multirange([]), "{}")
        self.assertEqual(b.count([(1, 10), (21, 30)]), 20)


class QuotaTest(unittest.TestCase):
    def test_largest_remainder_ties_in_order(self) -> None:
        self.assertEqual(b.target_counts(3000, [("a", 1), ("b", 2)]), {"a": 1000, "b": 2000})
        self.assertEqual(b.target_counts(10, [("a", 1), ("b", 1), ("c", 1)]), {"a": 4, "b": 3, "c": 3})
        self.assertEqual(b.target_counts(10, [("c", 1), ("b", 1), ("a", 1)]), {"c": 4, "b": 3, "a": 3})
        self.assertEqual(b.target_counts(3000, [("a", 1), ("b", 2), ("c", 1)]), {"a": 750, "b": 1500, "c": 750})
        # 3.5, 1.75, 1.75: the two left over go to the largest remainders, b and c
        self.assertEqual(b.target_counts(7, [("a", 0.5), ("b", 0.25), ("c", 0.25)]), {"a": 3, "b": 2, "c": 2})
        self.assertEqual(b.target_counts(5, [("a", 1), ("gone", 0)]), {"a": 5, "gone": 0})

    def test_every_weight_zero_is_an_error(self) -> None:
        with self.assertRaisesRegex(EmuError, "weight 0"):
            b.target_counts(10, [("a", 0), ("b", 0)])

    def test_quotas_sum_to_the_buckets(self) -> None:
        rng = random.Random(31)
        for _ in range(200):
            n = rng.randint(0, 5000)
            weights = [("rs%d" % i, rng.choice([0.0, 0.5, 1.0, 2.0, 3.0])) for i in range(rng.randint(1, 6))]
            if not any(w for _, w in weights):
                continue
            t = b.target_counts(n, weights)
            self.assertEqual(sum(t.values()), n, weights)
            total = sum(w for _, w in weights)
            for name, w in weights:
                self.assertLess(abs(t[name] - n * w / total), 1, (n, weights))


class RebalanceTest(unittest.TestCase):
    def test_initial_split_is_contiguous(self) -> None:
        owners = b.rebalance([None] * 3001, b.target_counts(3000, [("a", 1), ("b", 1)]))
        self.assertEqual(b.compress(owners), [[1, 1500, "a"], [1501, 3000, "b"]])

    def test_a_replicaset_above_quota_gives_its_highest_buckets(self) -> None:
        new = b.rebalance(owners_of("aaaaabbb"), {"a": 4, "b": 4})
        self.assertEqual(spec_of(new), "aaaabbbb")
        # the freed buckets, ascending, fill those below quota in the order of the quotas
        new = b.rebalance(owners_of("aaaaaaaa"), {"a": 4, "b": 2, "c": 2})
        self.assertEqual(spec_of(new), "aaaabbcc")
        new = b.rebalance(owners_of("aaaaaaaa"), {"a": 4, "c": 2, "b": 2})
        self.assertEqual(spec_of(new), "aaaaccbb")

    def test_adding_a_third_replicaset_moves_the_minimum(self) -> None:
        owners = b.expand([[1, 1500, "a"], [1501, 3000, "b"]], 3000)
        new = b.rebalance(owners, b.target_counts(3000, [("a", 1), ("b", 1), ("c", 1)]))
        moved = sum(e - s + 1 for _, _, s, e in b.segments(owners, new))
        self.assertEqual(moved, 1000)
        self.assertEqual(b.compress(new), [[1, 1000, "a"], [1001, 1500, "c"], [1501, 2500, "b"],
                                           [2501, 3000, "c"]])

    def test_expelling_gives_everything_away(self) -> None:
        owners = owners_of("aabbcc")
        new = b.rebalance(owners, {"a": 3, "b": 3})  # c is absent: everything it owns is freed
        self.assertEqual(spec_of(new), "aabbab")
        self.assertEqual(counts(new), {"a": 3, "b": 3})

    def test_random_maps_reach_their_quotas_with_minimal_movement(self) -> None:
        rng = random.Random(7)
        for _ in range(300):
            n = rng.randint(1, 120)
            names = ["r%d" % i for i in range(rng.randint(1, 5))]
            choices: List[Optional[str]] = [*names, None]
            owners: b.Owners = [None]
            owners += [rng.choice(choices) for _ in range(n)]
            live = names[:rng.randint(1, len(names))]
            targets = b.target_counts(n, [(x, rng.choice([1.0, 2.0])) for x in live])
            new = b.rebalance(owners, targets)
            self.assertTrue(all(o is not None for o in new[1:]), (owners, targets))
            self.assertEqual({k: v for k, v in counts(new).items() if v}, {k: v for k, v in targets.items() if v})
            # only what must move moves: each replicaset's surplus, and the unowned buckets
            surplus = sum(max(0, c - targets.get(o, 0)) for o, c in counts(owners).items() if o is not None)
            moved = sum(e - s + 1 for _, _, s, e in b.segments(owners, new))
            self.assertEqual(moved, surplus + counts(owners).get(None, 0), (owners, targets))


class MoveTest(unittest.TestCase):
    def test_segments_are_the_maximal_runs_that_change_owner(self) -> None:
        old, new = owners_of(".aaabbba"), owners_of("abbabbbb")
        self.assertEqual(b.segments(old, new), [(None, "a", 1, 1), ("a", "b", 2, 3), ("a", "b", 8, 8)])
        self.assertEqual(b.segments(old, old), [])

    def test_transfers_group_the_rows_to_copy(self) -> None:
        segs: List[b.Segment] = [(None, "a", 1, 1), ("a", "b", 2, 3), ("c", "b", 5, 5), ("a", "b", 8, 8)]
        self.assertEqual(b.transfers(segs), {("a", "b"): [(2, 3), (8, 8)], ("c", "b"): [(5, 5)]})

    def test_move_assigns_a_range(self) -> None:
        owners = b.expand([[1, 1500, "a"], [1501, 3000, "b"]], 3000)
        new = b.assign(owners, 1901, 2000, "a")
        self.assertEqual(b.compress(new), [[1, 1500, "a"], [1501, 1900, "b"], [1901, 2000, "a"], [2001, 3000, "b"]])
        self.assertEqual(b.segments(owners, new), [("b", "a", 1901, 2000)])
        self.assertEqual(owners[1901], "b")  # the map given is left as it was
