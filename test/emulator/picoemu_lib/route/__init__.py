"""What Picodata's router concludes from a statement's text, for the fronts (pure, no I/O):

* the OR-of-AND chains a WHERE clause expands into (`dnf.chains`), the quantity of the DNF limit:
  from 26.1.6 and 26.2.1-rc1 (capability `dnf_chain_limit`) Picodata gives up above 513 chains
  (MAX_DNF_CHAINS = 512, checked after a pop so that a clause of 513 chains still expands:
  sql-ir/src/ir/transformation/dnf.rs:90 and 218-221 at 26.2.1-rc1, crates/sql-ir/... at 26.2.1-rc2,
  sql-planner/src/ir/transformation/dnf.rs at 26.1.6; caps.dnf_most_chains): `get_dnf_chains`
  returns None and the expression stays as written, so bucket discovery finds no key and asks every replicaset. `IN`
  lists count as ORs (they are rewritten to ORs before the DNF). The count mirrors picoroute's
  (src/pg/fdw/keys.cpp, dnf_chains_of: NOT turns an OR into an AND and back);
* the statement's bucket set (`bucketset.bucket_set`): "any" (no sharded table: global tables, the
  catalog, no table), "all" (a sharded table without a key that fixes its buckets), a set of
  (tier, bucket), or None when the emulator cannot hash the values as Picodata would (a literal of
  another type than its column, a double, a decimal, ...);
* the verdict of `forward` on that set (`verdicts.forward_refusal`), as `enforce_forward_option` and
  `get_possible_forward_option` in src/sql/router.rs (26.2.1-rc1 to 26.3.0) give it: all buckets
  need `forward = on`; buckets of several replicasets too; buckets of one other replicaset, or of
  this one on a read-only instance (a replica), `ro_to_rw`; no bucket at all, or this instance's
  replicaset on its master, `off`. The executor checks it before every dispatch and motion
  (sql-executor/src/executor.rs, `enforce_forward_option`), so it holds for reads and writes alike;
  EXPLAIN does not dispatch;
* the reads that must be leader reads and the scalar aggregates over an empty bucket set
  (verdicts), and which statements a stopped master stalls (dispatch).

Modules: syntax (token helpers, table references, WHERE clauses), dnf (OR-of-AND chains),
bucketset, verdicts, dispatch.
"""

from .bucketset import BucketSet, ClusterMap, bucket_set, hash_rule
from .dispatch import Plan, dispatch_plan, dql_timeout_text, stopped_masters
from .dnf import chains, unpruned_text
from .syntax import statement_tokens, table_refs
from .verdicts import (empty_set_aggregate, forward_refusal, forward_verdict, leader_read_refusal, possible_forward,
                       scalar_aggregate)

__all__ = ["BucketSet", "ClusterMap", "Plan", "bucket_set", "chains", "dispatch_plan", "dql_timeout_text",
           "empty_set_aggregate", "forward_refusal", "forward_verdict", "hash_rule", "leader_read_refusal",
           "possible_forward", "scalar_aggregate", "statement_tokens", "stopped_masters", "table_refs",
           "unpruned_text"]
