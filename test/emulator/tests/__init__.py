"""The emulator's tests: unit tests of its pure logic (test_*.py, no server: `python3 -m unittest
discover -s tests -t .` from test/emulator), the self-test on real clusters (selftest/, run by
../selftest.sh), the routing-by-key comparison on one server (key_route.py) and shared helpers
(support/)."""
