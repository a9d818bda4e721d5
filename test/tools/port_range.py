#!/usr/bin/env python3
"""Free port ranges for the tests and benchmarks, so that several runs share one machine.

An emulated cluster (test/emulator/picoemu --base-port B) uses a contiguous range from its base port:
B+k for the front of its k-th instance, B+200+k for that instance's PostgreSQL server and B+500+k
for the iproto address it advertises. A caller gets a whole range of WIDTH ports, in the manner of
PostgreSQL's TAP framework (PostgreSQL::Test::Cluster::get_free_port): a random candidate, kept only
when every port of it can be bound on 127.0.0.1 now and no living process holds it; the holder's pid
is written, under flock, into a reservation file in a directory every user of the machine shares
($PICOROUTE_PORT_DIR, else picoroute-ports in the temporary directory). The reservation ends when
the holder exits. Ports B+100 to B+199 are never used by the emulator: the holder may give them to
its own servers (a routing node, a benchmark server).

The ranges lie below 32768, outside the kernel's ephemeral ports (a client socket never holds one of
them) and outside the ports PostgreSQL::Test::Cluster gives its nodes (49152 and up).

    port_range.py [--pid PID]      reserves a range for PID (default: the parent process) and
                                   prints its base port
    port_range.py --self-test
"""

import argparse
import errno
import fcntl
import os
import random
import socket
import sys
import tempfile

FIRST = 10000
WIDTH = 700
COUNT = 14  # ranges 10000-10699 ... 19100-19799
NODE_OFFSET = 100  # B+100 .. B+199: for the holder's own servers


def port_dir():
    d = os.environ.get("PICOROUTE_PORT_DIR") or os.path.join(tempfile.gettempdir(), "picoroute-ports")
    try:
        os.mkdir(d)
        os.chmod(d, 0o1777)  # shared by root and the server user
    except FileExistsError:
        pass
    return d


def can_bind(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def alive(pid):
    try:
        os.kill(pid, 0)
    except OSError as e:
        return e.errno == errno.EPERM
    return True


def try_reserve(base, pid, directory):
    """Reserves [base, base+WIDTH) for pid if nobody living holds it and all its ports are free."""
    path = os.path.join(directory, "range-%d.rsv" % base)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            os.fchmod(fd, 0o666)
        except PermissionError:
            pass
        fcntl.flock(fd, fcntl.LOCK_EX)
        text = os.read(fd, 64).decode(errors="replace").strip()
        holder = int(text) if text.isdigit() else 0
        # A living holder keeps its range, even against itself: a process asking twice (two
        # clusters) gets two ranges.
        if holder and alive(holder):
            return False
        if not all(can_bind(p) for p in range(base, base + WIDTH)):
            return False
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, b"%10d\n" % pid)
        return True
    finally:
        os.close(fd)  # closing drops the flock


def reserve(pid=None):
    """The base port of a free range, reserved for pid (default: this process)."""
    pid = pid or os.getpid()
    directory = port_dir()
    bases = [FIRST + i * WIDTH for i in range(COUNT)]
    random.shuffle(bases)
    for base in bases:
        if try_reserve(base, pid, directory):
            return base
    raise RuntimeError("no free range of %d ports between %d and %d (see %s)"
                       % (WIDTH, FIRST, FIRST + COUNT * WIDTH - 1, directory))


def self_test():
    os.environ["PICOROUTE_PORT_DIR"] = tempfile.mkdtemp(prefix="port-range-test-")
    me = os.getpid()
    a = reserve(me)
    b = reserve(me)  # the same holder asking again gets another range
    assert a != b, "a second request of one holder got the range it holds"
    assert (a - FIRST) % WIDTH == 0 and FIRST <= a < FIRST + COUNT * WIDTH
    assert not try_reserve(a, 1, os.environ["PICOROUTE_PORT_DIR"]), "a living holder keeps its range"
    assert not try_reserve(a, me, os.environ["PICOROUTE_PORT_DIR"]), "even against itself"
    # A range whose port is bound is skipped, and taken once the port is free again.
    c = next(FIRST + i * WIDTH for i in range(COUNT) if FIRST + i * WIDTH not in (a, b))
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", c + 3))
    s.listen(1)
    try:
        assert not try_reserve(c, me, os.environ["PICOROUTE_PORT_DIR"]), "a bound port makes the range busy"
    finally:
        s.close()
    assert try_reserve(c, me, os.environ["PICOROUTE_PORT_DIR"]), "a free range nobody holds is taken"
    print("port_range self-test passed (ranges %d and %d)" % (a, b))


def main():
    ap = argparse.ArgumentParser(description="reserve a free port range; prints its base port")
    ap.add_argument("--pid", type=int, default=None, help="the holder (default: the parent process)")
    ap.add_argument("--self-test", action="store_true")
    args = ap.parse_args()
    if args.self_test:
        self_test()
        return 0
    print(reserve(args.pid or os.getppid()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
