"""The values of rows picoemu stores (pure): a JSON value converted for its column (the value stored and
hashed), its COPY text, rows given as JSON (`insert --values`) and the deterministic rows of `load`."""

import datetime
import decimal
import json
import uuid
from typing import Any, List, Sequence

from .errors import EmuError
from .state import Column, Table


def convert(col: Column, value: Any) -> object:
    """A JSON value -> the Python value stored (and hashed) for this column."""
    if value is None:
        return None
    cls = col["cls"]
    try:
        if cls == "int":
            if isinstance(value, bool) or isinstance(value, float):
                raise ValueError("not an integer")
            if isinstance(value, decimal.Decimal):
                if value != value.to_integral_value():
                    raise ValueError("not an integer")
                return int(value)
            return int(value)
        if cls == "text":
            if not isinstance(value, str):
                raise ValueError("not a string")
            return value
        if cls == "bool":
            if not isinstance(value, bool):
                raise ValueError("not a boolean")
            return value
        if cls == "double":
            if isinstance(value, bool):
                raise ValueError("not a number")
            return float(value)
        if cls == "decimal":
            if isinstance(value, (bool, float)):
                raise ValueError("give decimals as strings or JSON numbers")
            d = decimal.Decimal(str(value))
            if not d.is_finite():
                raise ValueError("not finite")
            if col["scale"] is not None:
                d = d.quantize(decimal.Decimal(1).scaleb(-col["scale"]))
            elif _exponent(d) > 0:
                d = d.quantize(decimal.Decimal(1))
            return d
        if cls == "uuid":
            return uuid.UUID(str(value))
        if cls == "datetime":
            return str(value)
    except (ValueError, TypeError, decimal.InvalidOperation) as exc:
        raise EmuError("bad value %r for column %s (%s): %s" % (value, col["name"], col["type"], exc))
    raise EmuError("unsupported column class %s" % cls)


def copy_text(value: object) -> str:
    if value is None:
        return "\\N"
    if isinstance(value, bool):
        return "t" if value else "f"
    if isinstance(value, float):
        return repr(value)
    s = str(value)
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def parse_values(table: Table, texts: Sequence[str]) -> List[List[object]]:
    rows: List[List[object]] = []
    for text in texts:
        try:
            v = json.loads(text, parse_float=decimal.Decimal)
        except ValueError as exc:
            raise EmuError("--values %r is not JSON: %s" % (text, exc))
        cols = table["columns"]
        if isinstance(v, dict):
            unknown = set(v) - {c["name"] for c in cols}
            if unknown:
                raise EmuError("unknown column(s) %s" % ", ".join(sorted(unknown)))
            v = [v.get(c["name"]) for c in cols]
        if not isinstance(v, list) or len(v) != len(cols):
            raise EmuError("--values %r: expected a JSON array of %d values (%s) or an object"
                           % (text, len(cols), ", ".join(c["name"] for c in cols)))
        rows.append(v)
    return rows


def generate_rows(table: Table, start: int, count: int) -> List[List[object]]:
    """Deterministic rows: row i has i in integer key columns, '<column>_<i>' in text columns, ..."""
    rows: List[List[object]] = []
    base = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    for i in range(start, start + count):
        row: List[object] = []
        for c in table["columns"]:
            cls, key = c["cls"], c["name"] in table["primary_key"]
            if cls == "int":
                row.append(i if key else (i * 7) % 1000)
            elif cls == "text":
                row.append("%s_%d" % (c["name"], i))
            elif cls == "bool":
                row.append(i % 2 == 0)
            elif cls == "double":
                row.append(i * 0.5)
            elif cls == "decimal":
                row.append(str(decimal.Decimal(i).scaleb(-2)))
            elif cls == "uuid":
                row.append(str(uuid.uuid5(uuid.NAMESPACE_OID, "%s.%s.%d" % (table["name"], c["name"], i))))
            else:
                row.append((base + datetime.timedelta(seconds=i)).isoformat())
        rows.append(row)
    return rows


def _exponent(d: decimal.Decimal) -> int:
    """The exponent of a finite decimal (an int: only NaN and the infinities have a letter there)."""
    exp = d.as_tuple().exponent
    assert isinstance(exp, int), d
    return exp
