#!/usr/bin/env bash
# Quick runs for contributors: build the extension into a private copy of PostgreSQL kept under
# build/pgroot (the system directories are never touched) and run chosen suites on it, as the
# test command does, without the packaging steps. Debian 12, as root or as a user with sudo; the
# dependencies must be installed already (scripts/install-deps.sh).
#
#   test/dev.sh build                        compile and install into build/pgroot
#   test/dev.sh unit                         the core's unit tests (CMake + ctest)
#   test/dev.sh tap test/t/050_routing.pl …  build, then those TAP files (prove -j2)
#   test/dev.sh regress [suite …]            build, then pg_regress (setup first; all when none)
#   test/dev.sh selftest                     the emulator's self-test
#
# Environment: PICOROUTE_PICODATA_VERSION (the emulated version of the TAP files), JOBS (compile
# jobs, default 2), PICOROUTE_TAP_JOBS (default 2). Servers run as the postgres user from a scratch
# copy of the tree (build/devtree), whose tmp_check/log keeps the TAP logs.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
JOBS=${JOBS:-2}
TAP_JOBS=${PICOROUTE_TAP_JOBS:-2}
RUN_USER=${PICOROUTE_TEST_USER:-postgres}
PGROOT="$ROOT/build/pgroot"
TREE="$ROOT/build/devtree"

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
as_user() {
    if [ "$(id -u)" -eq 0 ]; then runuser -u "$RUN_USER" -- env PATH="$PATH" "$@"; else "$@"; fi
}

private_pg() {
    local sys_bindir pglib pgshare
    sys_bindir=$(/usr/bin/pg_config --bindir)
    pglib=$(dirname "$sys_bindir")
    pgshare=$(/usr/bin/pg_config --sharedir)
    if [ ! -x "$PGROOT$sys_bindir/pg_config" ]; then
        mkdir -p "$PGROOT$(dirname "$pglib")" "$PGROOT$(dirname "$pgshare")"
        cp -a "$pglib" "$PGROOT$(dirname "$pglib")/"
        cp -a "$pgshare" "$PGROOT$(dirname "$pgshare")/"
    fi
    BINDIR="$PGROOT$sys_bindir"
    export PATH="$BINDIR:$PATH"
}

build() {
    private_pg
    # Compiled against the system's headers, installed into the private copy (same layout).
    make -s -j "$JOBS" PG_CONFIG=/usr/bin/pg_config >/dev/null
    make -s PG_CONFIG=/usr/bin/pg_config DESTDIR="$PGROOT" install >/dev/null
    echo "built and installed into $PGROOT"
}

scratch_tree() {
    mkdir -p "$TREE"
    # The tree without build outputs; tmp_check (TAP logs) starts empty for each run.
    rm -rf "$TREE/tmp_check"
    tar --exclude=./build --exclude=./.git -cf - . | tar -C "$TREE" -xf -
    chmod 755 "$ROOT/build" "$TREE"
    if [ "$(id -u)" -eq 0 ]; then chown -R "$RUN_USER" "$TREE"; fi
}

cmd=${1:-}
shift || true
case "$cmd" in
build) build ;;
unit)
    cmake -S . -B build/cmake -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build/cmake -j "$JOBS"
    (cd build/cmake && ctest --output-on-failure -j "$JOBS")
    ;;
tap)
    [ $# -gt 0 ] || { echo "usage: test/dev.sh tap FILE..." >&2; exit 2; }
    build
    scratch_tree
    as_user bash -c "cd '$TREE' && prove -j$TAP_JOBS --timer \
        -I '$BINDIR/../lib/pgxs/src/test/perl' -I test/perl $*"
    ;;
regress)
    build
    scratch_tree
    suites="${*:-}"
    out="$ROOT/build/regress"
    rm -rf "$out" && mkdir -p "$out" && chmod 777 "$out"
    if [ -n "$suites" ]; then
        as_user make -C "$TREE" installcheck PG_CONFIG="$BINDIR/pg_config" REGRESS_OUTDIR="$out" \
            REGRESS="setup $suites" || { head -200 "$out/regression.diffs"; exit 1; }
    else
        as_user make -C "$TREE" installcheck PG_CONFIG="$BINDIR/pg_config" REGRESS_OUTDIR="$out" ||
            { head -200 "$out/regression.diffs"; exit 1; }
    fi
    ;;
selftest)
    private_pg
    scratch_tree
    base=$(python3 test/tools/port_range.py --pid $$)
    as_user env PICOEMU_SELFTEST_PORT="$base" bash -c "cd '$TREE' && test/emulator/selftest.sh"
    ;;
*)
    sed -n '2,16p' "$0" >&2
    exit 2
    ;;
esac
