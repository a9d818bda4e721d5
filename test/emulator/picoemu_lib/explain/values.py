"""The values Picodata hashes in an EXPLAIN: a literal by its own type (1 an integer, 1.5 a decimal,
1.5e0 a double, 'x' a string), a bound parameter by the column it is compared with."""

import decimal
import uuid
from typing import Any, Optional, Sequence

from ..dialect import Token
from ..route.bucketset import UNKNOWN
from ..route.syntax import close

_CASTS = {"int": ("int", "integer", "bigint", "smallint", "int2", "int4", "int8", "unsigned"),
          "double": ("double",), "decimal": ("decimal", "numeric", "number"),
          "text": ("text", "string", "varchar"), "bool": ("bool", "boolean"), "uuid": ("uuid",)}


def _literal(toks: Sequence[Token]) -> object:
    """The value of a literal as Picodata types it, or UNKNOWN."""
    while len(toks) >= 3 and toks[0].text == "(" and toks[-1].text == ")" and close(toks, 0) == len(toks) - 1:
        toks = toks[1:-1]
    if len(toks) >= 6 and toks[0].low == "cast" and toks[1].text == "(" and toks[-1].text == ")" \
            and toks[-3].low == "as":
        return _cast(_literal(toks[2:-3]), toks[-2].low)
    if len(toks) >= 3 and toks[-2].text == "::":
        return _cast(_literal(toks[:-2]), toks[-1].low)
    if len(toks) != 1:
        return UNKNOWN
    t = toks[0]
    if t.kind == "num":
        if "e" in t.low:
            return float(t.text)
        return decimal.Decimal(t.text) if "." in t.text else int(t.text)
    if t.kind == "str":
        return t.text[1:-1].replace("''", "'")
    if t.kind == "ident" and t.low in ("true", "false"):
        return t.low == "true"
    if t.kind == "ident" and t.low == "null":
        return None
    return UNKNOWN


def _cast(value: Any, target: str) -> object:
    if value is UNKNOWN or value is None:
        return value
    try:
        if target in _CASTS["int"]:
            return int(value) if not isinstance(value, str) or value.strip().lstrip("+-").isdigit() else UNKNOWN
        if target in _CASTS["double"]:
            return float(value)
        if target in _CASTS["decimal"]:
            return decimal.Decimal(str(value)) if not isinstance(value, float) else decimal.Decimal(repr(value))
        if target in _CASTS["text"]:
            return value if isinstance(value, str) else UNKNOWN
        if target in _CASTS["bool"]:
            return value if isinstance(value, bool) else UNKNOWN
        if target in _CASTS["uuid"]:
            return uuid.UUID(value) if isinstance(value, str) else UNKNOWN
    except (ValueError, ArithmeticError):
        return UNKNOWN
    return UNKNOWN


def _bound(text: Optional[str], cls: str) -> object:
    """A bound text parameter, typed by the column it is compared with (Picodata infers it)."""
    if text is None:
        return None
    try:
        if cls == "int":
            return int(text)
        if cls == "double":
            return float(text)
        if cls == "decimal":
            return decimal.Decimal(text)
        if cls == "text":
            return text
        if cls == "bool":
            low = text.strip().lower()
            return low in ("t", "true", "1", "on", "yes", "y") if low in (
                "t", "true", "1", "on", "yes", "y", "f", "false", "0", "off", "no", "n") else UNKNOWN
        if cls == "uuid":
            return uuid.UUID(text)
    except (ValueError, ArithmeticError):
        return UNKNOWN
    return UNKNOWN


def typed_value(toks: Sequence[Token], cls: str, params: Optional[Sequence[Optional[str]]]) -> object:
    """The value Picodata hashes for one side of an equality with a column of class cls."""
    if len(toks) == 1 and toks[0].kind == "param":
        n = int(toks[0].text[1:])
        if params is None or not 0 < n <= len(params):
            return UNKNOWN
        return _bound(params[n - 1], cls)
    return _literal(toks)
