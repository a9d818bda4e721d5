"""A minimal PostgreSQL wire-protocol client (standard library only) for the emulator's tests and the
benchmarks: it sends exactly the messages a caller asks for (simple Query, or
Parse/Bind/Describe/Execute/Sync batches) and returns the server's answers as (type, fields) tuples,
so a test can check the protocol itself and a benchmark can count what a statement costs."""

import base64
import hashlib
import hmac
import os
import socket
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple

# An answer of the server: (message type, its decoded body: the fields of an error or notice, a
# command tag, a row's values as text (None for NULL), the status of a ReadyForQuery, else the body)
Answer = Tuple[str, Any]


def _msg(typ: bytes, body: bytes = b"") -> bytes:
    return typ + struct.pack("!I", len(body) + 4) + body


def _cstr(s: str) -> bytes:
    return s.encode() + b"\0"


class WireError(Exception):
    pass


class Conn:
    def __init__(self, port: int, user: str, password: str, dbname: str = "picodata", host: str = "127.0.0.1",
                 options: Optional[str] = None, application_name: str = "pgwire-test", timeout: float = 30,
                 extra: Optional[Dict[str, str]] = None) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        params = {"user": user, "database": dbname, "application_name": application_name}
        if options is not None:
            params["options"] = options
        params.update(extra or {})
        body = struct.pack("!I", 196608) + b"".join(_cstr(k) + _cstr(v) for k, v in params.items()) + b"\0"
        self.sock.sendall(struct.pack("!I", len(body) + 4) + body)
        self.key: Optional[bytes] = None
        self.params: Dict[str, str] = {}
        self._first = ""
        self._auth(user, password)

    def _read(self, n: int) -> bytes:
        while len(self.buf) < n:
            d = self.sock.recv(65536)
            if not d:
                raise WireError("connection closed")
            self.buf += d
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def recv(self) -> Tuple[bytes, bytes]:
        h = self._read(5)
        ln = struct.unpack("!I", h[1:5])[0]
        return h[:1], self._read(ln - 4)

    def _auth(self, user: str, password: str) -> None:
        while True:
            t, b = self.recv()
            if t == b"R":
                code = struct.unpack("!I", b[:4])[0]
                if code == 0:
                    continue
                if code == 5:
                    inner = hashlib.md5(password.encode() + user.encode()).hexdigest()
                    outer = "md5" + hashlib.md5(inner.encode() + b[4:8]).hexdigest()
                    self.sock.sendall(_msg(b"p", _cstr(outer)))
                elif code == 10:
                    nonce = base64.b64encode(os.urandom(18)).decode()
                    first = "n,,n=,r=" + nonce
                    body = _cstr("SCRAM-SHA-256") + struct.pack("!I", len(first)) + first.encode()
                    self.sock.sendall(_msg(b"p", body))
                    self._first = first[3:]  # client-first-message-bare
                elif code == 11:
                    server_first = b[4:].decode()
                    attrs = dict(kv.split("=", 1) for kv in server_first.split(","))
                    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), base64.b64decode(attrs["s"]),
                                                 int(attrs["i"]))
                    ckey = hmac.new(salted, b"Client Key", "sha256").digest()
                    skey = hashlib.sha256(ckey).digest()
                    final_wo = "c=biws,r=" + attrs["r"]
                    auth_msg = ",".join([self._first, server_first, final_wo]).encode()
                    sig = hmac.new(skey, auth_msg, "sha256").digest()
                    proof = bytes(a ^ b for a, b in zip(ckey, sig))
                    final = final_wo + ",p=" + base64.b64encode(proof).decode()
                    self.sock.sendall(_msg(b"p", final.encode()))
                elif code == 12:
                    continue
                else:
                    raise WireError("unsupported auth request %d" % code)
            elif t == b"E":
                raise WireError(fields(b))
            elif t == b"K":
                self.key = b
            elif t == b"S":
                k, v = b[:-1].split(b"\0", 1)
                self.params[k.decode()] = v.decode()
            elif t == b"Z":
                return

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def until_ready(self) -> List[Answer]:
        out: List[Answer] = []
        while True:
            t, b = self.recv()
            out.append((t.decode(), decode(t, b)))
            if t == b"Z":
                return out

    def query(self, sql: str) -> List[Answer]:
        self.send(_msg(b"Q", _cstr(sql)))
        return self.until_ready()

    def close(self) -> None:
        try:
            self.sock.sendall(_msg(b"X"))
        except OSError:
            pass
        self.sock.close()


def fields(body: bytes) -> Dict[str, str]:
    out = {}
    for part in body.split(b"\0"):
        if part:
            out[chr(part[0])] = part[1:].decode("utf-8", "replace")
    return out


def decode(t: bytes, b: bytes) -> Any:
    if t in (b"E", b"N"):
        return fields(b)
    if t == b"C":
        return b[:-1].decode()
    if t == b"D":
        n = struct.unpack("!H", b[:2])[0]
        pos = 2
        vals: List[Optional[str]] = []
        for _ in range(n):
            ln = struct.unpack("!i", b[pos:pos + 4])[0]
            pos += 4
            if ln < 0:
                vals.append(None)
            else:
                vals.append(b[pos:pos + ln].decode())
                pos += ln
        return vals
    if t == b"Z":
        return b.decode()
    return b


def parse(sql: str, name: str = "", types: Sequence[int] = ()) -> bytes:
    return _msg(b"P", _cstr(name) + _cstr(sql) + struct.pack("!H", len(types)) +
                b"".join(struct.pack("!I", t) for t in types))


def bind(params: Sequence[object] = (), stmt: str = "", portal: str = "") -> bytes:
    body = _cstr(portal) + _cstr(stmt) + struct.pack("!H", 0) + struct.pack("!H", len(params))
    for p in params:
        if p is None:
            body += struct.pack("!i", -1)
        else:
            v = str(p).encode()
            body += struct.pack("!I", len(v)) + v
    return _msg(b"B", body + struct.pack("!H", 0))


def describe(kind: bytes = b"P", name: str = "") -> bytes:
    return _msg(b"D", kind + _cstr(name))


def execute(portal: str = "", maxrows: int = 0) -> bytes:
    return _msg(b"E", _cstr(portal) + struct.pack("!I", maxrows))


def sync() -> bytes:
    return _msg(b"S")


def close(kind: bytes = b"S", name: str = "") -> bytes:
    return _msg(b"C", kind + _cstr(name))


def extended(conn: Conn, sql: str, params: Sequence[object] = (), types: Sequence[int] = ()) -> List[Answer]:
    """One PQexecParams-like round: Parse/Bind/Describe/Execute/Sync; returns the answers."""
    conn.send(parse(sql, types=types) + bind(params) + describe() + execute() + sync())
    return conn.until_ready()


def cancel(port: int, key: bytes, host: str = "127.0.0.1") -> None:
    s = socket.create_connection((host, port), timeout=10)
    s.sendall(struct.pack("!II", 16, 80877102) + key)
    s.close()


def kinds(answers: Sequence[Answer]) -> str:
    return "".join(t for t, _ in answers)


def errors(answers: Sequence[Answer]) -> List[Dict[str, str]]:
    return [v for t, v in answers if t == "E"]


def rows(answers: Sequence[Answer]) -> List[List[Optional[str]]]:
    return [v for t, v in answers if t == "D"]
