"""The picoemu command: main (arguments, locking, exit codes), commands (one handler per
sub-command), status (status, conninfo, audit)."""
