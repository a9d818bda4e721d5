#!/usr/bin/env bash
# The packaging test (as root: it installs a Debian package). Part of test/run_all.sh, and runnable
# alone:
#
#   test/package_test.sh
#
#  1. META.json is valid PGXN metadata and agrees with picoroute.control and debian/.
#  2. `make dist` makes picoroute-<version>.tar.gz; it unpacks into a temporary directory and
#     builds there from scratch with PGXS make, inside scripts/build-deb.sh, which builds the
#     Debian package postgresql-15-picoroute from it (pg_buildext, dpkg-buildpackage) and runs
#     lintian.
#  3. The package is installed with dpkg -i; its files are checked (dpkg --verify).
#  4. A scratch server (initdb into a temporary directory, as $PICOROUTE_TEST_USER, picoroute in
#     shared_preload_libraries, Unix socket only, port $PICOROUTE_DEB_TEST_PORT) runs
#     CREATE EXTENSION picoroute against the installed files, and the update path from 0.1 to the
#     current version: CREATE EXTENSION picoroute VERSION '0.1', ALTER EXTENSION picoroute UPDATE.
#     The pg_regress suites (`make installcheck`, `upgrade` among them) pass on the installed files
#     (PICOROUTE_PACKAGE_REGRESS=no skips them: run_all.sh runs them once, on the package's files
#     extracted into a private copy of PostgreSQL).
#  5. The package is purged, which removes its files from the system directories.
#
# Steps 3 to 5 hold a lock (/tmp/picoroute-package.lock), so that two runs on one machine take the
# system directories in turn. PICOROUTE_DEB_OUT=DIR keeps the built package (and lintian.log) in DIR.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RUN_USER=${PICOROUTE_TEST_USER:-postgres}
PORT=${PICOROUTE_DEB_TEST_PORT:-28150}
PKG=postgresql-15-picoroute
BINDIR=/usr/lib/postgresql/15/bin

if [ "$(id -u)" -ne 0 ]; then
    echo "package_test: needs root (dpkg -i); run it as root or through sudo" >&2
    exit 1
fi

T=$(mktemp -d /tmp/picoroute-package.XXXXXX)
chmod 755 "$T"
installed=no
cleanup() {
    if [ -f "$T/pg/data/postmaster.pid" ]; then
        runuser -u "$RUN_USER" -- "$BINDIR/pg_ctl" -D "$T/pg/data" -m immediate stop >/dev/null 2>&1 || true
    fi
    if [ "$installed" = yes ]; then dpkg --purge "$PKG" >/dev/null || true; fi
    rm -rf "$T"
}
trap cleanup EXIT
fail() { echo "package_test: FAILED: $*" >&2; exit 1; }
ok() { echo "ok - $*"; }

# 1. PGXN metadata.
python3 test/tools/pgxn_meta_check.py "$ROOT"
ok "META.json is valid PGXN metadata"
VERSION=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' META.json)
EXTVERSION=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" picoroute.control)

# 2. The source distribution and the package built from it.
start=$(date +%s)
OUT=${PICOROUTE_DEB_OUT:-$T/out}
scripts/build-deb.sh "$OUT"
if git rev-parse --git-dir >/dev/null 2>&1; then
    TARBALL="$OUT/picoroute-$VERSION.tar.gz"
    [ -f "$TARBALL" ] || fail "make dist did not make $TARBALL"
    listing=$(tar -tzf "$TARBALL")
    for f in META.json picoroute.control Makefile README.md src/sql/releases/picoroute--0.1.sql \
        src/sql/updates/picoroute--0.1--0.2.sql debian/control; do
        grep -qx "picoroute-$VERSION/$f" <<<"$listing" || fail "the tarball lacks $f"
    done
    if grep -v "^picoroute-$VERSION/" <<<"$listing" | grep -q .; then
        fail "the tarball has files outside picoroute-$VERSION/"
    fi
    ok "make dist: picoroute-$VERSION.tar.gz ($(wc -l <<<"$listing") entries) unpacked and built from scratch with PGXS make"
else
    echo "# no git checkout: make dist skipped, the package was built from a copy of the tree"
fi
DEB=$(ls "$OUT"/"$PKG"_"$VERSION"-*.deb)
ok "package $(basename "$DEB") built and lintian-checked in $(($(date +%s) - start)) s"
# The license is declared (LICENSE, debian/copyright): lintian finds nothing to say about it.
if grep -iE '^[EWI]: .*(licen[cs]e|copyright)' "$OUT/lintian.log"; then
    fail "lintian reports the license or the copyright file (above)"
fi
ok "lintian: no finding about the license or debian/copyright"

# 3. Install it, the system directories locked against another run of this test.
exec 8>>/tmp/picoroute-package.lock
chmod 666 /tmp/picoroute-package.lock 2>/dev/null || true
flock 8
if dpkg-query -W -f='${Status}' "$PKG" 2>/dev/null | grep -q 'install ok installed'; then
    echo "package_test: $PKG is installed on this machine; this test installs and purges it." >&2
    echo "package_test: remove it first (apt-get remove $PKG)" >&2
    exit 1
fi
dpkg -i "$DEB" >/dev/null
installed=yes
dpkg --verify "$PKG" || fail "dpkg --verify $PKG"
EXTDIR=$(pg_config --sharedir)/extension
for f in "$(pg_config --pkglibdir)/picoroute.so" "$EXTDIR/picoroute.control" "$EXTDIR/picoroute--$EXTVERSION.sql" \
    "$EXTDIR/picoroute--0.1.sql" "$EXTDIR/picoroute--0.1--0.2.sql"; do
    dpkg -S "$f" >/dev/null 2>&1 || fail "$f is not a file of $PKG"
done
ok "dpkg -i $PKG: library, control file and the scripts of 0.1, 0.1--0.2 and $EXTVERSION installed"

# 4. A scratch server on the installed files.
mkdir -p "$T/pg"
chown "$RUN_USER" "$T/pg"
runuser -u "$RUN_USER" -- "$BINDIR/initdb" -D "$T/pg/data" -A trust >/dev/null
cat >>"$T/pg/data/postgresql.conf" <<CONF
listen_addresses = ''
port = $PORT
unix_socket_directories = '$T/pg'
shared_preload_libraries = 'picoroute'
picoroute.source = 'push'
CONF
runuser -u "$RUN_USER" -- "$BINDIR/pg_ctl" -D "$T/pg/data" -l "$T/pg/server.log" -w start >/dev/null ||
    { cat "$T/pg/server.log"; fail "the scratch server did not start"; }
psql_scratch() { runuser -u "$RUN_USER" -- "$BINDIR/psql" -X -q -At -v ON_ERROR_STOP=1 -h "$T/pg" -p "$PORT" "$@"; }

psql_scratch -d postgres -c "CREATE EXTENSION picoroute"
got=$(psql_scratch -d postgres -c "SELECT extversion FROM pg_extension WHERE extname = 'picoroute'")
[ "$got" = "$EXTVERSION" ] || fail "CREATE EXTENSION made version '$got', expected '$EXTVERSION'"
got=$(psql_scratch -d postgres -c "SELECT picoroute_bucket_id_with_count(3000, 1)")
[ "$got" = 1934 ] || fail "picoroute_bucket_id_with_count(3000, 1) = '$got', expected 1934 (verified against Picodata)"
got=$(psql_scratch -d postgres -c "SELECT source, generation FROM picoroute_status")
[ "$got" = "push|0" ] || fail "picoroute_status says '$got', expected 'push|0'"
ok "CREATE EXTENSION picoroute ($EXTVERSION) from the package: bucket ids and the worker's status answer"

path=$(psql_scratch -d postgres -c "SELECT path FROM pg_extension_update_paths('picoroute')
                                    WHERE source = '0.1' AND target = '$EXTVERSION'")
[ -n "$path" ] || fail "the installed files have no update path from 0.1 to $EXTVERSION"
psql_scratch -d postgres -c "CREATE DATABASE from_01"
psql_scratch -d from_01 -c "CREATE EXTENSION picoroute VERSION '0.1'" -c "ALTER EXTENSION picoroute UPDATE"
got=$(psql_scratch -d from_01 -c "SELECT extversion FROM pg_extension WHERE extname = 'picoroute'")
[ "$got" = "$EXTVERSION" ] || fail "ALTER EXTENSION picoroute UPDATE reached '$got', expected '$EXTVERSION'"
count() { psql_scratch -d "$1" -c "SELECT count(*) FROM pg_depend WHERE deptype = 'e' AND refobjid =
                                   (SELECT oid FROM pg_extension WHERE extname = 'picoroute')"; }
[ "$(count from_01)" = "$(count postgres)" ] || fail "updated: $(count from_01) members, fresh: $(count postgres)"
ok "update path 0.1 -> $EXTVERSION ($path) in the installed files: ALTER EXTENSION picoroute UPDATE reaches $EXTVERSION with the same $(count postgres) members"

runuser -u "$RUN_USER" -- "$BINDIR/pg_ctl" -D "$T/pg/data" -m fast stop >/dev/null

# The pg_regress suites on the package's files (their temporary instance reads the extension from
# the system directories, where the package put it); among them `upgrade`: 0.1 updated to the
# current version has the same catalog as a fresh installation.
if [ "${PICOROUTE_PACKAGE_REGRESS:-yes}" = no ]; then
    echo "# pg_regress suites skipped here (PICOROUTE_PACKAGE_REGRESS=no): the caller runs them"
else
    mkdir "$T/regress"
    tar -C "$ROOT" --exclude=./build --exclude=./.git --exclude='*.o' --exclude='*.so' -cf - . | tar -C "$T/regress" -xf -
    chown -R "$RUN_USER" "$T/regress"
    if ! runuser -u "$RUN_USER" -- make -s -C "$T/regress" installcheck >"$T/regress.log" 2>&1; then
        cat "$T/regress.log"
        head -200 "$T/regress/regression.diffs" 2>/dev/null || true
        fail "pg_regress suites on the installed package"
    fi
    ok "pg_regress suites on the installed package: $(grep -oE 'All [0-9]+ tests passed' "$T/regress.log")"
fi

# 5. Remove.
dpkg --purge "$PKG" >/dev/null
installed=no
[ ! -e "$(pg_config --pkglibdir)/picoroute.so" ] || fail "dpkg --purge left picoroute.so behind"
ok "$PKG purged"
echo "package test passed in $(($(date +%s) - start)) s"
