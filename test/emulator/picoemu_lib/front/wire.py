"""The wire protocol's messages as the front reads and writes them."""

import functools
import struct
from typing import Iterator, List, Optional, Tuple

HOST = "127.0.0.1"
SSL_REQUEST, GSS_REQUEST, CANCEL_REQUEST, PROTO_3 = 80877103, 80877104, 80877102, 196608


def msg(typ: bytes, body: bytes = b"") -> bytes:
    return typ + struct.pack("!I", len(body) + 4) + body


def cstr(s: str) -> bytes:
    return s.encode() + b"\0"


def error_body(code: str, text: str, severity: str = "ERROR", hint: Optional[str] = None) -> bytes:
    b = b"S" + cstr(severity) + b"V" + cstr(severity) + b"C" + cstr(code) + b"M" + cstr(text)
    if hint:
        b += b"H" + cstr(hint)
    return b + b"\0"


def error_msg(code: str, text: str, severity: str = "ERROR", hint: Optional[str] = None) -> bytes:
    return msg(b"E", error_body(code, text, severity, hint))


def error_field(m: bytes, code: bytes) -> bytes:
    """A field of an ErrorResponse message (with its header), b"" when absent."""
    pos = 5
    while pos < len(m) and m[pos:pos + 1] != b"\0":
        end = m.index(b"\0", pos + 1)
        if m[pos:pos + 1] == code:
            return m[pos + 1:end]
        pos = end + 1
    return b""


def null_data_row(m: bytes) -> bytes:
    """A DataRow with the columns of m, every value NULL."""
    n = int.from_bytes(m[5:7], "big")
    return msg(b"D", m[5:7] + b"\xff\xff\xff\xff" * n)


def read_cstr(body: bytes, pos: int) -> Tuple[str, int]:
    end = body.index(b"\0", pos)
    return body[pos:end].decode("utf-8", "replace"), end + 1


def bind_params(body: bytes, pos: int) -> Iterator[Tuple[int, Optional[bytes], int]]:
    """The parameters of a Bind (from its format codes on): (index, raw bytes or None, format code)."""
    nf = int.from_bytes(body[pos:pos + 2], "big")
    fmts = struct.unpack("!%dH" % nf, body[pos + 2:pos + 2 + 2 * nf]) if nf else ()
    pos += 2 + 2 * nf
    np = int.from_bytes(body[pos:pos + 2], "big")
    pos += 2
    for i in range(np):
        ln = struct.unpack("!i", body[pos:pos + 4])[0]
        pos += 4
        val = None
        if ln >= 0:
            val = body[pos:pos + ln]
            pos += ln
        yield i, val, fmts[0] if nf == 1 else (fmts[i] if nf > 1 else 0)


def bind_values(body: bytes, pos: int) -> List[Optional[str]]:
    """The parameter values of a Bind (from its format codes on) as text, None for NULL or binary."""
    return list(_bind_values(body, pos))


# A Bind is read several times (its routing, its key_route.sql values, the parts of a write): a
# batch of 1,000 rows has 4,000 parameters. The last few are remembered, as tuples (a new list
# for each caller).
@functools.lru_cache(maxsize=8)
def _bind_values(body: bytes, pos: int) -> Tuple[Optional[str], ...]:
    return tuple(val.decode("utf-8", "replace") if val is not None and fmt == 0 else None
                 for _, val, fmt in bind_params(body, pos))


def set_config_bind(portal: str, stmt: str, name: str, value: str) -> bytes:
    """The Bind of the front's `SELECT set_config($1, $2, false)` statement to (name, value)."""
    params = struct.pack("!H", 0) + struct.pack("!H", 2)
    for val in (name, value):
        b = val.encode()
        params += struct.pack("!I", len(b)) + b
    params += struct.pack("!H", 0)
    return msg(b"B", cstr(portal) + cstr(stmt) + params)


class Frames:
    """Cuts a byte stream into whole messages (type byte, length, body). A message longer than what
    has arrived so far waits as a list of the pieces read and is joined once, when it is whole: a
    100 MB DataRow read 256 kB at a time costs one copy, not one per read."""

    def __init__(self) -> None:
        self.rest = b""
        self.pieces: List[bytes] = []
        self.have = 0
        self.need = 0

    def feed(self, data: bytes) -> List[bytes]:
        """The messages completed by data, in order (each with its type byte and length)."""
        if self.need:
            self.pieces.append(data)
            self.have += len(data)
            if self.have < self.need:
                return []
            data = b"".join(self.pieces)
            self.pieces, self.have, self.need = [], 0, 0
        elif self.rest:
            data = self.rest + data
        out = []
        pos, n = 0, len(data)
        while n - pos >= 5:
            ln = int.from_bytes(data[pos + 1:pos + 5], "big")
            if n - pos < ln + 1:
                break
            out.append(data[pos:pos + 1 + ln])
            pos += 1 + ln
        self.rest = data[pos:] if pos < n else b""
        if len(self.rest) >= 5:
            need = int.from_bytes(self.rest[1:5], "big") + 1
            if need > 1 << 16:
                self.pieces, self.have, self.need = [self.rest], len(self.rest), need
                self.rest = b""
        return out
