"""What the fronts read in a statement as Picodata's router does (picoemu_lib.route): its bucket set
and forward's verdict on it, reads that must be leader reads, scalar aggregates over an empty bucket
set, which statements a stopped master stalls, and the OR-of-AND chains against the DNF limit."""

import unittest
from typing import Any, Dict, List, Optional, Sequence, Set

from picoemu_lib import caps as emu_caps
from picoemu_lib import hashing
from picoemu_lib import route as emu_route
from picoemu_lib.explain.values import typed_value
from picoemu_lib.front.rewrite import dnf_text
from picoemu_lib.route.bucketset import ValueOf, insert_buckets
from picoemu_lib.route.bucketset import value as route_value


# A cluster of two replicasets of one master and one replica each, 3000 buckets split in two, as
# forward sees it in state.json. Keys: 2 -> bucket 1410 (default_1), 1 -> 1934 and 3 -> 1958
# (default_2).
STATE: Dict[str, Any] = {
    "tables": [{"name": "t", "global": False, "tier": "default", "sharding_key": ["id"],
                "columns": [{"name": "id", "cls": "int"}, {"name": "b", "cls": "text"}]},
               {"name": "k2", "global": False, "tier": "default", "sharding_key": ["b", "id"],
                "columns": [{"name": "id", "cls": "int"}, {"name": "b", "cls": "text"}]},
               {"name": "g", "global": True, "tier": None, "sharding_key": [],
                "columns": [{"name": "id", "cls": "int"}]}],
    "tiers": [{"name": "default", "bucket_count": 3000}],
    "buckets": {"default": [[1, 1500, "default_1"], [1501, 3000, "default_2"]]},
    "instances": [{"name": "m1", "replicaset": "default_1"}, {"name": "r1", "replicaset": "default_1"},
                  {"name": "m2", "replicaset": "default_2"}],
    "replicasets": [{"name": "default_1", "master": "m1"}, {"name": "default_2", "master": "m2"}],
}
NOT_LOCAL = ('sbroad: invalid option: cannot satisfy "forward = off": buckets are not present on the '
             'current node, try using "forward = ro_to_rw" instead')
SPAN = ('sbroad: invalid option: cannot satisfy "forward = off": buckets span multiple nodes and are '
        'not present on the current node, try using "forward = on" instead')
SPAN_RO = ('sbroad: invalid option: cannot satisfy "forward = ro_to_rw": buckets span multiple nodes, '
           'try using "forward = on" instead')


class ForwardTest(unittest.TestCase):
    """forward=off/ro_to_rw judged by the statement's bucket set, as enforce_forward_option and
    get_possible_forward_option (src/sql/router.rs, 26.2.1-rc1 and 26.3.0) judge it."""

    def verdict(self, sql: str, instance: str = "m1", wanted: str = "off",
                params: Optional[Sequence[Optional[str]]] = None, version: str = "26.2.1-rc2") -> Optional[str]:
        return emu_route.forward_verdict(STATE, instance, version, emu_route.statement_tokens(sql), wanted, params)

    def test_keyless_refused_even_when_every_row_is_local(self) -> None:
        self.assertEqual(self.verdict("SELECT * FROM t"), SPAN)
        self.assertEqual(self.verdict("SELECT * FROM t WHERE b = 'x'", "m2"), SPAN)
        self.assertEqual(self.verdict("DELETE FROM t WHERE b = 'x'"), SPAN)
        self.assertEqual(self.verdict("UPDATE t SET b = 'y'"), SPAN)
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id = 2 OR b = 'x'"), SPAN)
        self.assertEqual(self.verdict("SELECT * FROM t", wanted="ro_to_rw"), SPAN_RO)
        self.assertIsNone(self.verdict("SELECT * FROM t", wanted="on"))

    def test_keyed_at_the_owner_runs_elsewhere_refused(self) -> None:
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 2"))
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 1", "m2"))
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id = 1"), NOT_LOCAL)
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 1", wanted="ro_to_rw"))
        self.assertIsNone(self.verdict("UPDATE t SET b = 'x' WHERE id = 2 AND b = 'y'"))
        self.assertIsNone(self.verdict("DELETE FROM t WHERE \"id\" = $1", params=["2"]))
        self.assertEqual(self.verdict("DELETE FROM t WHERE t.id = $1::int8", params=["1"]), NOT_LOCAL)
        self.assertIsNone(self.verdict("SELECT * FROM k2 WHERE id = 5 AND b = 'x'",
                                       self.owner_instance([["x", 5]], "k2")))

    def owner_instance(self, keys: List[List[object]], table: str = "t") -> str:
        rs = {1 if hashing.bucket_id(k, 3000) <= 1500 else 2 for k in keys}
        return "m%d" % rs.pop()

    def test_several_keys_by_owners(self) -> None:
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id IN (1, 3)", "m2"))
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 1 OR id = 3", "m2"))
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id IN (1, 2)", "m2"), SPAN)
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id IN (1, 3)"), NOT_LOCAL)

    def test_inserts_by_their_rows(self) -> None:
        self.assertIsNone(self.verdict("INSERT INTO t VALUES (2, 'a')"))
        self.assertIsNone(self.verdict("INSERT INTO t (b, id) VALUES ('a', 1), ('b', 3)", "m2"))
        self.assertEqual(self.verdict("INSERT INTO public.t (id, b) VALUES (1, 'a'), (2, 'b')"), SPAN)
        self.assertEqual(self.verdict("INSERT INTO t (id, b) VALUES ($1, $2)", params=["1", "x"]), NOT_LOCAL)
        self.assertEqual(self.verdict("INSERT INTO t (id, b) SELECT id, b FROM t"), SPAN)

    def test_replica_refuses_under_off(self) -> None:
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id = 2", "r1"), NOT_LOCAL)
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 2", "r1", wanted="ro_to_rw"))

    def test_no_sharded_table_runs_anywhere(self) -> None:
        for sql in ("SELECT * FROM g", "SELECT name FROM _pico_instance", "SELECT 1", "VALUES (1)",
                    "INSERT INTO g VALUES (1)"):
            self.assertIsNone(self.verdict(sql, "r1"), sql)

    def test_bucket_id_judged_by_its_owner_where_it_prunes(self) -> None:
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE bucket_id = 5"))
        self.assertEqual(self.verdict("SELECT * FROM t WHERE bucket_id = 2000"), NOT_LOCAL)
        self.assertEqual(self.verdict("SELECT * FROM t WHERE bucket_id = $1", params=["2000"]), NOT_LOCAL)
        # 26.2.1-rc1 has forward but does not prune: a bucket_id filter is a filter, all buckets
        self.assertFalse(emu_caps.has("prune_by_bucket_id", "26.2.1-rc1"))
        self.assertEqual(self.verdict("SELECT * FROM t WHERE bucket_id = 5", version="26.2.1-rc1"), SPAN)

    def test_not_judged_without_forward_or_when_not_hashable_here(self) -> None:
        self.assertIsNone(self.verdict("SELECT * FROM t", version="26.1.6"))
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = 1.0"))
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = $1", params=[None]))
        self.assertIsNone(self.verdict("SELECT * FROM t WHERE id = '1'"))

    def test_joins_and_subqueries_ask_everyone(self) -> None:
        self.assertEqual(self.verdict("SELECT * FROM t a JOIN t b ON a.id = b.id WHERE a.id = 2"), SPAN)
        self.assertEqual(self.verdict("SELECT * FROM t WHERE id IN (SELECT id FROM g)"), SPAN)


class LeaderReadTest(unittest.TestCase):
    """Reads that must be leader reads (effective_read_preference, src/sql/dispatch.rs, 26.1.1+)."""
    UNLOGGED = "sbroad: invalid option: read_preference must be set to 'leader' when querying unlogged tables"
    PREEMPTION = ("sbroad: invalid option: read_preference must be set to 'leader' when sql_preemption "
                  "is enabled")

    def refusal(self, sql: str, **settings: object) -> Optional[str]:
        state = dict(STATE, tables=STATE["tables"] + [
            {"name": "u", "global": False, "tier": "default", "sharding_key": ["id"], "unlogged": True,
             "columns": [{"name": "id", "cls": "int"}]}], **settings)
        return emu_route.leader_read_refusal(state, emu_route.statement_tokens(sql))

    def test_unlogged_tables_then_preemption(self) -> None:
        self.assertEqual(self.refusal("SELECT * FROM u WHERE id = 1"), self.UNLOGGED)
        self.assertEqual(self.refusal("SELECT * FROM t JOIN u ON t.id = u.id"), self.UNLOGGED)
        self.assertEqual(self.refusal("SELECT * FROM u", sql_preemption=True), self.UNLOGGED)
        self.assertIsNone(self.refusal("SELECT * FROM t WHERE id = 1"))
        self.assertEqual(self.refusal("SELECT * FROM t WHERE id = 1", sql_preemption=True), self.PREEMPTION)

    def test_reads_of_global_tables_only_are_not_dispatched(self) -> None:
        for sql in ("SELECT * FROM g", "SELECT name FROM _pico_table", "SELECT 1"):
            self.assertIsNone(self.refusal(sql, sql_preemption=True), sql)


class EmptyBucketSetTest(unittest.TestCase):
    """A scalar aggregate whose key equalities contradict each other has no bucket: before 26.2.1-rc2
    Picodata answers NULL for it (test/int/sql/eliminate_motion.sql, scalar-agg-1)."""

    def empty(self, sql: str, params: Optional[Sequence[Optional[str]]] = None, version: str = "26.2.1-rc1") -> bool:
        return emu_route.empty_set_aggregate(STATE, version, emu_route.statement_tokens(sql), params)

    def test_contradicting_keys_have_no_bucket(self) -> None:
        self.assertTrue(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 2"))
        self.assertTrue(self.empty('SELECT count(*), sum("id") FROM "t" WHERE "id" = $1 AND "id" = $2',
                                   params=["1", "2"]))
        self.assertFalse(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 1"))
        self.assertFalse(self.empty("SELECT count(*) FROM t WHERE id = 1"))
        self.assertFalse(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 2 OR id = 3"))

    def test_only_scalar_aggregates_before_the_fix(self) -> None:
        self.assertFalse(self.empty("SELECT id FROM t WHERE id = 1 AND id = 2"))
        self.assertFalse(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 2 GROUP BY b"))
        for version in ("25.5.10", "26.1.6", "26.2.1-rc1"):
            self.assertTrue(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 2", version=version), version)
        self.assertFalse(self.empty("SELECT count(*) FROM t WHERE id = 1 AND id = 2", version="26.2.1-rc2"))


class RouteHashRuleTest(unittest.TestCase):
    """The fronts' bucket sets (forward, empty sets) hash keys by the version's line, as the storages."""

    def test_rule_by_line(self) -> None:
        self.assertEqual([emu_route.hash_rule(v) for v in ("25.5.10", "26.1.6", "26.2.1-rc2")],
                         ["25.5", "26.1", "26.1"])


class DispatchPlanTest(unittest.TestCase):
    """emu_route.dispatch_plan: which statements a stopped master stalls (Lua dispatch) and which
    run on the 26.1.1+ local path; the text once the deadline has passed."""
    STATE = {"tables": [{"name": "users", "global": False, "tier": "default", "sharding_key": ["id"],
                         "columns": [{"name": "id", "type": "int8", "cls": "int"}]},
                        {"name": "g", "global": True, "tier": None, "sharding_key": [], "columns": []}],
             "tiers": [{"name": "default", "bucket_count": 3000}],
             "buckets": {"default": [[1, 1500, "default_1"], [1501, 3000, "default_2"]]},
             "replicasets": [{"name": "default_1", "uuid": "u1", "tier": "default", "master": "default_1_1",
                              "state": "ready"},
                             {"name": "default_2", "uuid": "u2", "tier": "default", "master": "default_2_1",
                              "state": "ready"}],
             "instances": [{"name": "default_1_1", "replicaset": "default_1", "state": "Online"},
                           {"name": "default_1_2", "replicaset": "default_1", "state": "Online"},
                           {"name": "default_2_1", "replicaset": "default_2", "state": "Offline"}]}

    # Emulated builds with and without the local path, by capability.
    WITH_LOCAL = next(b for b in reversed(emu_caps.BUILDS) if emu_caps.has("local_execution", b))
    WITHOUT_LOCAL = next(b for b in emu_caps.BUILDS if not emu_caps.has("local_execution", b))

    def plan(self, sql: str, version: Optional[str] = None, instance: str = "default_1_1",
             pref: Optional[str] = None, params: Optional[Sequence[Optional[str]]] = None) -> Optional[emu_route.Plan]:
        version = version or self.WITH_LOCAL
        write = not sql.lower().startswith("select")
        return emu_route.dispatch_plan(self.STATE, instance, version, emu_route.statement_tokens(sql), params,
                                       pref, write)

    def key_of(self, rs: str) -> int:
        return next(k for k in range(1, 100) if (hashing.bucket_id([k], 3000) <= 1500) == (rs == "default_1"))

    def test_local_path_at_the_owners_master(self) -> None:
        k1 = self.key_of("default_1")
        for sql in ("SELECT * FROM users WHERE id = %d" % k1, "UPDATE users SET id = id WHERE id = %d" % k1,
                    "INSERT INTO users VALUES (%d)" % k1):
            self.assertIsNone(self.plan(sql), sql)
            self.assertEqual(self.plan(sql, version=self.WITHOUT_LOCAL),
                             {"tiers": ["default"], "targets": ["default_1"]},
                             self.WITHOUT_LOCAL + " has no local path: " + sql)
        self.assertIsNone(self.plan("SELECT * FROM users WHERE id = $1", params=[str(k1)]))

    def test_everything_else_is_dispatched(self) -> None:
        k1, k2 = self.key_of("default_1"), self.key_of("default_2")
        both = {"tiers": ["default"], "targets": ["default_1", "default_2"]}
        self.assertEqual(self.plan("SELECT count(*) FROM users"), both)
        self.assertEqual(self.plan("UPDATE users SET id = id"), both)
        self.assertEqual(self.plan("INSERT INTO users VALUES (%d), (%d)" % (k1, k2)), both)
        self.assertEqual(self.plan("SELECT * FROM users WHERE id = %d" % k2),
                         {"tiers": ["default"], "targets": ["default_2"]})
        # a replica runs its replicaset's read only for read_preference replica or any
        self.assertIsNotNone(self.plan("SELECT * FROM users WHERE id = %d" % k1, instance="default_1_2"))
        self.assertIsNone(self.plan("SELECT * FROM users WHERE id = %d" % k1, instance="default_1_2", pref="replica"))
        self.assertIsNotNone(self.plan("SELECT * FROM users WHERE id = %d" % k1, pref="replica"))

    def test_global_tables_and_the_catalog_are_not_dispatched(self) -> None:
        for sql in ("SELECT * FROM g", "UPDATE g SET id = 1", "SELECT * FROM _pico_instance", "SELECT 1"):
            self.assertIsNone(self.plan(sql), sql)

    def test_stopped_masters_and_the_text(self) -> None:
        self.assertEqual(emu_route.stopped_masters(self.STATE, ["default"]), ["default_2"])
        self.assertEqual(emu_route.stopped_masters(self.STATE, ["other"]), [])
        text = emu_route.dql_timeout_text(self.STATE, {"tiers": ["default"], "targets": ["default_1", "default_2"]})
        self.assertEqual(text, 'sbroad: box error: ProcLua: {"type":"ClientError","code":32,"message":'
                               '"Error on replicaset u1: dql timeout exceeded"}')
        self.assertIn("replicaset u2:", emu_route.dql_timeout_text(
            self.STATE, {"tiers": ["default"], "targets": ["default_2"]}))


class DnfChainsTest(unittest.TestCase):
    """The OR-of-AND chains of a WHERE clause (emu_route.chains, picoroute's count: src/pg/fdw/keys.cpp)
    and what the front sends for a statement over what Picodata expands: MAX_DNF_CHAINS = 512 is checked
    after a pop, so 513 chains still expand and 514 do not (26.1.6, 26.2.1-rc1 and later)."""

    @staticmethod
    def chains(sql: str) -> int:
        return emu_route.chains(emu_route.statement_tokens(sql))

    def test_counts(self) -> None:
        ids = ", ".join(str(i) for i in range(100))
        buckets = ", ".join(str(i) for i in range(1, 51))
        for sql, n in [("SELECT * FROM t", 1),
                       ("SELECT * FROM t WHERE id = 1 AND b = 'x'", 1),
                       ("SELECT * FROM t WHERE id = 1 OR id = 2 OR b = 'x'", 3),
                       ("SELECT * FROM t WHERE (id = 1 OR id = 2) AND (b = 'x' OR b = 'y')", 4),
                       ("SELECT * FROM t WHERE id IN (1, 2, 3) AND b IN ('x', 'y')", 6),
                       ("SELECT * FROM t WHERE id NOT IN (1, 2, 3)", 1),
                       ("SELECT * FROM t WHERE NOT (id = 1 OR id = 2)", 1),
                       ("SELECT * FROM t WHERE NOT (id = 1 AND b = 'x')", 2),
                       ("SELECT * FROM t WHERE v BETWEEN 1 AND 5 AND (id = 1 OR id = 2)", 2),
                       ("SELECT * FROM t WHERE id IN (SELECT id FROM u WHERE v IN (1, 2))", 2),
                       ("SELECT * FROM t WHERE (v + 1) = 2 OR id = 1", 2),
                       ("SELECT * FROM t WHERE id IN (%s) AND bucket_id IN (%s)" % (ids, buckets), 5000),
                       ("UPDATE t SET v = 1 WHERE id IN (%s) ORDER BY id" % ids, 100),
                       ("DELETE FROM t WHERE id IN (1, 2) OPTION (sql_vdbe_opcode_max = 0)", 2)]:
            self.assertEqual(self.chains(sql), n, sql)

    def test_over_the_limit_is_sent_unrouted_and_unpruned(self) -> None:
        sql = "SELECT * FROM t WHERE t.bucket_id = 5 AND id IN (%s);" % ", ".join(str(i) for i in range(514))
        toks = emu_route.statement_tokens(sql)
        chains = emu_route.chains(toks)
        self.assertEqual(chains, 514)
        out = dnf_text(sql, toks, chains)
        self.assertTrue(out.startswith("SELECT * FROM t WHERE (t.bucket_id + 0) = 5 AND id IN (0, 1, "), out[:80])
        self.assertTrue(out.endswith(", 513) /* picoemu: 514 OR-of-AND chains, over Picodata's DNF limit: "
                                     "not routed */"), out[-120:])
        # SELECT bucket_id keeps its column name: only WHERE clauses are rewritten
        self.assertEqual(emu_route.unpruned_text("SELECT bucket_id FROM t WHERE \"bucket_id\" = 1",
                                                 emu_route.statement_tokens("SELECT bucket_id FROM t WHERE \"bucket_id\" = 1")),
                         'SELECT bucket_id FROM t WHERE ("bucket_id" + 0) = 1')

    def test_over_the_limit_all_buckets_for_forward(self) -> None:
        # key 2 only (bucket 1410, default_1): local at m1 up to 513 chains, all buckets above
        self.assertIsNone(ForwardTest().verdict("SELECT * FROM t WHERE id IN (%s)" % ", ".join(["2"] * 513)))
        self.assertEqual(ForwardTest().verdict("SELECT * FROM t WHERE id IN (%s)" % ", ".join(["2"] * 514)), SPAN)


class InsertRowsTest(unittest.TestCase):
    """insert_buckets: the row walk of INSERT ... VALUES that the route's bucket set and EXPLAIN's
    buckets line share, each with its own reading of a value."""

    def buckets(self, sql: str, value_of: ValueOf, params: Optional[Sequence[Optional[str]]] = None
                ) -> Optional[Set[int]]:
        return insert_buckets(emu_route.statement_tokens(sql), STATE["tables"][0], params, value_of,
                              lambda vals: hashing.bucket_id(vals, 3000))

    def test_rows_by_their_columns(self) -> None:
        for value_of in (route_value, typed_value):
            self.assertEqual(self.buckets("INSERT INTO t (b, id) VALUES ('a', 1), ('b', 2)", value_of),
                             {1934, 1410})
            self.assertEqual(self.buckets("INSERT INTO public.t VALUES ($1, 'a')", value_of, ["3"]), {1958})

    def test_each_reading_of_a_value_decides(self) -> None:
        sql = "INSERT INTO t VALUES (CAST(3 AS int), 'x')"
        self.assertIsNone(self.buckets(sql, route_value))  # the route does not read a CAST
        self.assertEqual(self.buckets(sql, typed_value), {1958})

    def test_rows_not_known_here(self) -> None:
        for value_of in (route_value, typed_value):
            self.assertIsNone(self.buckets("INSERT INTO t SELECT id, b FROM t", value_of))
            self.assertIsNone(self.buckets("INSERT INTO t VALUES (1, 'a'), ($1, 'b')", value_of))
