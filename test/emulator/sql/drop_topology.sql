-- Before the topology-dependent objects are created again: locks the views of the user tables,
-- then drops the foreign servers (and the foreign tables) and those views.
--
-- The views are locked together, each wait bounded by 200 ms: a statement of the load that holds
-- one view and waits for another that this transaction holds could otherwise deadlock with it, and
-- the statement PostgreSQL cancels may be a client's. On a timeout every view taken is let go
-- (the subtransaction's abort) and the locks are asked again in the same order; 200 ms is well
-- under deadlock_timeout (1 s), so no deadlock is ever detected. A waiting request queues ahead of
-- new statements, and writes held by a move (check_transfer) give up for it, so it gets through.
--
-- LOCK TABLE on a view also locks every relation the view names: its own storage and foreign
-- tables, which no other view names. No relation may be shared by two views (the guard is read
-- through _picoemu.guard_buckets() for that reason): this transaction would hold it after the
-- first view while a statement holding a later view waits for it, and every try would time out.

DO $d$ DECLARE s record; views text; tries int := 0; saved text := current_setting('lock_timeout'); BEGIN
  SELECT string_agg(format('public.%I', c.relname), ', ' ORDER BY c.relname) INTO views
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_trigger tg ON tg.tgrelid = c.oid AND tg.tgname = 'picoemu_route'
   WHERE n.nspname = 'public' AND c.relkind = 'v';
  PERFORM set_config('lock_timeout', '200ms', true);
  WHILE views IS NOT NULL LOOP
    BEGIN
      EXECUTE 'LOCK TABLE ' || views || ' IN ACCESS EXCLUSIVE MODE';
      EXIT;
    EXCEPTION WHEN lock_not_available THEN
      tries := tries + 1;
      IF tries >= 300 THEN RAISE; END IF;
      PERFORM pg_sleep(0.01);
    END;
  END LOOP;
  PERFORM set_config('lock_timeout', saved, true);
  FOR s IN SELECT srvname FROM pg_foreign_server WHERE srvname LIKE 'picoemu\_%' LOOP
    EXECUTE format('DROP SERVER %I CASCADE', s.srvname);
  END LOOP;
  FOR s IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_trigger tg ON tg.tgrelid = c.oid AND tg.tgname = 'picoemu_route'
           WHERE n.nspname = 'public' AND c.relkind = 'v' LOOP
    EXECUTE format('DROP VIEW public.%I CASCADE', s.relname);
  END LOOP;
END $d$;
