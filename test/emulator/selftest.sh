#!/bin/sh
# Self-test of the Picodata emulator: see tests/selftest/run.py. Ends with `N passed, M failed`.
cd "$(dirname "$0")" && exec python3 -B -m tests.selftest "$@"
