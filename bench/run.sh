#!/bin/sh
# One command for the benchmarks: bench/lookup_bench.py, bench/peers_bench.py,
# bench/scan_memory.py, bench/upper_bench.py, bench/join_bench.py, bench/oltp_bench.py and
# bench/tpcb_bench.py, bench/stats_bench.py (and, in the full run, the system calls of
# bench/node_profile.py --syscalls), in that order, and one report with all of them: first the verdict of every
# target (the benches append their rows to one file), then the date, the core count, the machine's
# load before and after, the PostgreSQL version and each bench's section.
#
#   bench/run.sh                 full run (about 18 minutes on 2 cores; each bench's duration is in the report), writes bench/RESULTS.md
#   bench/run.sh --quick         smoke run (about 4 minutes); prints the report and writes
#                                it only when --out is given (its figures are not meaningful)
#   bench/run.sh --out FILE      write the report to FILE instead
#
# Run as root (the servers then run as the postgres user) or as the postgres user, after
# `make && make install`. Everything listens on 127.0.0.1; every server is stopped on exit.
set -eu
cd "$(dirname "$0")/.."

quick=""
out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) quick=1 ;;
        --out) [ $# -ge 2 ] || { echo "bench/run.sh: --out needs a file" >&2; exit 2; }
               out="$2"; shift ;;
        *) echo "usage: bench/run.sh [--quick] [--out FILE]" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$out" ] || [ -n "$quick" ] || out=bench/RESULTS.md

tmp=$(mktemp -d /tmp/picoroute-run.XXXXXX)
child=""
cleanup() { rm -rf "$tmp"; }
stop() {
    # Let the running benchmark stop its servers (it handles SIGTERM), then leave.
    [ -n "$child" ] && kill -TERM "$child" 2>/dev/null && wait "$child" 2>/dev/null
    cleanup
    exit 143
}
trap cleanup EXIT
trap stop INT TERM HUP

# Runs a benchmark in the background and waits for it, so that a signal reaches it.
# Each one's duration goes into the report.
run_bench() {
    t=$(date +%s)
    "$@" &
    child=$!
    wait "$child"
    child=""
    echo "| $2 | $(( $(date +%s) - t )) s |" >> "$tmp/durations.md"
}

started=$(date -u '+%Y-%m-%d %H:%M UTC')
t0=$(date +%s)
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
v="$tmp/verdicts.jsonl"
: > "$v"
if [ -n "$quick" ]; then
    run_bench python3 bench/lookup_bench.py --runs 1 --calls 20000 \
        --out "$tmp/lookup.md"
    run_bench python3 bench/peers_bench.py --quick --out "$tmp/peers.md" --verdicts "$v"
    run_bench python3 bench/scan_memory.py --quick --out "$tmp/scan_memory.md"
    run_bench python3 bench/upper_bench.py --quick --out "$tmp/upper.md" --verdicts "$v"
    run_bench python3 bench/join_bench.py --quick --out "$tmp/join.md"
    run_bench python3 bench/oltp_bench.py --quick --out "$tmp/oltp.md" --verdicts "$v"
    run_bench python3 bench/tpcb_bench.py --quick --out "$tmp/tpcb.md"
    run_bench python3 bench/stats_bench.py --quick --out "$tmp/stats.md" --verdicts "$v"
else
    run_bench python3 bench/lookup_bench.py --out "$tmp/lookup.md"
    run_bench python3 bench/peers_bench.py --seconds 5 --seconds1 3 --insert-tx 1500 --out "$tmp/peers.md" --verdicts "$v"
    run_bench python3 bench/scan_memory.py --out "$tmp/scan_memory.md"
    run_bench python3 bench/upper_bench.py --runs 4 --out "$tmp/upper.md" --verdicts "$v"
    run_bench python3 bench/join_bench.py --runs 4 --out "$tmp/join.md"
    run_bench python3 bench/oltp_bench.py --runs 3 --seconds 12 --out "$tmp/oltp.md" --verdicts "$v"
    run_bench python3 bench/tpcb_bench.py --runs 2 --out "$tmp/tpcb.md"
    run_bench python3 bench/stats_bench.py --runs 7 --seconds 6 --out "$tmp/stats.md" --verdicts "$v"
    # The node backend's system calls per point statement (its kernel time, which the CPU
    # verdict includes and instructions do not show).
    run_bench python3 bench/node_profile.py --syscalls --statements 1000 \
        --cases select_generic,select_custom,insert,update,plproxy,pg_fdw --out "$tmp/syscalls.md"
fi

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
if [ -n "$(git status --porcelain -- src 2>/dev/null)" ]; then commit="$commit + uncommitted changes in src/"; fi
{
    echo "# picoroute benchmark results"
    echo
    if [ -n "$quick" ]; then
        echo "**Smoke run (\`bench/run.sh --quick\`): one short run per variant, figures not meaningful.**"
        echo
    fi
    echo "- Date: $started"
    echo "- Machine: $(nproc) cores ($cpu), $(uname -sr)"
    echo "- PostgreSQL: $("$(pg_config --bindir)/postgres" --version)"
    echo "- picoroute: $commit"
    echo "- Command: \`bench/run.sh${quick:+ --quick}\`, $(( ($(date +%s) - t0) / 60 )) min $(( ($(date +%s) - t0) % 60 )) s"
    echo "- Load average (1, 5, 15 min) before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg)" \
         "(the figures mean something only on an idle machine)"
    echo
    echo "| bench | duration |"
    echo "|---|---|"
    cat "$tmp/durations.md"
    echo
    echo "## Verdicts"
    echo
    echo "Every target, from the sections below (the same figures, with their configuration)."
    echo
    echo "| measure | value | target | verdict |"
    echo "|---|---|---|---|"
    python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m, value, target, verdict = json.loads(line)
    print("| %s | %.2f | %s | %s |" % (m, value, target, verdict))' "$v"
    echo
    cat "$tmp/peers.md"
    echo
    if [ -z "$quick" ]; then
        cat "$tmp/syscalls.md"
        echo
    fi
    if [ -z "$quick" ] && [ -f bench/peers_notes.md ]; then
        cat bench/peers_notes.md
        echo
    fi
    cat "$tmp/scan_memory.md"
    echo
    cat "$tmp/upper.md"
    echo
    cat "$tmp/join.md"
    echo
    cat "$tmp/oltp.md"
    echo
    cat "$tmp/tpcb.md"
    echo
    cat "$tmp/stats.md"
    echo
    cat "$tmp/lookup.md"
} > "$tmp/RESULTS.md"

if [ -n "$out" ]; then
    cp "$tmp/RESULTS.md" "$out"
    echo "bench/run.sh: report written to $out"
else
    cat "$tmp/RESULTS.md"
fi
