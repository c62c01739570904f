-- The delegated append (026) runs its statements on the user's shards by name, as the retrieval's call
-- does (024), instead of naming the distributed tables (docs/scaling.md#one-hop-per-statement).
--
-- Named by the distributed tables, each statement went through Citus's planner on the worker on every
-- call: a fast-path router plan with deferred pruning, whose local shard plan Citus 13.2.1 and 13.2.2
-- never find in their cache (local_plan_cache.c: the lookup wants one task in the generic plan's task
-- list, which deferred pruning leaves empty), so each call deparsed, parsed and planned the shard query
-- again and added the new plan to the prepared statement's cached plan: a worker connection grew by
-- about 0.2 MB per append, without bound, and the worker spent about 0.7 ms per append planning.
--
-- What naming the tables gave, the lock a shard move takes exclusively before its switch-over
-- (shard_transfer.c, BlockWritesToShardList), is now taken explicitly, in share mode as Citus takes it
-- before a write it routes (AcquireMetadataLocks): by memorychat_lock_user_shards, before any statement.
-- Citus's lock_shard_metadata lets only the tables' owner take it, so that function runs as its owner
-- (SECURITY DEFINER) and does nothing else: it names the user's shard group itself and takes only the
-- share lock, which any write of the caller's through the coordinator takes as well.

-- The share lock on the metadata of the shard group holding p_user_id's rows, held to the end of the
-- transaction: a shard move or split of that group waits for it, and it waits for theirs.
CREATE FUNCTION memorychat_lock_user_shards(p_user_id text) RETURNS void
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path FROM CURRENT
AS $function$
BEGIN
  -- 5: ShareLock.
  PERFORM lock_shard_metadata(5, ARRAY[get_shard_id_for_distribution_column('sessions', p_user_id)]);
END
$function$;
REVOKE ALL ON FUNCTION memorychat_lock_user_shards(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memorychat_lock_user_shards(text) TO memorychat_app;

-- p_statement with the tables of the user's co-location group and the reference tables named by the
-- user's shards, where it names a table (after FROM, JOIN, INTO or UPDATE, or before a column): what
-- 024's retrieval did in its own body. A reference table's shard is this node's whole copy, right to
-- read; a write to it would reach this copy only, so the statements sent through here write only the
-- tables of the user's co-location group (the append's: sessions and turns).
CREATE FUNCTION memorychat_user_shard_statement(p_user_id text, p_statement text) RETURNS text
LANGUAGE plpgsql
AS $function$
DECLARE
  shard_statement text := p_statement;
  tbl record;
  shard_name text;
BEGIN
  FOR tbl IN
    SELECT c.relname, p.partmethod FROM pg_dist_partition p JOIN pg_class c ON c.oid = p.logicalrelid
    WHERE c.relnamespace = current_schema()::regnamespace
      AND (p.partmethod = 'n' OR p.colocationid = (SELECT s.colocationid FROM pg_dist_partition s WHERE s.logicalrelid = 'sessions'::regclass))
  LOOP
    shard_name := tbl.relname || '_' ||
      CASE WHEN tbl.partmethod = 'n' THEN (SELECT min(s.shardid) FROM pg_dist_shard s WHERE s.logicalrelid = tbl.relname::regclass)
           ELSE get_shard_id_for_distribution_column(tbl.relname::regclass, p_user_id) END;
    shard_statement := regexp_replace(shard_statement, '(\m(from|join|into|update)\s+)' || tbl.relname || '\M', '\1' || shard_name, 'gi');
    shard_statement := regexp_replace(shard_statement, '\m' || tbl.relname || '\.', shard_name || '.', 'g');
  END LOOP;
  RETURN shard_statement;
END
$function$;

-- The EXECUTE of p_statement on the user's shards (prepared on this connection, per shard, at its first
-- call), as memorychat_prepared_execution builds it.
CREATE FUNCTION memorychat_user_shard_execution(p_user_id text, p_shard bigint, p_name text, p_statement text, p_params text[], p_vector_at integer, p_vector vector)
RETURNS text
LANGUAGE plpgsql
AS $function$
DECLARE
  local_name constant text := p_name || '_' || p_shard;
BEGIN
  IF current_setting('memorychat.prepared_' || local_name, true) IS DISTINCT FROM 'on' THEN
    PERFORM memorychat_prepare_once(local_name, memorychat_user_shard_statement(p_user_id, p_statement));
  END IF;
  RETURN memorychat_prepared_execution(local_name, NULL, p_params, p_vector_at, p_vector);
END
$function$;

CREATE OR REPLACE FUNCTION memorychat_append_on_user_shard(
  p_user_id text,
  p_tenant_id text,
  p_tenant_admin text,
  p_session_name text,
  p_session_statement text,
  p_session_params text[],
  p_turn_name text,
  p_turn_statement text,
  p_turn_params text[],
  p_vector_at integer,
  p_vector vector,
  p_mark_name text,
  p_mark_statement text,
  p_mark_params text[]
) RETURNS jsonb
LANGUAGE plpgsql
AS $function$
DECLARE
  shard constant bigint := get_shard_id_for_distribution_column('sessions', p_user_id);
  session_row record;
  touched bigint;
  session_json jsonb;
  turn_number integer;
BEGIN
  PERFORM set_config('memorychat.tenant_id', p_tenant_id, true), set_config('memorychat.user_id', p_user_id, true),
          set_config('memorychat.tenant_admin', p_tenant_admin, true), set_config('jit', 'off', true);
  PERFORM memorychat_lock_user_shards(p_user_id);
  -- Held from here to the end of the transaction: a call that Citus delegated just before a move's
  -- switch-over finds the shards gone from this node, rather than writing to a placement about to be dropped.
  IF NOT EXISTS (SELECT 1 FROM pg_dist_placement p, pg_dist_local_group l WHERE p.shardid = shard AND p.groupid = l.groupid) THEN
    RAISE EXCEPTION 'memorychat_append_on_user_shard: the shards of user % are not on this node', p_user_id
      USING ERRCODE = 'ME002',
            HINT = 'Call it on a Citus coordinator, once it is distributed by p_user_id (scripts/citus/distribute-functions.sql).';
  END IF;
  EXECUTE memorychat_user_shard_execution(p_user_id, shard, p_session_name, p_session_statement, p_session_params, 0, NULL) INTO session_row;
  GET DIAGNOSTICS touched = ROW_COUNT;
  IF touched = 0 THEN
    RETURN NULL;
  END IF;
  session_json := to_jsonb(session_row);
  p_turn_params[1] := session_json->>'last_turn_number';
  EXECUTE memorychat_user_shard_execution(p_user_id, shard, p_turn_name, p_turn_statement, p_turn_params, p_vector_at, p_vector) INTO turn_number;
  IF p_mark_name IS NOT NULL THEN
    EXECUTE memorychat_user_shard_execution(p_user_id, shard, p_mark_name, p_mark_statement, p_mark_params, 0, NULL);
  END IF;
  RETURN jsonb_build_object('session', session_json, 'turn_number', turn_number);
END
$function$;

-- The retrieval's call (027), its statement prepared through memorychat_user_shard_execution as the
-- append's are. Its rows leave as json: the name says so ('_json'), so that a worker connection that
-- prepared the statement under 026's jsonb wrapper never executes that one into this result.
CREATE OR REPLACE FUNCTION memorychat_on_user_shard(
  p_user_id text,
  p_tenant_id text,
  p_tenant_admin text,
  p_plan_cache_mode text,
  p_name text,
  p_statement text,
  p_params text[],
  p_vector_at integer,
  p_vector vector
) RETURNS SETOF json
LANGUAGE plpgsql
AS $function$
DECLARE
  shard constant bigint := get_shard_id_for_distribution_column('sessions', p_user_id);
BEGIN
  PERFORM set_config('memorychat.tenant_id', p_tenant_id, true), set_config('memorychat.user_id', p_user_id, true),
          set_config('memorychat.tenant_admin', p_tenant_admin, true), set_config('jit', 'off', true),
          set_config('plan_cache_mode', coalesce(p_plan_cache_mode, current_setting('plan_cache_mode')), true);
  IF to_regclass(format('%I', 'sessions_' || shard)) IS NULL THEN
    RAISE EXCEPTION 'memorychat_on_user_shard: the shards of user % are not on this node', p_user_id
      USING HINT = 'Call it on a Citus coordinator, once it is distributed by p_user_id (scripts/citus/distribute-functions.sql).';
  END IF;
  -- A newline before the closing parenthesis: the statement may end in a comment.
  RETURN QUERY EXECUTE memorychat_user_shard_execution(p_user_id, shard, p_name || '_json',
    format(E'SELECT to_json(q) FROM (%s\n) q', p_statement), p_params, p_vector_at, p_vector);
END
$function$;

DO $migration$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
    PERFORM create_distributed_function('memorychat_lock_user_shards(text)');
    PERFORM create_distributed_function('memorychat_user_shard_statement(text,text)');
    PERFORM create_distributed_function('memorychat_user_shard_execution(text,bigint,text,text,text[],integer,vector)');
  END IF;
END
$migration$;
