-- Moving a populated single-server database to Citus (docs/scaling.md#moving-to-citus), after
-- migration 016's file: memorychat's functions were created by migrations 011, 014, 024, 026 and 028 before the
-- database had the citus extension, so Citus never created them on the workers, where the statements
-- routed to a shard call them (the erasure barrier when a turn is stored, the nearest-turns search, the
-- delegated calls' helpers),
-- nor made memorychat_on_user_shard's and memorychat_append_on_user_shard's calls go to the worker of the user they name (by its user
-- argument, co-located with sessions: docs/scaling.md#one-hop-per-statement). A cluster migrated from
-- empty has them so already: Citus sends a CREATE FUNCTION on to every node, and 024 distributes the
-- call by its user, and 026 the append's. Running this again changes nothing.
DO $$
DECLARE
  fn regprocedure;
BEGIN
  FOR fn IN
    SELECT p.oid::regprocedure FROM pg_proc p
    WHERE p.pronamespace = current_schema()::regnamespace
      AND p.proname IN ('memorychat_user_digest', 'memorychat_erase_barrier', 'memorychat_prepare_once', 'memorychat_prepared_execution',
                        'memorychat_lock_user_shards', 'memorychat_user_shard_statement', 'memorychat_user_shard_execution')
       OR p.pronamespace = current_schema()::regnamespace AND p.proname LIKE 'nearest\_turns\_%'
  LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM pg_dist_object WHERE classid = 'pg_proc'::regclass AND objid = fn);
    PERFORM create_distributed_function(fn);
  END LOOP;
END
$$;

-- The service sends its retrievals and appends through these functions once they are distributed by
-- their user argument (db/user-shard-call.ts, asked at its first statement): restart it after this file.
DO $$
DECLARE
  fn regprocedure;
BEGIN
  FOREACH fn IN ARRAY ARRAY[
    'memorychat_on_user_shard(text,text,text,text,text,text,text[],integer,vector)',
    'memorychat_append_on_user_shard(text,text,text,text,text,text[],text,text,text[],integer,vector,text,text,text[])'
  ]::regprocedure[] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_dist_object WHERE classid = 'pg_proc'::regclass AND objid = fn AND distribution_argument_index IS NOT NULL) THEN
      PERFORM create_distributed_function(fn, 'p_user_id', colocate_with => 'sessions');
    END IF;
  END LOOP;
END
$$;
