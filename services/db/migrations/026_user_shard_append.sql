-- One hop per append on Citus (docs/scaling.md#one-hop-per-statement): the append (the session row,
-- then the turn, and for a user past the exact-search threshold the batch marked for the approximate
-- index) goes as one call of this function, distributed by its user argument and co-located with
-- sessions, which Citus delegates to the worker holding the user's shards, as 024 does for the
-- retrieval. The service sends it after the erasure barrier in the same round trip, on the coordinator
-- (where the erase job takes the other side of the barrier's lock); the barrier's lock is held until
-- the coordinator's transaction ends, after the delegated call has committed on the worker.
--
-- Unlike 024 the statements name the distributed tables, not the shards: Citus plans each on the worker
-- (a router plan of the local shard) and so takes the shard's metadata lock before it writes, the lock a
-- shard move takes exclusively on every node before its switch-over (shard_transfer.c,
-- BlockWritesToShardList; citus_custom_scan.c, AcquireMetadataLocks). A write named by the shard would
-- bypass it and could land on a placement the move is about to drop. Once the first statement holds the
-- lock, the function checks that the user's shards are still on this node: a call that Citus delegated
-- just before a move's switch-over would otherwise be routed on to the new worker, without the identity
-- set here. It then refuses with SQLSTATE ME002, rolling everything back; the service stores the turn
-- through the coordinator instead.
--
-- It grants nothing: SECURITY INVOKER, as 024: the statements run as the caller's role (memorychat_app,
-- which Citus connects to the worker as) under the identity the caller's scope sets, set here from the
-- arguments, and the shards' row-level security policies. Each statement is prepared on the worker
-- connection on its first call (by its name, made from its text by the service) and executed with its
-- parameters quoted as literals (p_params in the form the client sends them; the turn's vector apart, in
-- binary). The turn statement's first parameter is the turn number: the session row's new
-- last_turn_number. Returns the session row as jsonb (with last_turn_number) and the turn's number, or
-- NULL when the session statement touched no row (not the caller's live session).
--
-- It also replaces 024's retrieval call, to ask whether a statement is prepared as the append does.

-- Whether a statement is prepared on this connection is remembered in a setting of the session
-- (memorychat.prepared_<name>), asked of pg_prepared_statements only while it is not set: that view
-- copies every prepared statement of the connection, with its text, on each read, about 0.1 ms per
-- statement here, and a worker connection holds one of the retrieval's per shard and shape
-- (docs/scaling.md#one-hop-per-statement). A setting made in a transaction that then fails is
-- undone, the statement stays prepared: the view is asked again. DISCARD ALL drops both.
CREATE FUNCTION memorychat_prepare_once(p_name text, p_statement text) RETURNS boolean
LANGUAGE plpgsql
AS $function$
BEGIN
  IF current_setting('memorychat.prepared_' || p_name, true) = 'on' THEN
    RETURN false;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_prepared_statements WHERE name = p_name) THEN
    EXECUTE format('PREPARE %I AS %s', p_name, p_statement);
  END IF;
  PERFORM set_config('memorychat.prepared_' || p_name, 'on', false);
  RETURN true;
END
$function$;

-- The EXECUTE of a statement prepared on this connection by its name (prepared first, from
-- p_statement, if it is not), its parameters quoted as literals: p_params in the form the client
-- sends them, the one vector (p_vector at p_vector_at, 0 for none) apart.
CREATE FUNCTION memorychat_prepared_execution(p_name text, p_statement text, p_params text[], p_vector_at integer, p_vector vector)
RETURNS text
LANGUAGE plpgsql
AS $function$
DECLARE
  args text;
BEGIN
  PERFORM memorychat_prepare_once(p_name, p_statement);
  SELECT string_agg(CASE WHEN i = p_vector_at THEN quote_literal(p_vector::text) ELSE quote_nullable(p_params[i]) END, ', ' ORDER BY i)
    INTO args FROM generate_subscripts(p_params, 1) i;
  RETURN format('EXECUTE %I', p_name) || coalesce('(' || args || ')', '');
END
$function$;

CREATE FUNCTION memorychat_append_on_user_shard(
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
  IF NOT EXISTS (SELECT 1 FROM pg_dist_placement p, pg_dist_local_group l WHERE p.shardid = shard AND p.groupid = l.groupid) THEN
    RAISE EXCEPTION 'memorychat_append_on_user_shard: the shards of user % are not on this node', p_user_id
      USING ERRCODE = 'ME002',
            HINT = 'Call it on a Citus coordinator, once it is distributed by p_user_id (scripts/citus/distribute-functions.sql).';
  END IF;
  EXECUTE memorychat_prepared_execution(p_session_name, p_session_statement, p_session_params, 0, NULL) INTO session_row;
  GET DIAGNOSTICS touched = ROW_COUNT;
  -- The shard's metadata lock is held from here to the end of the transaction: a move waits for it.
  IF NOT EXISTS (SELECT 1 FROM pg_dist_placement p, pg_dist_local_group l WHERE p.shardid = shard AND p.groupid = l.groupid) THEN
    RAISE EXCEPTION 'memorychat_append_on_user_shard: the shards of user % moved off this node', p_user_id USING ERRCODE = 'ME002';
  END IF;
  IF touched = 0 THEN
    RETURN NULL;
  END IF;
  session_json := to_jsonb(session_row);
  p_turn_params[1] := session_json->>'last_turn_number';
  EXECUTE memorychat_prepared_execution(p_turn_name, p_turn_statement, p_turn_params, p_vector_at, p_vector) INTO turn_number;
  IF p_mark_name IS NOT NULL THEN
    EXECUTE memorychat_prepared_execution(p_mark_name, p_mark_statement, p_mark_params, 0, NULL);
  END IF;
  RETURN jsonb_build_object('session', session_json, 'turn_number', turn_number);
END
$function$;

-- Migration 024's call, asking pg_prepared_statements only until the statement is prepared (above).
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
) RETURNS SETOF jsonb
LANGUAGE plpgsql
AS $function$
DECLARE
  shard bigint;
  local_name text;
  shard_statement text := p_statement;
  tbl record;
  shard_name text;
BEGIN
  PERFORM set_config('memorychat.tenant_id', p_tenant_id, true), set_config('memorychat.user_id', p_user_id, true),
          set_config('memorychat.tenant_admin', p_tenant_admin, true), set_config('jit', 'off', true),
          set_config('plan_cache_mode', coalesce(p_plan_cache_mode, current_setting('plan_cache_mode')), true);
  shard := get_shard_id_for_distribution_column('sessions', p_user_id);
  IF to_regclass(format('%I', 'sessions_' || shard)) IS NULL THEN
    RAISE EXCEPTION 'memorychat_on_user_shard: the shards of user % are not on this node', p_user_id
      USING HINT = 'Call it on a Citus coordinator, once it is distributed by p_user_id (scripts/citus/distribute-functions.sql).';
  END IF;
  local_name := p_name || '_' || shard;
  IF current_setting('memorychat.prepared_' || local_name, true) IS DISTINCT FROM 'on' THEN
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
    -- A newline before the closing parenthesis: the statement may end in a comment.
    PERFORM memorychat_prepare_once(local_name, format(E'SELECT to_jsonb(q) FROM (%s\n) q', shard_statement));
  END IF;
  RETURN QUERY EXECUTE memorychat_prepared_execution(local_name, NULL, p_params, p_vector_at, p_vector);
END
$function$;

DO $migration$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
    PERFORM create_distributed_function('memorychat_prepare_once(text,text)');
    PERFORM create_distributed_function('memorychat_prepared_execution(text,text,text[],integer,vector)');
    PERFORM create_distributed_function('memorychat_append_on_user_shard(text,text,text,text,text,text[],text,text,text[],integer,vector,text,text,text[])',
                                        'p_user_id', colocate_with => 'sessions');
  END IF;
END
$migration$;
