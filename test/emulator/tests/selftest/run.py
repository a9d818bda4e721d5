"""Self-test of picoemu: exercises every command against real small clusters and checks the results.

Usage (from test/emulator): python3 -m tests.selftest [--keep] [test_NAME ...]   (../selftest.sh;
env PICOEMU_SELFTEST_PORT: first port, default 57400; PICOEMU_SELFTEST_ONLY=front,main: only those
scenarios, as test_front_cluster test_main_cluster)
A unittest suite: each cluster scenario is one test case (a function of a module of this package,
given the test case as `tc`) and each of its checks a subTest with real assertions, so that one failed
check does not stop the scenario. Prints an `ok`/`FAIL` line per check, each scenario's seconds, and
ends with `N passed, M failed` (checks); exits 1 on any failure. Bounded: after 420 s the running
scenario stops at its next check and the later ones do not start (the clusters are removed in every
case, all at once). The bucket arithmetic and every other piece of pure logic are unit-tested
without servers (tests/test_*.py)."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from types import FrameType, TracebackType
from typing import Any, List, Optional, Tuple, Type

from picoemu_lib.paths import PICOEMU

from ..support.cluster import BASE, TIMES
from .concurrency import concurrency_cluster
from .front import front_cluster
from .main_cluster import main_cluster
from .old_version import old_version_cluster
from .partial import partial_write_cluster
from .private import private_cluster
from .small import small_cluster

TIME_LIMIT = 420
NAMES = ("test_main_cluster", "test_small_cluster", "test_old_version_cluster", "test_front_cluster",
         "test_concurrency_cluster", "test_partial_write_cluster", "test_private_cluster")
DIRS = ("main", "small", "v25", "front", "conc", "partial", "private")
ErrInfo = Tuple[Type[BaseException], BaseException, Optional[TracebackType]]


class Scenario(unittest.TestCase):
    """The cluster scenarios, in their own state directories under one temporary root."""
    maxDiff = 4000
    root = ""
    timed_out = False

    def subTest(self, msg: Any = None, **params: Any) -> Any:
        if Scenario.timed_out:  # stop the scenario here (not only this check)
            raise TimeoutError("self-test exceeded %d s" % TIME_LIMIT)
        return super().subTest(msg, **params)

    @classmethod
    def dir(cls, name: str) -> str:
        return os.path.join(cls.root, name)

    def setUp(self) -> None:
        self.t0 = time.monotonic()

    def tearDown(self) -> None:
        print("     %s: %.1f s" % (self._testMethodName, time.monotonic() - self.t0), flush=True)

    def test_main_cluster(self) -> None:
        main_cluster(self, self.dir("main"))

    def test_small_cluster(self) -> None:
        small_cluster(self, self.dir("small"))

    def test_old_version_cluster(self) -> None:
        old_version_cluster(self, self.dir("v25"))

    def test_front_cluster(self) -> None:
        front_cluster(self, self.dir("front"), BASE + 60)

    def test_partial_write_cluster(self) -> None:
        partial_write_cluster(self, self.dir("partial"))

    def test_concurrency_cluster(self) -> None:
        concurrency_cluster(self, self.dir("conc"), BASE + 80)

    def test_private_cluster(self) -> None:
        private_cluster(self, self.dir("private"), BASE + 120)


class CleanUp(unittest.TestCase):
    """Runs last (not with --keep): every cluster is removed, all at once, and no process is left."""

    def test_down(self) -> None:
        root = Scenario.root
        t0 = time.monotonic()
        downs = {name: subprocess.Popen([PICOEMU, "--dir", os.path.join(root, name), "down"], text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for name in DIRS if os.path.isdir(os.path.join(root, name))}
        for name, p in downs.items():
            try:
                _, err = p.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                p.kill()
                _, err = p.communicate()
            with self.subTest("down %s" % name):
                self.assertEqual(p.returncode, 0, err)
                self.assertFalse(os.path.exists(os.path.join(root, name)), err)
        print("     down %s: %.1fs" % (", ".join(downs), time.monotonic() - t0), flush=True)
        leftovers = subprocess.run(["pgrep", "-f", "postgres -D %s" % root], capture_output=True, text=True).stdout
        with self.subTest("down: no server left running"):
            self.assertEqual(leftovers.strip(), "", leftovers)
        fronts = subprocess.run(["pgrep", "-f", "picoemu-front --dir %s" % root], capture_output=True,
                                text=True).stdout
        with self.subTest("down: no front left running"):
            self.assertEqual(fronts.strip(), "", fronts)
        r = subprocess.run([PICOEMU, "--dir", os.path.join(root, DIRS[0]), "down"], capture_output=True, text=True,
                           timeout=60)
        with self.subTest("down again: harmless"):
            self.assertEqual(r.returncode, 0, r.stderr)
        if os.path.isdir(root) and not os.listdir(root):
            os.rmdir(root)


class CheckResult(unittest.TextTestResult):
    """Prints `ok   <check>` / `FAIL <check> <why>` as each check ends and counts the checks. An
    error outside any check (a scenario that did not run to the end) counts as a failed check."""
    passed = failed = 0

    def _line(self, ok: bool, name: str, err: Optional[ErrInfo] = None) -> None:
        if ok or err is None:
            CheckResult.passed += 1
            self.stream.write("ok   %s\n" % name)
        else:
            CheckResult.failed += 1
            why = "%s: %s" % (err[0].__name__, err[1]) if err[0] is not AssertionError else str(err[1])
            self.stream.write("FAIL %s %s\n" % (name, " ".join(why.split())[:1500]))
        self.stream.flush()

    def addSubTest(self, test: unittest.TestCase, subtest: unittest.TestCase, err: Any) -> None:
        super().addSubTest(test, subtest, err)
        self._line(err is None, getattr(subtest, "_message", None) or str(subtest), err)

    def addError(self, test: unittest.TestCase, err: Any) -> None:
        super().addError(test, err)
        self._line(False, "%s: ran to the end" % getattr(test, "_testMethodName", test), err)

    def addFailure(self, test: unittest.TestCase, err: Any) -> None:
        super().addFailure(test, err)
        self._line(False, getattr(test, "_testMethodName", str(test)), err)


def main(argv: List[str]) -> int:
    keep = "--keep" in argv
    Scenario.root = tempfile.mkdtemp(prefix="picoemu-selftest-", dir="/tmp")
    os.chmod(Scenario.root, 0o755)

    def on_alarm(signum: int, frame: Optional[FrameType]) -> None:
        Scenario.timed_out = True
        raise TimeoutError("self-test exceeded %d s" % TIME_LIMIT)
    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TIME_LIMIT)
    t0 = time.time()
    # A targeted run: test_front_cluster, or PICOEMU_SELFTEST_ONLY=front,main
    only = [a for a in argv if a in NAMES]
    only += ["test_%s_" % x for x in os.environ.get("PICOEMU_SELFTEST_ONLY", "").split(",") if x]
    suite = unittest.TestSuite(Scenario(n) for n in NAMES
                               if not only or any(n == o or n.startswith(o) for o in only))
    runner = unittest.TextTestRunner(stream=sys.stdout, verbosity=0, resultclass=CheckResult)
    try:
        runner.run(suite)
    finally:
        signal.alarm(0)
    if not keep:
        runner.run(CleanUp("test_down"))
    print("self-test took %.1fs; %s" % (time.time() - t0, ", ".join(
        "%s: %d calls, %.0f s" % (what, n, secs) for what, (n, secs) in sorted(TIMES.items()))))
    print("%d passed, %d failed" % (CheckResult.passed, CheckResult.failed))
    return 1 if CheckResult.failed else 0
