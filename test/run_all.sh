#!/usr/bin/env bash
# The one test command: installs the build dependencies (Debian 12, as root), checks formatting
# (clang-format) and lints the Python files (pyflakes), checks that no function in src/ is longer
# than 80 lines, builds the core with CMake and runs its unit tests (and the emulator's, with its
# type check and size limits), checks the packaging (PGXN metadata, make dist, the Debian package
# built from it with PGXS make, lintian, the package installed into a scratch server), then runs
# the multi-node TAP tests (prove -j) and beside them the pg_regress suites, the emulator's self-test and a benchmark smoke run, on the package's files
# extracted into a private copy of PostgreSQL (so the C++ of the extension is compiled once, by the package build, and
# nothing of a run outlives it in the system directories).
#
# Two runs can share a machine: every server listens on 127.0.0.1 (or a Unix socket) on ports
# reserved per test file (test/tools/port_range.py), and the one step that installs into the
# system directories (the package test's dpkg -i) takes a lock.
#
# Environment: JOBS (compile jobs, default 2), PICOROUTE_TAP_JOBS (TAP files at once, default 3),
# PICOROUTE_PICODATA_VERSION (the emulated Picodata build of every TAP file, default the newest,
# 26.2.1-rc2), PICOROUTE_PICODATA_VERSIONS (the builds of the version-dependent TAP files, default
# "25.5.10 26.2.1-rc2"; `test/emulator/picoemu versions` lists them), PICOROUTE_SQLSMITH_SECONDS
# (the sqlsmith bound, default 60).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
JOBS=${JOBS:-2}
TAP_JOBS=${PICOROUTE_TAP_JOBS:-3}
RUN_USER=${PICOROUTE_TEST_USER:-postgres}
# The emulated builds (test/emulator/picoemu_lib/caps.py BUILDS) and their capabilities (src/core/
# capabilities.json): 25.5.10 has none; 26.1.6 adds stmt_invalidation, read_preference,
# local_execution, integral_double_hash, dnf_chain_limit, switchover_refusal, unlogged_tables and
# explain_insert_buckets; 26.2.1-rc1 adds forward and explain_sections; 26.2.1-rc2 adds
# prune_by_bucket_id, concat_below_additive and empty_set_aggregate. So the newest has every capability and the oldest
# none: every file runs on the newest, and the version-dependent ones also on the oldest, which sees
# each capability absent. The builds between only combine the same capabilities otherwise, and each
# would run every version-dependent file once more, which the time budget (the whole command under
# 10 minutes on 2 cores) does not allow; PICOROUTE_PICODATA_VERSIONS="26.1.6 26.2.1-rc1" runs them.
MAIN_VERSION=${PICOROUTE_PICODATA_VERSION:-26.2.1-rc2}
VERSIONS=${PICOROUTE_PICODATA_VERSIONS:-25.5.10 26.2.1-rc2}
export PICOROUTE_SQLSMITH_SECONDS=${PICOROUTE_SQLSMITH_SECONDS:-60}

# Seconds per step, printed after each step and as a table at the end (failures included).
RUN_START=$(date +%s)
STEP_NAME=""
STEP_START=0
STEP_TIMES=()
end_step() {
    if [ -n "$STEP_NAME" ]; then
        local took=$(($(date +%s) - STEP_START))
        STEP_TIMES+=("$(printf '%6d s  %s' "$took" "$STEP_NAME")")
        printf -- '---- %s: %d s\n' "$STEP_NAME" "$took"
        STEP_NAME=""
    fi
}
step() {
    end_step
    STEP_NAME=$1
    STEP_START=$(date +%s)
    printf '\n==== %s ====\n' "$*"
}
report_times() {
    end_step
    echo
    echo "==== seconds per step ===="
    printf '%s\n' "${STEP_TIMES[@]}"
    printf '%6d s  total\n' "$(($(date +%s) - RUN_START))"
}

WORK=$(mktemp -d /tmp/picoroute-test.XXXXXX)
chmod 755 "$WORK"
BG_PIDS=()
finish() {
    local rc=$?
    if [ "${#BG_PIDS[@]}" -gt 0 ]; then kill "${BG_PIDS[@]}" 2>/dev/null || true; fi
    report_times
    if [ "$rc" -eq 0 ]; then
        rm -rf "$WORK"
    else
        # The logs of the failed run (TAP: tree/tmp_check/log, background checks: bg-*.log).
        echo "test/run_all.sh FAILED (exit $rc); logs kept in $WORK" >&2
    fi
}
trap finish EXIT

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

step "dependencies"
if [ "$(id -u)" -eq 0 ]; then
    scripts/install-deps.sh
else
    scripts/install-deps.sh || { echo "run as root to install dependencies" >&2; exit 1; }
fi

step "formatting" "(clang-format --dry-run --Werror)"
mapfile -t sources < <(find src test bench -name '*.cpp' -o -name '*.h' -o -name '*.hpp' 2>/dev/null | sort)
clang-format --dry-run --Werror "${sources[@]}"
echo "formatting: ${#sources[@]} files clean"

step "Python lint" "(python3 -m pyflakes)"
# Every Python file of the project: *.py and the scripts whose first line names python.
mapfile -t pyfiles < <({ find test/emulator test/tools bench scripts -name '*.py'
    find test/emulator test/tools bench scripts -type f ! -name '*.py' -exec grep -lsm1 '^#!.*python' {} +; } | sort -u)
# The interpreter that has pyflakes (Debian's pyflakes3 installs it for /usr/bin/python3).
PYFLAKES_PY=python3
python3 -c 'import pyflakes' 2>/dev/null || PYFLAKES_PY=/usr/bin/python3
"$PYFLAKES_PY" -m pyflakes "${pyfiles[@]}"
echo "pyflakes: ${#pyfiles[@]} files clean"

step "function length" "(no function in src/ longer than 80 lines)"
python3 test/tools/function_length.py --self-test
python3 test/tools/function_length.py --max 80 src

step "include loops" "(no module of src/ includes itself through others)"
python3 test/tools/include_cycles.py --self-test
python3 test/tools/include_cycles.py src

step "core library and unit tests" "(CMake + ctest)"
cmake -S . -B build/cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/cmake -j "$JOBS"
(cd build/cmake && ctest --output-on-failure -j "$JOBS")

step "hash cross-check, emulator unit tests and type check, port ranges"
python3 test/tools/bucket_hash_reference.py --self-test
python3 test/tools/bucket_hash_crosscheck.py build/cmake/picoroute_hash
# The emulator's pure logic, without servers (test/emulator/tests/test_*.py); its type check (mypy
# from Debian, the configuration in test/emulator/mypy.ini, a cache kept under build/); no module of
# it over 400 lines, no class over 300.
(cd test/emulator && python3 -B -m unittest discover -s tests -t . && mypy --cache-dir "$ROOT/build/mypy-emulator")
python3 test/tools/python_size.py --self-test
python3 test/tools/python_size.py --max-module 400 --max-class 300 test/emulator
python3 test/tools/port_range.py --self-test

# The package is the one build of the extension (PGXS make inside pg_buildext, from `make dist`);
# the package test installs it into the system directories for a moment (under a lock) and purges it.
step "packaging" "(PGXN META.json, make dist, Debian package: PGXS build, lintian, dpkg -i, CREATE EXTENSION, update path)"
as_root env PICOROUTE_DEB_OUT="$WORK/deb" PICOROUTE_PACKAGE_REGRESS=no PICOROUTE_TEST_USER="$RUN_USER" \
    test/package_test.sh

# Every later step runs on the package's files: a private copy of the system's PostgreSQL (its
# binaries find their files relative to where they are) with the package extracted into it.
step "private PostgreSQL with the package's files" "(dpkg-deb -x)"
SYS_BINDIR=$(pg_config --bindir)
PGLIB=$(dirname "$SYS_BINDIR")
PGSHARE=$(pg_config --sharedir)
PGROOT="$WORK/pgroot"
mkdir -p "$PGROOT$(dirname "$PGLIB")" "$PGROOT$(dirname "$PGSHARE")"
cp -a "$PGLIB" "$PGROOT$(dirname "$PGLIB")/"
cp -a "$PGSHARE" "$PGROOT$(dirname "$PGSHARE")/"
rm -f "$PGROOT$PGLIB"/lib/picoroute.so "$PGROOT$PGSHARE"/extension/picoroute*
DEB=$(ls "$WORK"/deb/postgresql-*-picoroute_*.deb)
dpkg-deb -x "$DEB" "$PGROOT"
BINDIR="$PGROOT$SYS_BINDIR"
[ "$("$BINDIR/pg_config" --pkglibdir)" = "$PGROOT$PGLIB/lib" ] ||
    { echo "the private copy of PostgreSQL does not find its own files" >&2; exit 1; }
[ -f "$PGROOT$PGLIB/lib/picoroute.so" ] || { echo "$DEB has no picoroute.so" >&2; exit 1; }
export PATH="$BINDIR:$PATH"
echo "$(basename "$DEB") extracted; pg_config: $(command -v pg_config)"

# PostgreSQL refuses to run as root: the server-based suites run as $RUN_USER from a scratch copy.
TREE="$WORK/tree"
mkdir "$TREE"
tar --exclude=./build --exclude=./.git -cf - . | tar -C "$TREE" -xf -
as_user() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u "$RUN_USER" -- env PATH="$PATH" "$@"
    else
        "$@"
    fi
}

# The TAP files spend most of their time waiting on their clusters: three checks run in the
# background meanwhile, each with a log and its seconds, reported after the TAP tests: the pg_regress
# suites then the emulator's self-test, and beside them the benchmark smoke run.
# pg_regress writes (and removes) its temporary instance, results and diffs in a directory of its
# own: the TAP files keep theirs in the tree's tmp_check.
run_regress() {
    mkdir "$WORK/regress" && { [ "$(id -u)" -ne 0 ] || chown "$RUN_USER" "$WORK/regress"; } &&
        as_user make -C "$TREE" installcheck REGRESS_OUTDIR="$WORK/regress" && return 0
    head -200 "$WORK/regress/regression.diffs" 2>/dev/null
    return 1
}
run_selftest() {
    # Its clusters take ports from a range reserved for this shell.
    local base
    base=$(python3 test/tools/port_range.py --pid $$) &&
        as_user env PICOEMU_SELFTEST_PORT="$base" bash -c "cd '$TREE' && test/emulator/selftest.sh"
}
run_bench() { bench/run.sh --quick; }
BACKGROUND="pg_regress:run_regress selftest:run_selftest bench:run_bench"
BACKGROUND_LANES=("pg_regress:run_regress selftest:run_selftest" "bench:run_bench")
background_job() {
    local name=$1 t0 rc=0
    shift
    t0=$(date +%s)
    "$@" >"$WORK/bg-$name.log" 2>&1 || rc=$?
    echo "$rc $(($(date +%s) - t0))" >"$WORK/bg-$name.result"
}

# The TAP files run at once (prove -j), each on its own ports. Every file runs on MAIN_VERSION;
# the files whose expectations depend on the emulated Picodata version (they ask picodata_has or
# picodata_version) run on every other version of VERSIONS too, as links named
# NAME.picodata-VERSION.pl (Picoroute::TestCluster takes the version from that name). The longest
# files start first. 070_sqlsmith runs once, for PICOROUTE_SQLSMITH_SECONDS.
step "multi-node TAP tests" "(prove -j$TAP_JOBS; every file on Picodata $MAIN_VERSION, the version-dependent ones also on: $VERSIONS; in the background: pg_regress, emulator self-test, benchmark smoke run)"
# A file is version-dependent when it asks for the version (picodata_has, picodata_version) or says
# so in a line of its own ("# Runs on every emulated version": its expectations are the same, what
# Picodata does underneath differs, e.g. the hashing of double keys).
mapfile -t version_files < <(grep -lE '\bpicodata_(has|version)\b|^# Runs on every emulated version' test/t/*.pl)
links=()
for version in $VERSIONS; do
    [ "$version" = "$MAIN_VERSION" ] && continue
    for f in "${version_files[@]}"; do
        link="${f%.pl}.picodata-$version.pl"
        ln -s "$(basename "$f")" "$TREE/$link"
        links+=("$link")
    done
done
if [ "$(id -u)" -eq 0 ]; then chown -R "$RUN_USER" "$TREE"; fi
echo "version-dependent files: ${version_files[*]##*/}"
# The longest first (seconds under prove -j3 on 2 cores), so that no long file starts last.
slow_first="069_batched_join 057_pgbench_churn 050_routing 052_dialect 051_routing_failover 070_sqlsmith 068_truncate
    054_detected_version 059_bounded_reads 075_leader_reads 067_stream_handover 058_partial_write"
all=(test/t/*.pl "${links[@]}")
ordered=()
for name in $slow_first; do
    for f in "${all[@]}"; do
        case "$f" in "test/t/$name."*) ordered+=("$f") ;; esac
    done
done
for f in "${all[@]}"; do
    case " ${ordered[*]} " in *" $f "*) ;; *) ordered+=("$f") ;; esac
done

BG_PIDS=()
for lane in "${BACKGROUND_LANES[@]}"; do
    (for job in $lane; do background_job "${job%%:*}" "${job#*:}"; done) &
    BG_PIDS+=($!)
done
tap_failed=""
if ! as_user bash -c "cd '$TREE' && PICOROUTE_PICODATA_VERSION='$MAIN_VERSION' prove -j$TAP_JOBS --timer \
        -I '$BINDIR/../lib/pgxs/src/test/perl' -I test/perl ${ordered[*]}"; then
    tap_failed=yes
    # The end of the log of each test file that failed or died (prove shows only the summary).
    for log in "$TREE"/tmp_check/log/regress_log_*; do
        if grep -qE '^\[[^]]*\] *not ok|Looks like your test exited|Bailout' "$log"; then
            echo "---- tail of ${log##*/}"
            tail -60 "$log"
        fi
    done
fi

# A server process that died of a signal is a crash, whatever the test files asserted: the worst
# defect. Only a SIGKILL a test sent itself is deliberate: a background worker's (020 kills the
# worker) and a backend's whose pid the test wrote into tmp_check/log/deliberate_kills (080).
crashes=$(grep -hE 'was terminated by signal' "$TREE"/tmp_check/log/*.log 2>/dev/null |
    grep -vE 'background worker .* was terminated by signal 9: Killed' || true)
if [ -n "$crashes" ] && [ -f "$TREE/tmp_check/log/deliberate_kills" ]; then
    while read -r pid; do
        crashes=$(echo "$crashes" | grep -vE "server process \(PID $pid\) was terminated by signal 9: Killed" || true)
    done <"$TREE/tmp_check/log/deliberate_kills"
fi
if [ -n "$crashes" ]; then
    echo "a server process crashed during the TAP tests:" >&2
    echo "$crashes" | head -20 >&2
    tap_failed=yes
fi

step "waiting for the background checks"
wait "${BG_PIDS[@]}" || true  # each job's result is in its file
BG_PIDS=()
failed="$tap_failed"
for job in $BACKGROUND; do
    name=${job%%:*}
    read -r rc secs <"$WORK/bg-$name.result" || { rc=1; secs=0; }
    STEP_TIMES+=("$(printf '%6d s  %s (in the background, during the TAP tests)' "$secs" "$name")")
    echo "---- $name: exit $rc, $secs s (log: the last lines)"
    if [ "$rc" -eq 0 ]; then tail -5 "$WORK/bg-$name.log"; else tail -80 "$WORK/bg-$name.log"; failed="$failed $name"; fi
done
if [ -n "$failed" ]; then
    [ -z "$tap_failed" ] || echo "TAP tests failed" >&2
    echo "failed:${failed/yes/ TAP}" >&2
    exit 1
fi

end_step
echo
echo "all suites passed"
