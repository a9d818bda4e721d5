#!/usr/bin/env bash
# The one test command: installs the build dependencies (Debian 12, as root), checks formatting
# (clang-format) and lints the Python files (pyflakes), checks that no function in src/ is longer
# than 80 lines, builds the core with CMake and runs its unit tests, checks the packaging (PGXN
# metadata, make dist, the Debian package installed into a scratch server), builds and installs the
# extension with PGXS, then runs the pg_regress suites and the multi-node TAP tests as an
# unprivileged user.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
JOBS=${JOBS:-2}
RUN_USER=${PICOROUTE_TEST_USER:-postgres}

step() { printf '\n==== %s ====\n' "$*"; }

step "dependencies"
if [ "$(id -u)" -eq 0 ]; then
    scripts/install-deps.sh
else
    scripts/install-deps.sh || { echo "run as root to install dependencies" >&2; exit 1; }
fi

step "formatting (clang-format --dry-run --Werror)"
mapfile -t sources < <(find src test bench -name '*.cpp' -o -name '*.h' -o -name '*.hpp' 2>/dev/null | sort)
clang-format --dry-run --Werror "${sources[@]}"
echo "formatting: ${#sources[@]} files clean"

step "Python lint (python3 -m pyflakes)"
# Every Python file of the project: *.py and the scripts whose first line names python.
mapfile -t pyfiles < <({ find test/emulator test/tools bench scripts -name '*.py'
    find test/emulator test/tools bench scripts -type f ! -name '*.py' -exec grep -lsm1 '^#!.*python' {} +; } | sort -u)
# The interpreter that has pyflakes (Debian's pyflakes3 installs it for /usr/bin/python3).
PYFLAKES_PY=python3
python3 -c 'import pyflakes' 2>/dev/null || PYFLAKES_PY=/usr/bin/python3
"$PYFLAKES_PY" -m pyflakes "${pyfiles[@]}"
echo "pyflakes: ${#pyfiles[@]} files clean"

step "function length (no function in src/ longer than 80 lines)"
python3 test/tools/function_length.py --self-test
python3 test/tools/function_length.py --max 80 src

step "include loops (no module of src/ includes itself through others)"
python3 test/tools/include_cycles.py --self-test
python3 test/tools/include_cycles.py src

step "core library and unit tests (CMake + ctest)"
cmake -S . -B build/cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/cmake -j "$JOBS"
(cd build/cmake && ctest --output-on-failure -j "$JOBS")

step "hash cross-check against the independent Python reference"
python3 test/tools/bucket_hash_reference.py --self-test
python3 test/tools/bucket_hash_crosscheck.py build/cmake/picoroute_hash

step "emulator: Picodata dialect validator unit tests"
python3 test/emulator/test_emu_dialect.py

# Before `make install`: the package test installs the Debian package into the system directories
# and purges it at the end, so the tree's own build installed next is what the later suites use.
step "packaging (PGXN META.json, make dist, Debian package: build, lintian, dpkg -i, CREATE EXTENSION, update path)"
if [ "$(id -u)" -eq 0 ]; then test/package_test.sh; else sudo test/package_test.sh; fi

step "extension (PGXS make, make install)"
make -j "$JOBS"
if [ "$(id -u)" -eq 0 ]; then make install; else sudo make install; fi

# PostgreSQL refuses to run as root: the server-based suites run as $RUN_USER from a scratch copy.
WORK=$(mktemp -d /tmp/picoroute-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
tar --exclude=./build --exclude=./.git -cf - . | tar -C "$WORK" -xf -
as_user() {
    if [ "$(id -u)" -eq 0 ]; then
        chown -R "$RUN_USER" "$WORK"
        runuser -u "$RUN_USER" -- env PATH="$PATH" "$@"
    else
        "$@"
    fi
}

step "pg_regress suites (make installcheck on a temporary instance)"
if ! as_user make -C "$WORK" installcheck; then
    cat "$WORK/regression.diffs" 2>/dev/null | head -200
    exit 1
fi

# The TAP suites run against two emulated Picodata versions: the oldest supported (25.5: no bucket_id
# pruning, no local execution, replicas never serve reads, no forward=off) and head.
if [ -d test/t ] && ls test/t/*.pl >/dev/null 2>&1; then
    tap_failed=""
    for version in ${PICOROUTE_PICODATA_VERSIONS:-25.5 head}; do
        step "multi-node TAP tests (prove), emulated Picodata $version"
        t0=$(date +%s)
        if ! as_user bash -c "cd '$WORK' && PICOROUTE_PICODATA_VERSION=$version PATH=$(pg_config --bindir):\$PATH prove -v -I /usr/lib/postgresql/15/lib/pgxs/src/test/perl -I test/perl test/t/*.pl"; then
            tap_failed="$tap_failed $version"
            # The end of the log of each test file that failed or died (the TAP output above has
            # only the assertions).
            for log in "$WORK"/tmp_check/log/regress_log_*; do
                if grep -qE '^\[[^]]*\] *not ok|Looks like your test exited|Bailout' "$log"; then
                    echo "---- $version: tail of ${log##*/}"
                    tail -40 "$log"
                fi
            done
        fi
        # Each version keeps its own TAP data and logs (a failed test leaves its data directory).
        as_user bash -c "cd '$WORK' && if [ -d tmp_check ]; then mv tmp_check tmp_check-$version; fi"
        echo "TAP suites on Picodata $version took $(( $(date +%s) - t0 )) s"
    done
    if [ -n "$tap_failed" ]; then
        echo "TAP suites failed on Picodata:$tap_failed" >&2
        exit 1
    fi
fi

step "emulator self-test"
if [ -x test/emulator/selftest.sh ]; then
    as_user bash -c "cd '$WORK' && test/emulator/selftest.sh"
fi

step "benchmark smoke run (bench/run.sh --quick: checks the scripts work; figures not meaningful)"
bench/run.sh --quick >"$WORK/bench-quick.log" 2>&1 || { tail -50 "$WORK/bench-quick.log"; exit 1; }
tail -5 "$WORK/bench-quick.log"

echo
echo "all suites passed"
