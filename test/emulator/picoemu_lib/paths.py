"""Where the emulator's files are, relative to this package (test/emulator/picoemu_lib)."""

import os

PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__))
EMULATOR_DIR = os.path.dirname(PACKAGE_DIR)  # test/emulator
ROOT = os.path.dirname(os.path.dirname(EMULATOR_DIR))  # the project
SQL_DIR = os.path.join(EMULATOR_DIR, "sql")  # the SQL installed into the servers (sqlgen.text)
PRIVATE_PGPROTO_C = os.path.join(EMULATOR_DIR, "private_pgproto.c")  # up --private-pgproto (cluster.private_pgproto)
PICOEMU = os.path.join(EMULATOR_DIR, "picoemu")  # the command
FRONT_SCRIPT = os.path.join(EMULATOR_DIR, "picoemu-front")  # the process of a front (front.server)
CAPABILITIES_JSON = os.path.join(ROOT, "src", "core", "capabilities.json")  # picoroute's table (caps)
TOOLS_DIR = os.path.join(ROOT, "test", "tools")  # bucket_hash_reference.py (hashing), port_range.py
