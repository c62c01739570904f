-- The retrieval's rows leave the worker as json text, not jsonb: memorychat_on_user_shard (024, 026)
-- returns each row of the statement it runs as to_json, where it built jsonb. The service's statement
-- now builds its rows with to_json too (memory-retrieval.ts); wrapped in to_jsonb, each would be parsed
-- back into jsonb on the worker, and the whole result parsed again on the coordinator (jsonb_in) before
-- it is printed for the client (jsonb_out). A json value is passed on as the text it is, checked by a
-- scan that builds nothing: on a 12 KB retrieval result 18 against 81 microseconds per pass through
-- the coordinator (docs/performance.md).
--
-- A function's result type cannot be replaced in place, so it is dropped and created again, and
-- distributed again by its user argument. Its prepared statements are named with a suffix of their own
-- ('_json'): a worker connection that prepared a statement under 026's wrapper (jsonb) keeps it, and
-- this one never executes it into its json result.
DROP FUNCTION memorychat_on_user_shard(text, text, text, text, text, text, text[], integer, vector);

CREATE FUNCTION memorychat_on_user_shard(
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
  local_name := p_name || '_' || shard || '_json';
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
    PERFORM memorychat_prepare_once(local_name, format(E'SELECT to_json(q) FROM (%s\n) q', shard_statement));
  END IF;
  RETURN QUERY EXECUTE memorychat_prepared_execution(local_name, NULL, p_params, p_vector_at, p_vector);
END
$function$;

DO $migration$
BEGIN
  IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
    PERFORM create_distributed_function('memorychat_on_user_shard(text,text,text,text,text,text,text[],integer,vector)',
                                        'p_user_id', colocate_with => 'sessions');
  END IF;
END
$migration$;
