"""The emulator reads picoroute's capability table (src/core/capabilities.json) and applies its rule
as test/unit/capabilities_test.cpp checks it on the C++ side, so both read it alike (picoemu_lib.caps)."""

import unittest

from picoemu_lib import caps as emu_caps


class CapabilitiesTest(unittest.TestCase):
    """The emulator reads picoroute's capability table (src/core/capabilities.json) and applies its rule
    as test/unit/capabilities_test.cpp checks it on the C++ side, so both read it alike."""

    WITH = {
        "prune_by_bucket_id": ["26.2.1-rc2"],
        "forward": ["26.2.1-rc1", "26.2.1-rc2"],
        "stmt_invalidation": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "read_preference": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "local_execution": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "integral_double_hash": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "dnf_chain_limit": ["26.1.6", "26.2.1-rc1", "26.2.1-rc2"],
        "switchover_refusal": ["26.1.%d" % i for i in range(2, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "explain_sections": ["26.2.1-rc1", "26.2.1-rc2"],
        "explain_insert_buckets": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "unlogged_tables": ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"],
        "concat_below_additive": ["26.2.1-rc2"],
        "empty_set_aggregate": ["26.2.1-rc2"],
    }

    def test_every_capability_at_every_release(self) -> None:
        self.assertEqual(set(self.WITH), set(emu_caps.table()["capabilities"]))
        self.assertEqual(emu_caps.releases(), ["25.5.%d" % i for i in range(1, 11)]
                         + ["26.1.%d" % i for i in range(1, 7)] + ["26.2.1-rc1", "26.2.1-rc2"])
        for capability, with_it in self.WITH.items():
            for release in emu_caps.releases():
                self.assertEqual(emu_caps.has(capability, release), release in with_it, (capability, release))

    def test_other_versions_take_the_newest_release_at_or_before_them(self) -> None:
        for version, release in [("26.2.1-rc1-5-gabc", "26.2.1-rc1"), ("26.2.1", "26.2.1-rc2"),
                                 ("26.1.7", "26.1.6"), ("26.2.0-300-gabc", "26.1.6"),
                                 ("26.3.0", "26.2.1-rc2"), ("26.3.0-115-gdef426247", "26.2.1-rc2"),
                                 ("picodata 26.2.1-rc2", "26.2.1-rc2"), ("26.1.0", "25.5.10"),
                                 ("25.6.0-40-gabc", "25.5.10"), ("25.5.0", None), ("24.6.1", None),
                                 ("head", None), ("", None)]:
            self.assertEqual(emu_caps.governing_release(version), release, version)
        self.assertTrue(emu_caps.has("prune_by_bucket_id", "26.3.0-115-gdef426247"))
        self.assertFalse(emu_caps.has("prune_by_bucket_id", "26.2.1-rc1-5-gabc"))
        self.assertFalse(emu_caps.has("forward", "26.1.7"))
        self.assertFalse(any(emu_caps.capabilities("24.6.1").values()))
        self.assertTrue(all(emu_caps.capabilities("99.0.0").values()))

    def test_hash_rule_by_release_line(self) -> None:
        # 26.1's rule where the version has integral_double_hash; the wrong-hash device flips it.
        for version, rule in [("25.5.10", "25.5"), ("26.1.0", "25.5"), ("26.1.1", "26.1"), ("26.1.6", "26.1"),
                              ("26.2.1-rc2", "26.1"), ("26.3.0-115-gdef426247", "26.1"), ("", "25.5")]:
            self.assertEqual(emu_caps.hash_rule(version), rule, version)
            self.assertEqual(emu_caps.hash_rule(version, wrong=True), "26.1" if rule == "25.5" else "25.5", version)

    def test_emulated_builds_are_releases(self) -> None:
        self.assertTrue(set(emu_caps.BUILDS) <= set(emu_caps.releases()))
        self.assertEqual(emu_caps.DEFAULT_BUILD, emu_caps.releases()[-1])
        self.assertEqual(emu_caps.build(None), emu_caps.DEFAULT_BUILD)
        for name in ("head", "26.2", "26.2.0", "26.3.0", "25.5"):
            with self.assertRaises(ValueError):
                emu_caps.build(name)
        # version(): "picodata X" from 26.2.1-rc1 (src/info.rs:147@26.2.1-rc1), bare before
        self.assertEqual(emu_caps.version_function_text("26.2.1-rc2"), "picodata 26.2.1-rc2")
        self.assertEqual(emu_caps.version_function_text("26.2.1-rc1"), "picodata 26.2.1-rc1")
        self.assertEqual(emu_caps.version_function_text("26.1.6"), "26.1.6")
        self.assertEqual(emu_caps.version_function_text("25.5.10"), "25.5.10")

    def test_versions(self) -> None:
        order = ["25.5.10", "26.1.0", "26.1.1", "26.1.1-12-gab", "26.2.1-rc1", "26.2.1-rc2",
                 "26.2.1-rc2-5-gab", "26.2.1", "26.2.1-1-gab", "26.3.0"]
        parsed = [emu_caps.parse_version(v) for v in order]
        self.assertEqual(parsed, sorted(parsed))
        for bad in ["", "26", "head", "26.1.1-beta", "26.1.1-rc", "26.1.1-12-g", "v26.1.1"]:
            self.assertIsNone(emu_caps.parse_version(bad), bad)
        self.assertEqual(emu_caps.dnf_chain_limit(), 512)
        self.assertEqual(emu_caps.dnf_most_chains(), 513)
