#!/bin/sh
# Self-test of the Picodata emulator: see selftest.py. Ends with `N passed, M failed`.
exec python3 "$(dirname "$0")/selftest.py" "$@"
