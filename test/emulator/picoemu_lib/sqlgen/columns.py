"""The columns of user tables (`picoemu create-table --columns`) and the bucket of a row in SQL."""

import re
from typing import List, Optional, Tuple

from ..errors import EmuError
from ..state import Column, Table
from .text import ident

# (regex on the lower-cased type, canonical PostgreSQL type, class used for hashing, Picodata type)
_TYPES: List[Tuple[str, Optional[str], str, str]] = [
    (r"smallint|int2", "int2", "int", "integer"),
    (r"integer|int|int4", "int4", "int", "integer"),
    (r"bigint|int8", "int8", "int", "integer"),
    (r"text|string", "text", "text", "string"),
    (r"(varchar|character varying)\s*\(\s*\d+\s*\)", None, "text", "string"),
    (r"varchar|character varying", "varchar", "text", "string"),
    (r"bool|boolean", "boolean", "bool", "boolean"),
    (r"float8|double precision|double", "float8", "double", "double"),
    (r"(numeric|decimal)\s*\(\s*\d+\s*(,\s*\d+\s*)?\)", None, "decimal", "decimal"),
    (r"numeric|decimal", "numeric", "decimal", "decimal"),
    (r"uuid", "uuid", "uuid", "uuid"),
    (r"timestamptz|timestamp with time zone|datetime", "timestamptz", "datetime", "datetime"),
]
NAME_RE = re.compile(r"^[a-z_][a-z0-9_]*$")


def _split_top(spec: str) -> List[str]:
    parts: List[str] = []
    depth, cur = 0, ""
    for ch in spec:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def parse_columns(spec: str) -> List[Column]:
    """The columns of `create-table --columns`: name, PostgreSQL type, hashing class, Picodata
    type, NOT NULL and the scale of a numeric."""
    cols: List[Column] = []
    for part in _split_top(spec):
        m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\s+(.+?)(\s+not\s+null)?$", part, re.I)
        if not m:
            raise EmuError("cannot parse column definition %r (expected `name type [not null]`)" % part)
        name, typ, nn = m.group(1).lower(), " ".join(m.group(2).lower().split()), bool(m.group(3))
        if not NAME_RE.match(name) or name == "bucket_id":
            raise EmuError("bad column name %r (lower-case identifier, not bucket_id)" % name)
        for rx, canon, cls, pico in _TYPES:
            if re.fullmatch(rx, typ):
                pgtype = canon or typ.replace(" ", "")
                scale: Optional[int] = None
                if cls == "decimal":
                    sm = re.search(r",\s*(\d+)", typ)
                    scale = int(sm.group(1)) if sm else (0 if "(" in typ else None)
                cols.append({"name": name, "type": pgtype, "cls": cls, "pico": pico,
                             "not_null": nn, "scale": scale})
                break
        else:
            raise EmuError("unsupported column type %r for %s (supported: int2 int4 int8 text varchar "
                           "bool float8 numeric uuid timestamptz)" % (typ, name))
    if not cols:
        raise EmuError("--columns lists no column")
    if len({c["name"] for c in cols}) != len(cols):
        raise EmuError("duplicate column name in --columns")
    return cols


ENCODER = {"int": "_picoemu.enc_int((%s)::int8)", "text": "_picoemu.enc_text((%s)::text)",
           "bool": "_picoemu.enc_bool(%s)", "double": "_picoemu.enc_double((%s)::float8)",
           "decimal": "_picoemu.enc_decimal((%s)::numeric)", "uuid": "_picoemu.enc_uuid(%s)"}


def hash_expr(table: Table, bucket_count: int, rec: str = "NEW") -> str:
    """The storage's bucket of a row `rec` (PL/pgSQL: the key's encodings, murmur3)."""
    by_name = {c["name"]: c for c in table["columns"]}
    parts = [ENCODER[by_name[k]["cls"]] % ("%s.%s" % (rec, ident(k))) for k in table["sharding_key"]]
    return "_picoemu.bucket_id(%s, %d)" % (" || ".join(parts), bucket_count)
