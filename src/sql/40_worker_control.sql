-- picoroute: control of the background worker (appended to the extension script).

CREATE FUNCTION picoroute_restart_worker()
RETURNS integer
AS 'MODULE_PATHNAME', 'picoroute_restart_worker'
LANGUAGE C STRICT VOLATILE;

COMMENT ON FUNCTION picoroute_restart_worker() IS
'Stops the topology worker (SIGTERM); the postmaster starts it again within 5 seconds and it '
'continues from the map in shared memory. Returns the pid that was signalled. Superusers may also '
'use pg_terminate_backend(worker_pid).';

REVOKE ALL ON FUNCTION picoroute_restart_worker() FROM PUBLIC;
