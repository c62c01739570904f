-- Citus (docs/scaling.md): on a coordinator whose database has the citus extension, every per-user
-- table is distributed by its user column, all co-located with sessions, so one user's rows are on
-- one shard and each request-path statement is routed to it. On a single server (no citus
-- extension) this file changes nothing.
--
-- Per-user tables, by the column naming their user (the first two are the request path's):
--   sessions, turns, idempotency_keys, gdpr_exports, gdpr_export_parts, job_outbox   user_id
--   gdpr_audit                                                                       subject_user_id
-- Every primary key and unique index of these holds that column, as Citus requires
-- (test/db/schema-distribution.test.ts keeps it so). Foreign keys (turns to sessions, export parts
-- to exports) hold it too, so they stay within a shard.
--
-- access_audit is distributed by tenant_id instead: an erase replaces the user's id in it by a
-- pseudonym (subject_user_id too), and Citus never changes a row's distribution column.
--
-- Cross-user tables become reference tables (a copy on every node): api_keys (a tenant's keys, read
-- by key on each request that presents one) and erasures (the erasure barrier, keyed by a digest of
-- the user id, read inside the statement that stores a turn: a local copy keeps that statement on
-- the turn's shard). Both are small and written rarely. The migration ledger stays local.
--
-- Citus opens its connections to the workers as the statement's current role, so the two roles the
-- service switches into (migration 005) must be able to log in there: LOGIN with no password.
-- pg_hba.conf must let them in only from the cluster's own nodes (docs/scaling.md).
-- A table an operator distributed already (one at a time, ahead of this release: docs/scaling.md)
-- is left as it is.
DO $$
DECLARE
  spec text[];
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
    RETURN;
  END IF;
  ALTER ROLE memorychat_app LOGIN;
  ALTER ROLE memorychat_maintenance LOGIN;

  -- table, distribution column (NULL: a reference table), the table to co-locate with
  FOREACH spec SLICE 1 IN ARRAY ARRAY[
    ['sessions', 'user_id', 'default'],
    ['turns', 'user_id', 'sessions'],
    ['idempotency_keys', 'user_id', 'sessions'],
    ['gdpr_exports', 'user_id', 'sessions'],
    ['gdpr_export_parts', 'user_id', 'sessions'],
    ['job_outbox', 'user_id', 'sessions'],
    ['gdpr_audit', 'subject_user_id', 'sessions'],
    ['access_audit', 'tenant_id', 'none'],
    ['api_keys', NULL, NULL],
    ['erasures', NULL, NULL]
  ] LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = spec[1]::regclass);
    -- Citus copies a table's rows into its shards with COPY, which row-level security refuses; the
    -- owner (this login) reads past the policies while the table is not FORCEd, for this transaction.
    EXECUTE format('ALTER TABLE %I NO FORCE ROW LEVEL SECURITY', spec[1]);
    IF spec[2] IS NULL THEN
      PERFORM create_reference_table(spec[1]);
    ELSE
      PERFORM create_distributed_table(spec[1], spec[2], colocate_with => spec[3]);
    END IF;
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', spec[1]);
  END LOOP;
END
$$;
