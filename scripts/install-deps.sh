#!/usr/bin/env bash
# Installs what picoroute needs to build, package, test and demo on Debian 12 (run as root).
# Does nothing when every package is already there.
set -euo pipefail

PACKAGES=(
    build-essential cmake pkg-config git
    postgresql-15 postgresql-server-dev-15 postgresql-client-15 libpq-dev
    postgresql-15-plproxy
    nlohmann-json3-dev libgtest-dev libgmock-dev googletest libbenchmark-dev
    clang-format libipc-run-perl perl python3 pyflakes3 mypy python3-psycopg
    debhelper dpkg-dev postgresql-server-dev-all lintian
    sqlsmith sysbench strace
    python3-psycopg libpostgresql-jdbc-java default-jdk-headless
)

missing=()
for pkg in "${PACKAGES[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$pkg")
    fi
done

if [ "${#missing[@]}" -eq 0 ]; then
    echo "install-deps: all ${#PACKAGES[@]} packages present"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages: ${missing[*]}" >&2
    echo "install-deps: run as root (or install them) and try again" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The Debian package creates a default cluster; picoroute's tests and demo start their own servers.
if command -v pg_lsclusters >/dev/null && pg_lsclusters -h 2>/dev/null | grep -q '^15 main'; then
    pg_ctlcluster 15 main stop 2>/dev/null || true
fi
