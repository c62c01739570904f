-- Moving a populated single-server database to Citus (docs/scaling.md#moving-to-citus), after
-- migration 016's file: the tables that later migrations made (021's linked identities; 023's
-- verified pairs, the tenants' settings and the users' feedback on answers that used a pair) were
-- never distributed on the single server, and 016's file does not know them, so they stay local,
-- where the service's statements that join them to the distributed tables fail. This distributes
-- them as their migrations do on a cluster migrated from empty: the per-user tables by their user,
-- beside their sessions; pairs and settings as reference tables. As 023 does, the feedback's foreign
-- keys (to its turn and to its pair) are added after the distribution: Citus distributes no table
-- that a local table holds a foreign key to, nor one holding a key to a local table. Where the
-- table-by-table way dropped the key to turns already, it is only added back.
-- Each block runs its shard commands one connection at a time (multi_shard_modify_mode), so that the
-- keys can be added in the same transaction as the distribution where the file runs as one (psql
-- --single-transaction), as 017 and 023 do. Running this again changes nothing.
DO $$
DECLARE
  spec text[];
  fk text;
BEGIN
  PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
  IF NOT EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = 'verified_pair_feedback'::regclass) THEN
    FOR fk IN SELECT conname FROM pg_constraint WHERE conrelid = 'verified_pair_feedback'::regclass AND contype = 'f' LOOP
      EXECUTE format('ALTER TABLE verified_pair_feedback DROP CONSTRAINT %I', fk);
    END LOOP;
  END IF;
  FOREACH spec SLICE 1 IN ARRAY ARRAY[
    ['linked_identities', 'user_id'],
    ['verified_pairs', NULL],
    ['tenant_settings', NULL],
    ['verified_pair_feedback', 'user_id']
  ] LOOP
    CONTINUE WHEN EXISTS (SELECT 1 FROM pg_dist_partition WHERE logicalrelid = spec[1]::regclass);
    -- As 016 does: Citus copies the rows with COPY, which the table's FORCEd row-level security refuses its owner.
    EXECUTE format('ALTER TABLE %I NO FORCE ROW LEVEL SECURITY', spec[1]);
    IF spec[2] IS NULL THEN
      PERFORM create_reference_table(spec[1]);
    ELSE
      PERFORM create_distributed_table(spec[1], spec[2], colocate_with => 'sessions');
    END IF;
    EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', spec[1]);
  END LOOP;
END
$$;

-- The feedback's keys, as 023 adds them.
DO $$
DECLARE
  fk text[];
BEGIN
  PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
  FOREACH fk SLICE 1 IN ARRAY ARRAY[
    ['turns', 'FOREIGN KEY (tenant_id, user_id, session_id, turn_number) REFERENCES turns ON DELETE CASCADE'],
    ['verified_pairs', 'FOREIGN KEY (tenant_id, pair_id) REFERENCES verified_pairs ON DELETE CASCADE']
  ] LOOP
    CONTINUE WHEN EXISTS (
      SELECT 1 FROM pg_constraint WHERE conrelid = 'verified_pair_feedback'::regclass AND confrelid = fk[1]::regclass AND contype = 'f'
    );
    EXECUTE 'ALTER TABLE verified_pair_feedback ADD ' || fk[2];
  END LOOP;
END
$$;
