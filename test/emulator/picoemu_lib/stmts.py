"""Picodata's rules for prepared statements, as the emulator's fronts apply them (read from Picodata's
pgproto sources: src/pgproto/backend/storage.rs, src/pgproto/client/startup.rs, src/pgproto/error.rs).

- pg_statement_max (cluster setting, default 100000, 0 = no limit) bounds the statements an instance
  holds for all its clients together, the unnamed ones included. A Parse when the storage holds that
  many fails with XX000 "Statement storage is full. Current size limit: N. Please, increase storage
  limit using: ALTER SYSTEM SET "pg_statement_max" TO <new-limit>" (checked even when the Parse would
  replace an unnamed statement).
- From 26.1, a client that asks for it (pico_stmt_invalidation=true, in the startup `options` string
  in Picodata's syntax or as a startup parameter of its own, which wins) gets, at Bind of a statement
  prepared before DDL on a table it reads, SQLSTATE 42999 "prepared statement NAME has been
  invalidated"; the statement must be closed and prepared again. Older versions ignore the option
  (a warning in their log). The value must be exactly `true` or `false` (Rust's bool parsing).
- DEALLOCATE [PREPARE] name | ALL is Picodata SQL (it closes the client's named statements).

The emulator's DDL is `picoemu create-table` / `drop-table`: any of them invalidates every statement
prepared before it (Picodata invalidates only the statements that read the changed table: the
emulator is stricter, never more lenient).
"""

import re
from typing import Optional

from . import caps as emu_caps

DEFAULT_STATEMENT_MAX = 100000
INVALIDATED_STATE = "42999"
OPTION = "pico_stmt_invalidation"

_DEALLOCATE = re.compile(r'^\s*deallocate\s+(?:prepare\s+)?("(?:[^"]|"")+"|[a-z_][a-z0-9_$]*)\s*;*\s*$',
                         re.IGNORECASE)


def has_stmt_invalidation(version: str) -> bool:
    return emu_caps.has("stmt_invalidation", version)


def parse_flag(value: str) -> bool:
    """Rust's bool::from_str, with Picodata's message."""
    if value in ("true", "false"):
        return value == "true"
    raise ValueError("error parsing value for option %s: provided string was not `true` or `false`"
                     % OPTION)


def storage_full_text(limit: int) -> str:
    return ('Statement storage is full. Current size limit: %d. Please, increase storage limit using: '
            'ALTER SYSTEM SET "pg_statement_max" TO <new-limit>' % limit)


def invalidated_text(name: str) -> str:
    return "prepared statement %s has been invalidated" % name


def deallocated(sql: str) -> Optional[str]:
    """The statement name a DEALLOCATE closes ('*' for ALL), or None."""
    m = _DEALLOCATE.match(sql)
    if not m:
        return None
    name = m.group(1)
    if name.startswith('"'):
        return name[1:-1].replace('""', '"')
    return "*" if name.lower() == "all" else name.lower()
