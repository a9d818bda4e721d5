"""Quoting, and the SQL files under test/emulator/sql with their placeholders."""

import os
import re
from typing import Dict, Iterable, Sequence

from ..errors import EmuError
from ..paths import SQL_DIR


def ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def lit(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return "'" + str(value).replace("'", "''") + "'"


def values_list(rows: Iterable[Sequence[str]]) -> str:
    """The rows of a VALUES list, each value SQL already."""
    return ",\n".join("(" + ", ".join(v for v in row) + ")" for row in rows)


_PLACEHOLDER = re.compile(r"\{\{([a-z_]+)\}\}")
_file_cache: Dict[str, str] = {}


def sql_file(file_name: str, /, **values: str) -> str:
    """The SQL of sql/<file_name> without its header (its documentation: the comment lines up to the
    first empty line) and final newline, each {{key}} replaced by values[key] in one pass (a value is
    never expanded again). The values are SQL already: the caller quotes names with ident() and
    values with lit(). A placeholder without a value, or a value without a placeholder, is an
    error."""
    if file_name not in _file_cache:
        try:
            with open(os.path.join(SQL_DIR, file_name)) as f:
                lines = f.read().split("\n")
        except OSError as exc:
            raise EmuError("cannot read the emulator's SQL file %s: %s" % (file_name, exc))
        if lines[0].startswith("--") and "" in lines:
            del lines[:lines.index("") + 1]
        _file_cache[file_name] = "\n".join(lines).rstrip("\n")
    text = _file_cache[file_name]
    wanted = set(_PLACEHOLDER.findall(text))
    if wanted != set(values):
        raise EmuError("sql/%s: placeholders %s, values given for %s" % (file_name, sorted(wanted), sorted(values)))
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], text)
