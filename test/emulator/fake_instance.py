#!/usr/bin/env python3
"""A misbehaving Picodata instance for failure tests: it speaks just enough of the PostgreSQL wire
protocol to accept a libpq connection (as Picodata does: no BackendKeyData, so no cancel key), then
answers each statement as a rule says: never, with a COPY state Picodata never enters, with an
unknown message, with a huge or invalid error text, or with a few rows.

    fake_instance.py [--port-file F] [--log L] [--rule REGEX=ACTION ...] [--rules-file R]
                     [--default ACTION] [--refuse-login] [--lifetime S]

It listens on 127.0.0.1 only (port 0: the kernel picks one; written to --port-file once listening,
else printed as the first line on stdout), serves each connection in a thread, and exits after
--lifetime seconds. Every connection's startup parameters (with "user" also on its own), the
password the client sent (it asks for a cleartext password, so a test can see whether one was sent
at all; null when none) and each statement text go to --log as JSON lines. With --refuse-login every
login is refused (28P01) once recorded: a test of where credentials go needs nothing more.

The first rule whose REGEX matches a statement (Simple Query text or Parse text) chooses its ACTION;
the rules of --rules-file (one REGEX=ACTION a line, read again for every statement, so a test can
change them as it goes) come before those of --rule:
  silent        read on, answer nothing (the statement hangs until the client gives up)
  copy-in       CopyInResponse where a result was due
  copy-out      CopyOutResponse, one CopyData row, and nothing more
  unknown       a message type the protocol does not have
  big-error     an ErrorResponse of 4 MB with a raw 0xFF byte, SQLSTATE XX000
  bad-byte      a short ErrorResponse whose message and detail hold a raw 0xFF byte, SQLSTATE XX000
  error:C:TEXT  an ErrorResponse with SQLSTATE C and message TEXT (which holds no "=")
  rows:A,B,...  one text column, one row per value ("" gives no row at all)
  ok            CommandComplete only (statements with no result rows)
Without a matching rule, --default applies (default: ok).
"""

import argparse
import json
import os
import re
import socket
import struct
import sys
import threading
import time
from typing import Any, Callable, List, Pattern, Tuple, Union

Rule = Tuple[Pattern[str], str]  # (statement pattern, action)

PROTOCOL_V3 = 196608
SSL_REQUEST = 80877103
CANCEL_REQUEST = 80877102


def msg(typ: bytes, body: bytes = b"") -> bytes:
    return typ + struct.pack("!I", len(body) + 4) + body


def cstr(text: str) -> bytes:
    return text.encode() + b"\0"


def error_body(sqlstate: str, text: Union[str, bytes]) -> bytes:
    raw = text if isinstance(text, bytes) else text.encode()
    return b"SERROR\0VERROR\0C" + sqlstate.encode() + b"\0M" + raw + b"\0\0"


class Log:
    def __init__(self, path: str) -> None:
        self.path = path
        self.lock = threading.Lock()

    def write(self, **entry: Any) -> None:
        if not self.path:
            return
        entry["time"] = round(time.time(), 3)
        with self.lock, open(self.path, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


class Session:
    def __init__(self, sock: socket.socket, rules: Callable[[], List[Rule]], default: str, log: Log, peer: str,
                 refuse_login: bool = False) -> None:
        self.refuse_login = refuse_login
        self.sock = sock
        self.rules = rules
        self.default = default
        self.log = log
        self.peer = peer
        self.buf = b""
        self.skip_to_sync = False

    def read(self, n: int) -> bytes:
        while len(self.buf) < n:
            data = self.sock.recv(65536)
            if not data:
                raise EOFError
            self.buf += data
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_message(self) -> Tuple[bytes, bytes]:
        head = self.read(5)
        length = struct.unpack("!I", head[1:5])[0]
        return head[:1], self.read(length - 4)

    def startup(self) -> bool:
        while True:
            length = struct.unpack("!I", self.read(4))[0]
            body = self.read(length - 4)
            code = struct.unpack("!I", body[:4])[0]
            if code == SSL_REQUEST:
                self.sock.sendall(b"N")
                continue
            if code == CANCEL_REQUEST:
                # Picodata has no cancel: it never handed out a key. Record that one came.
                self.log.write(event="cancel_request", peer=self.peer)
                return False
            if code != PROTOCOL_V3:
                return False
            parts = body[4:].split(b"\0")
            raw = dict(zip(parts[0::2], parts[1::2]))
            params = {k.decode(): v.decode("utf-8", "replace") for k, v in raw.items() if k}
            self.sock.sendall(msg(b"R", struct.pack("!I", 3)))  # cleartext password, please
            typ, body = self.read_message()
            password = body.rstrip(b"\0").decode("utf-8", "replace") if typ == b"p" else None
            self.log.write(event="startup", peer=self.peer, params=params, user=params.get("user"),
                           password=password)
            if self.refuse_login:
                self.sock.sendall(msg(b"E", error_body("28P01", "password authentication failed (fake)")))
                return False
            self.sock.sendall(msg(b"R", struct.pack("!I", 0)))
            for key, value in (("server_version", "15.0"), ("client_encoding", "UTF8"),
                               ("DateStyle", "ISO"), ("integer_datetimes", "on")):
                self.sock.sendall(msg(b"S", cstr(key) + cstr(value)))
            self.sock.sendall(msg(b"Z", b"I"))
            return True

    def action_for(self, sql: str) -> str:
        for pattern, action in self.rules():
            if pattern.search(sql):
                return action
        return self.default

    def rows(self, action: str) -> Tuple[bytes, bytes]:
        """RowDescription and DataRows of `rows:` (one text column)."""
        values = [v for v in action[5:].split(",") if v != ""]
        desc = msg(b"T", struct.pack("!H", 1) + cstr("value") + struct.pack("!IhIhih", 0, 0, 25, -1, -1, 0))
        data = b"".join(msg(b"D", struct.pack("!HI", 1, len(v)) + v.encode()) for v in values)
        return desc, data + msg(b"C", cstr("SELECT %d" % len(values)))

    def answer(self, action: str, extended: bool) -> bool:
        """Answers one statement: a normal result (True) or a misbehaviour (False: the session
        then answers nothing more until the client gives up)."""
        if action == "ok":
            self.sock.sendall(msg(b"C", cstr("OK")))
            return True
        if action.startswith("rows:"):
            desc, data = self.rows(action)
            self.sock.sendall(data if extended else desc + data)
            return True
        if action == "big-error":
            big = b"remote failure: " + b"x" * (4 * 1024 * 1024) + b"\xff end"
            self.sock.sendall(msg(b"E", error_body("XX000", big)))
            return True
        if action.startswith("error:"):  # error:SQLSTATE:TEXT, an error Picodata sends
            _, code, text = action.split(":", 2)
            self.sock.sendall(msg(b"E", error_body(code, text)))
            return True
        if action == "bad-byte":
            body = (b"SERROR\0VERROR\0CXX000\0Mremote failure: bad \xff byte\0"
                    b"Dthe detail: \xc0\xaf\0\0")
            self.sock.sendall(msg(b"E", body))
            return True
        if action == "copy-in":
            self.sock.sendall(msg(b"G", b"\0" + struct.pack("!H", 0)))
        elif action == "copy-out":
            self.sock.sendall(msg(b"H", b"\0" + struct.pack("!HH", 1, 0)) + msg(b"d", b"1\n"))
        elif action == "unknown":
            self.sock.sendall(msg(b"j", b"\0\0\0\0"))
        return False  # silent, or after a misbehaviour

    def serve(self) -> None:
        if not self.startup():
            return
        pending = ""  # the text of the statement the extended-protocol batch runs
        hung = False  # after a misbehaviour nothing more is answered
        while True:
            typ, body = self.read_message()
            if typ == b"X":
                return
            if hung:
                continue
            if typ == b"Q":
                sql = body.rstrip(b"\0").decode("utf-8", "replace")
                self.log.write(event="query", peer=self.peer, sql=sql)
                hung = not self.answer(self.action_for(sql), False)
                if not hung:
                    self.sock.sendall(msg(b"Z", b"I"))
            elif typ == b"P":
                name_end = body.index(b"\0")
                pending = body[name_end + 1:body.index(b"\0", name_end + 1)].decode("utf-8", "replace")
                self.log.write(event="parse", peer=self.peer, sql=pending)
                self.sock.sendall(msg(b"1"))
            elif typ == b"B":
                self.sock.sendall(msg(b"2"))
            elif typ == b"D":
                action = self.action_for(pending)
                self.sock.sendall(self.rows(action)[0] if action.startswith("rows:") else msg(b"n"))
            elif typ == b"E":
                self.log.write(event="execute", peer=self.peer, sql=pending)
                hung = not self.answer(self.action_for(pending), True)
            elif typ == b"S":
                self.sock.sendall(msg(b"Z", b"I"))
            # Close ('C'), Flush ('H') and anything else: nothing to answer.


class Rules:
    """The --rules-file rules (read again each time), then the fixed --rule ones."""

    def __init__(self, fixed: List[Rule], path: str) -> None:
        self.fixed = fixed
        self.path = path

    def __call__(self) -> List[Rule]:
        if not self.path or not os.path.exists(self.path):
            return self.fixed
        with open(self.path, encoding="utf-8") as f:
            return parse_rules([line.rstrip("\n") for line in f if line.strip()]) + self.fixed


def parse_rules(texts: List[str]) -> List[Rule]:
    rules = []
    for text in texts:
        pattern, sep, action = text.rpartition("=")
        if not sep:
            raise SystemExit("--rule wants REGEX=ACTION: %r" % text)
        rules.append((re.compile(pattern, re.IGNORECASE | re.DOTALL), action))
    return rules


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", default="")
    ap.add_argument("--log", default="")
    ap.add_argument("--rule", action="append", default=[])
    ap.add_argument("--rules-file", default="")
    ap.add_argument("--default", default="ok")
    ap.add_argument("--refuse-login", action="store_true")
    ap.add_argument("--lifetime", type=float, default=300.0)
    args = ap.parse_args()
    rules = Rules(parse_rules(args.rule), args.rules_file)
    log = Log(args.log)

    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", args.port))
    server.listen(16)
    server.settimeout(0.5)
    port = server.getsockname()[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as out:
            out.write("%d\n" % port)
        os.replace(tmp, args.port_file)
    else:
        print(port, flush=True)

    def run(sock: socket.socket, peer: str) -> None:
        try:
            Session(sock, rules, args.default, log, peer, args.refuse_login).serve()
        except (EOFError, OSError):
            pass
        finally:
            sock.close()

    end = time.monotonic() + args.lifetime
    while time.monotonic() < end:
        try:
            sock, addr = server.accept()
        except socket.timeout:
            continue
        sock.settimeout(max(1.0, end - time.monotonic()))
        threading.Thread(target=run, args=(sock, "%s:%d" % addr), daemon=True).start()
    return 0


if __name__ == "__main__":
    sys.exit(main())
