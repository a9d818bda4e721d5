"""Picodata's SQL dialect, as the emulator's front judges it: a tokenizer plus a table of rules, each
naming the fact it comes from (the facts document "Picodata's SQL dialect and limits", sections 1-3,
and Picodata's grammar file query.pest, which that document cites).

validate(sql, version) -> Verdict. A statement that a rule rejects gets, from the front, SQLSTATE XX000
and a message beginning `sbroad: rule parsing error`, as Picodata answers a statement its grammar cannot
parse (PARSE_ERROR_PREFIX). Pure (no I/O): the fronts call it, tests/test_dialect.py tests it.
"""

from .grammar import (DEFAULT_VERSION, FORWARD_VALUES, OPTION_INT, PARSE_ERROR_PREFIX, READ_PREFERENCES,
                      has_arrays, has_forward, has_read_preference)
from .rules import RULES
from .statements import Verdict, explain_options, message, option_names, validate
from .tokens import Reject, Token, depths, merge_signs, split_statements, tokenize

__all__ = ["DEFAULT_VERSION", "FORWARD_VALUES", "OPTION_INT", "PARSE_ERROR_PREFIX", "READ_PREFERENCES", "RULES",
           "Reject", "Token", "Verdict", "depths", "explain_options", "has_arrays", "has_forward",
           "has_read_preference", "merge_signs", "message", "option_names", "split_statements", "tokenize",
           "validate"]
