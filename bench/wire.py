"""A counting TCP relay for the benchmarks' counting passes (never on a timed path).

Relay(target_port) listens on a free port of 127.0.0.1 and passes every byte on to the target, in
both directions, unchanged. Per relay it counts, over the connections it carried:

- round trips: each time a client sends after the server spoke last (or first on its connection),
  the client waited for an answer: one round trip (requests it pipelines without reading count once);
- bytes each way;
- the PostgreSQL protocol messages the server sent, by type (DataRow 'D': rows received), parsed
  from the server's stream (the single-byte answer to an SSL or GSS request is skipped).

snapshot() returns the counts; a counting pass reads a snapshot before and after its statements.
The relay runs in a thread of its own (asyncio); stop() closes it."""

import asyncio
import socket
import struct
import threading

HOST = "127.0.0.1"
SSL_CODES = (80877103, 80877104)  # SSLRequest, GSSENCRequest


class Counts:
    def __init__(self):
        self.connections = 0
        self.round_trips = 0
        self.bytes_up = 0      # client -> server
        self.bytes_down = 0    # server -> client
        self.messages = {}     # server message type -> count

    def copy(self):
        c = Counts()
        c.__dict__.update({k: (dict(v) if isinstance(v, dict) else v) for k, v in self.__dict__.items()})
        return c

    def plus(self, other):
        c = self.copy()
        for k in ("connections", "round_trips", "bytes_up", "bytes_down"):
            setattr(c, k, getattr(self, k) + getattr(other, k))
        for t, n in other.messages.items():
            c.messages[t] = c.messages.get(t, 0) + n
        return c

    def minus(self, before):
        c = self.copy()
        for k in ("connections", "round_trips", "bytes_up", "bytes_down"):
            setattr(c, k, getattr(self, k) - getattr(before, k))
        c.messages = {t: n - before.messages.get(t, 0) for t, n in self.messages.items()}
        return c

    @property
    def rows(self):
        return self.messages.get("D", 0)


class _Conn:
    """One carried connection: who spoke last, and the server stream's parser state."""

    def __init__(self, counts):
        self.counts = counts
        self.last = None       # "up" or "down"
        self.buf = b""
        self.skip_byte = False  # the server's one-byte answer to an SSL/GSS request is next
        self.first_up = True

    def up(self, data):
        c = self.counts
        if self.first_up and len(data) >= 8 and struct.unpack("!I", data[4:8])[0] in SSL_CODES:
            self.skip_byte = True
        self.first_up = False
        if self.last != "up":
            c.round_trips += 1
        self.last = "up"
        c.bytes_up += len(data)

    def down(self, data):
        c = self.counts
        self.last = "down"
        c.bytes_down += len(data)
        self.buf += data
        if self.skip_byte and self.buf:
            self.buf = self.buf[1:]
            self.skip_byte = False
            self.first_up = True  # the startup packet comes next
        while len(self.buf) >= 5:
            n = struct.unpack("!I", self.buf[1:5])[0]
            if len(self.buf) < 1 + n:
                break
            t = chr(self.buf[0])
            c.messages[t] = c.messages.get(t, 0) + 1
            self.buf = self.buf[1 + n:]


class Relay:
    def __init__(self, target_port, target_host=HOST):
        self.target = (target_host, target_port)
        self.counts = Counts()
        self.lock = threading.Lock()
        s = socket.socket()
        s.bind((HOST, 0))
        self.port = s.getsockname()[1]
        s.close()
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        if not self.ready.wait(10):
            raise RuntimeError("relay did not start")

    def _run(self):
        asyncio.set_event_loop(self.loop)

        async def start():
            self.server = await asyncio.start_server(self._client, HOST, self.port)
            self.ready.set()
        self.loop.run_until_complete(start())
        self.loop.run_forever()

    async def _client(self, cr, cw):
        try:
            sr, sw = await asyncio.open_connection(*self.target)
        except OSError:
            cw.close()
            return
        with self.lock:
            self.counts.connections += 1
        conn = _Conn(self.counts)

        async def pump(reader, writer, note):
            try:
                while True:
                    data = await reader.read(65536)
                    if not data:
                        break
                    with self.lock:
                        note(data)
                    writer.write(data)
                    await writer.drain()
            except (OSError, asyncio.CancelledError):
                pass
            finally:
                try:
                    writer.close()
                except OSError:
                    pass
        await asyncio.gather(pump(cr, sw, conn.up), pump(sr, cw, conn.down))

    def snapshot(self):
        with self.lock:
            return self.counts.copy()

    def stop(self):
        def close():
            self.server.close()
            self.loop.stop()
        self.loop.call_soon_threadsafe(close)
        self.thread.join(10)
