-- One hop per request on Citus (docs/scaling.md#one-hop-per-statement): a statement that reads one
-- user's rows is sent as a call of this function, distributed by its user argument and co-located with
-- sessions, so the coordinator only routes the call (Citus's function call delegation) and the worker
-- that holds the user's shards runs the statement there, on the shards themselves, as a prepared
-- statement of its connection: planned once per connection and shard, not twice per call (the
-- coordinator's plan and then the worker's, of a statement sent as text). On a single server the
-- service sends its statements as they are and never calls this.
--
-- It grants nothing: SECURITY INVOKER, it runs the caller's statement as the caller, whose role Citus
-- connects to the worker with (memorychat_app), under the same identity settings the caller's scope
-- sets, which the row-level security policies of the shards read as they do the tables'. The statement
-- names the tables as a statement on the coordinator would; those of the user's co-location group and
-- the reference tables are named by the user's shards instead (as Citus's own shard queries are)
-- where a table is named: after FROM, JOIN, INTO or UPDATE, and before a column (`sessions.col`); a
-- column alias of the same name stays. A table named otherwise stays too, planned by Citus on the
-- worker as on the coordinator: slower, not wider. The function refuses to run where the user's
-- shards are not (a call not delegated to their worker): the scope's settings reach only the node that
-- runs it, so a statement Citus sent on from there would find no rows. The service calls it only once it is distributed by its user argument (016 and this
-- file on an empty database; scripts/citus/distribute-functions.sql for a database moved to Citus).
--
-- The statement's parameters come as text (p_params, in the form the client sends them), but for one
-- vector (p_vector, its place p_vector_at, 0 for none), sent in binary by the client; each is quoted
-- as a literal of the prepared statement's EXECUTE, whose parameter types Postgres infers from the
-- statement as it does for a client's Parse. Rows come back as jsonb objects of the statement's columns.
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
) RETURNS SETOF jsonb
LANGUAGE plpgsql
AS $function$
DECLARE
  shard bigint;
  local_name text;
  shard_statement text := p_statement;
  args text;
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
  IF NOT EXISTS (SELECT 1 FROM pg_prepared_statements WHERE name = local_name) THEN
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
    EXECUTE format(E'PREPARE %I AS SELECT to_jsonb(q) FROM (%s\n) q', local_name, shard_statement);
  END IF;
  SELECT string_agg(CASE WHEN i = p_vector_at THEN quote_literal(p_vector::text) ELSE quote_nullable(p_params[i]) END, ', ' ORDER BY i)
    INTO args FROM generate_subscripts(p_params, 1) i;
  RETURN QUERY EXECUTE format('EXECUTE %I', local_name) || coalesce('(' || args || ')', '');
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
