"""python3 -m tests.selftest: the self-test (run.py)."""

import sys

from .run import main

sys.exit(main(sys.argv[1:]))
