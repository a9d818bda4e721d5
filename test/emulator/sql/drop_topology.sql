-- Before the topology-dependent objects are created again: locks the views of the user tables
-- (in name order), then drops the foreign servers (and the foreign tables) and those views.

DO $d$ DECLARE s record; BEGIN
  FOR s IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_trigger tg ON tg.tgrelid = c.oid AND tg.tgname = 'picoemu_route'
           WHERE n.nspname = 'public' AND c.relkind = 'v' ORDER BY c.relname LOOP
    EXECUTE format('LOCK TABLE public.%I IN ACCESS EXCLUSIVE MODE', s.relname);
  END LOOP;
  FOR s IN SELECT srvname FROM pg_foreign_server WHERE srvname LIKE 'picoemu\_%' LOOP
    EXECUTE format('DROP SERVER %I CASCADE', s.srvname);
  END LOOP;
  FOR s IN SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            JOIN pg_trigger tg ON tg.tgrelid = c.oid AND tg.tgname = 'picoemu_route'
           WHERE n.nspname = 'public' AND c.relkind = 'v' LOOP
    EXECUTE format('DROP VIEW public.%I CASCADE', s.relname);
  END LOOP;
END $d$;
