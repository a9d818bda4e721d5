#!/usr/bin/env python3
"""A fake PostgreSQL-protocol server that records what clients send to log in, for tests that check
where credentials go. It listens on 127.0.0.1 only, asks every client for a cleartext password,
appends one JSON line per login to --record ({"user": ..., "password": ...}; "password" is null when
the client sent none), then refuses the login (28P01) and closes the connection.

Bounded: it exits after --seconds (default 120) or --max-connections logins, whichever comes first,
and gives each client 5 s. The first line on stdout is the port it listens on (0 asks for a free one).

    fake_login.py --record logins.jsonl [--port 0] [--seconds 120]
"""
import argparse
import json
import socket
import struct
import sys
import time

SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102


def read_exact(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise ConnectionError("client closed the connection")
        data += chunk
    return data


def read_startup(conn):
    """The startup message's parameters, after answering 'N' to SSL and GSS encryption requests."""
    while True:
        length = struct.unpack("!i", read_exact(conn, 4))[0]
        if length < 8 or length > 10000:
            raise ConnectionError("bad startup length %d" % length)
        body = read_exact(conn, length - 4)
        code = struct.unpack("!i", body[:4])[0]
        if code in (SSL_REQUEST, GSSENC_REQUEST):
            conn.sendall(b"N")
            continue
        if code == CANCEL_REQUEST:
            return None
        fields = body[4:].split(b"\0")
        return {fields[i].decode("utf-8", "replace"): fields[i + 1].decode("utf-8", "replace")
                for i in range(0, len(fields) - 1, 2) if fields[i]}


def read_password(conn):
    """The password of a PasswordMessage ('p'), or None when the client sent something else."""
    kind = read_exact(conn, 1)
    length = struct.unpack("!i", read_exact(conn, 4))[0]
    if length < 4 or length > 10000:
        return None
    body = read_exact(conn, length - 4)
    if kind != b"p":
        return None
    return body.rstrip(b"\0").decode("utf-8", "replace")


def refuse(conn):
    fields = b"SFATAL\0VFATAL\0C28P01\0Mpassword authentication failed (fake server)\0\0"
    conn.sendall(b"E" + struct.pack("!i", len(fields) + 4) + fields)


def serve_one(conn, record):
    conn.settimeout(5)
    params = read_startup(conn)
    if params is None:
        return
    entry = {"user": params.get("user"), "password": None}
    try:
        conn.sendall(b"R" + struct.pack("!ii", 8, 3))  # AuthenticationCleartextPassword
        entry["password"] = read_password(conn)
        refuse(conn)
    finally:
        with open(record, "a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=120)
    parser.add_argument("--max-connections", type=int, default=100)
    args = parser.parse_args()

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", args.port))
    listener.listen(16)
    print(listener.getsockname()[1], flush=True)
    deadline = time.monotonic() + args.seconds
    served = 0
    while served < args.max_connections:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        listener.settimeout(remaining)
        try:
            conn, _ = listener.accept()
        except socket.timeout:
            break
        served += 1
        with conn:
            try:
                serve_one(conn, args.record)
            except (OSError, ConnectionError) as e:
                print("fake_login: %s" % e, file=sys.stderr, flush=True)
    listener.close()


if __name__ == "__main__":
    main()
