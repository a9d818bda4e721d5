#!/usr/bin/env bash
# Builds the Debian package postgresql-15-picoroute (Debian 12) the Debian way: debian/ with
# pg_buildext (dh --with pgxs_loop), `dpkg-buildpackage -us -uc -b`, then lintian.
#
#   scripts/build-deb.sh [OUTPUT_DIR]
#
# The package is built from the source distribution (`make dist`: git archive of the committed
# HEAD; from a tree without git, a copy of the tree), unpacked under OUTPUT_DIR, so the checkout
# is left untouched. OUTPUT_DIR (default: ../picoroute-deb next to the checkout) then holds the
# .deb, the .changes/.buildinfo, the build log and lintian.log. Install the package with
#   apt-get install ./postgresql-15-picoroute_*.deb     (or dpkg -i)
# Build dependencies: scripts/install-deps.sh (debhelper, postgresql-server-dev-all, lintian, ...).
# Environment: JOBS (parallel make jobs, default 2).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${1:-$ROOT/../picoroute-deb}
JOBS=${JOBS:-2}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
case "$OUT/" in "$ROOT"/*) echo "build-deb: OUTPUT_DIR must be outside the source tree" >&2; exit 1 ;; esac

VERSION=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' "$ROOT/META.json")
SRC="$OUT/picoroute-$VERSION"
rm -rf "$SRC" "$OUT"/postgresql-*-picoroute*_"$VERSION"-* "$OUT"/picoroute_"$VERSION"-*

if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
    make -s -C "$ROOT" dist DIST_DIR="$OUT" >/dev/null
    tar -C "$OUT" -xzf "$OUT/picoroute-$VERSION.tar.gz"
else
    echo "build-deb: no git checkout, packaging a copy of the tree" >&2
    mkdir -p "$SRC"
    tar -C "$ROOT" --exclude=./build --exclude=./.git -cf - . | tar -C "$SRC" -xf -
    make -s -C "$SRC" clean >/dev/null
fi

echo "build-deb: building in $SRC"
(cd "$SRC" && dpkg-buildpackage -us -uc -b -j"$JOBS") >"$OUT/build.log" 2>&1 || {
    tail -60 "$OUT/build.log"
    echo "build-deb: dpkg-buildpackage failed, full log in $OUT/build.log" >&2
    exit 1
}
rm -rf "$SRC"

CHANGES=$(ls "$OUT"/picoroute_"$VERSION"-*_"$(dpkg --print-architecture)".changes)
DEB=$(ls "$OUT"/postgresql-*-picoroute_"$VERSION"-*.deb)
echo "build-deb: $DEB"
dpkg-deb --info "$DEB" | sed -n 's/^ \(Package\|Version\|Depends\):/  \1:/p'

# lintian: errors fail the build; every remaining warning or info tag is explained in
# debian/lintian-notes (and the README's "Installing" section).
# Lintian advises against running as root: as root, it runs as nobody.
as_lintian() { if [ "$(id -u)" -eq 0 ]; then runuser -u nobody -- env HOME=/tmp "$@"; else "$@"; fi; }
as_lintian lintian --info --display-info --fail-on error "$CHANGES" >"$OUT/lintian.log" 2>&1 || {
    cat "$OUT/lintian.log"
    echo "build-deb: lintian reports errors" >&2
    exit 1
}
unexplained=$(grep -E '^[WI]: ' "$OUT/lintian.log" | awk '{print $3}' | sort -u | while read -r tag; do
    grep -q "^$tag:" "$ROOT/debian/lintian-notes" || echo "$tag"
done)
if [ -n "$unexplained" ]; then
    cat "$OUT/lintian.log"
    echo "build-deb: lintian tags not explained in debian/lintian-notes: $unexplained" >&2
    exit 1
fi
echo "build-deb: lintian: $(grep -cE '^[EWI]: ' "$OUT/lintian.log" || true) tags, none unexplained (see $OUT/lintian.log)"
