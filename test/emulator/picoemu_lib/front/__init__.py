"""The Picodata front of one emulated instance: a PostgreSQL wire-protocol proxy (asyncio, standard
library only) listening on the instance's advertised pgproto port and forwarding to its PostgreSQL
server on a private port. It judges every statement as Picodata would (dialect), honours and strips
OPTION (...) and Picodata-style startup options, enforces sql_motion_row_max, applies Picodata's
parameter rules at Bind, answers BEGIN/COMMIT/ROLLBACK/SET itself (autocommit only), runs TRUNCATE
TABLE on every replicaset (sql/truncate.sql) and records every statement it refuses in the audit file
of the state directory.

Modules, by concern: server (the process: listening, main), session (one client connection: the
startup, the client's messages), link (the two connections and the ordered queue of answers: the
wire proxying), entry (one expected answer), options (startup options and the settings a statement
runs with), judge (statement judging: dialect, limits, forward, leader reads, DNF limit), prepared
(statements and portals), runner (running a statement, its limits, EXPLAIN), inject (the front's own
statements on the server), rerun (running a write again after a conflict or a move), writeparts
(a write of several replicasets, one part each), stall (a dead master's stall), texts (Picodata's
error texts), rewrite (the text sent for a statement), wire (message encoding), settings (the
cluster's settings, the audit), log.
"""
