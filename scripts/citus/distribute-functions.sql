-- Moving a populated single-server database to Citus (docs/scaling.md#moving-to-citus), after
-- migration 016's file: memorychat's functions were created by migrations 011 and 014 before the
-- database had the citus extension, so Citus never created them on the workers, where the statements
-- routed to a shard call them (the erasure barrier when a turn is stored, the nearest-turns search).
-- A cluster migrated from empty has them there already: Citus sends a CREATE FUNCTION on to every
-- node. Running this again changes nothing.
DO $$
DECLARE
  fn regprocedure;
BEGIN
  FOR fn IN
    SELECT p.oid::regprocedure FROM pg_proc p
    WHERE p.pronamespace = current_schema()::regnamespace
      AND p.proname IN ('memorychat_user_digest', 'memorychat_erase_barrier')
       OR p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'nearest\_turns\_%'
  LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM pg_dist_object WHERE classid = 'pg_proc'::regclass AND objid = fn);
    PERFORM create_distributed_function(fn);
  END LOOP;
END
$$;
