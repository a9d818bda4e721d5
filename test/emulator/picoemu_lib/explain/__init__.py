"""Picodata's answer to a plain EXPLAIN, for the fronts (pure, no I/O but the wire bytes it builds):
answer (the lines, from the statement and the cluster's state), describe, rows and simple (the
messages), the buckets line (buckets) and the values Picodata hashes (values). See answer.py for
what Picodata sends, read in its sources."""

from .answer import (ExplainError, NotEmulated, answer, answered, describe, options, row_description, rows,
                     simple)
from .buckets import buckets_repr, hash_rule, statement_buckets
from .values import typed_value

__all__ = ["ExplainError", "NotEmulated", "answer", "answered", "buckets_repr", "describe", "hash_rule", "options",
           "row_description", "rows", "simple", "statement_buckets", "typed_value"]
