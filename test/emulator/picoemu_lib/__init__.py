"""picoemu's library: a local Picodata cluster emulated with PostgreSQL 15 servers (see README.md).

Pure logic (no server, unit-tested in tests/): caps (which build can do what), buckets (bucket
arithmetic), hashing (the bucket of a key), dialect (the statements Picodata parses), route (what
Picodata's router reads in a statement), explain (its EXPLAIN), parts (writes run per replicaset),
stmts (prepared-statement rules), sqlgen (the SQL installed into the servers), rows (row values).
With servers: pg (processes, psql), state (state.json), cluster (lifecycle, topology, moving rows),
data (tables and rows), front (the Picodata front of an instance), cli (the picoemu command),
pgwire (a wire-protocol client for the tests and the benchmarks).
"""
