-- The approximate search of users past MEMORY_EXACT_SEARCH_MAX_TURNS reads an IVFFlat index per embedding
-- model instead of migration 017's HNSW index (docs/performance.md, "Recall of the approximate path"):
-- a heavy user's history holds clusters of near-identical turns that the HNSW graph's greedy walk
-- never reaches (recall@20 0.82 at 100,000 turns), where probing the lists nearest the question finds
-- them (0.987 at 20 probes, in a quarter of the HNSW function's time), and an IVFFlat index builds in
-- seconds where the HNSW index took minutes.
--
-- An IVFFlat index's lists are fixed by k-means over the rows present when it is built; rows added
-- later join their nearest list, so the index stays exact about what it holds but its lists grow. So
-- it is built here with about √rows lists of the rows it holds now (one list, an exact scan of those
-- rows, while it holds few), and the retention cleanup builds it again with √rows lists when its
-- rows have outgrown them (db/ann-index-upkeep.ts). On Citus each shard holds its own index, of its
-- own rows: the lists are counted per shard (the upkeep corrects a guess made here).
--
-- `nearest_turns_<model>(tenant, usr, query, n, probes)` reads the user's nearest `n` turns from it,
-- probing the `probes` lists nearest the query first and more while fewer than `n` of the user's turns
-- were found (iterative scan); hybrid-rank.ts chooses `probes` from the user's share of the index. The
-- function sets it for its own scan only (a SET clause restores the setting when the function
-- returns).
--
-- Run as migration 017 is, statement by statement through EXECUTE, for a Citus coordinator.
DO $migration$
DECLARE
  model record;
  indexed bigint;
  shards bigint := 1;
  lists bigint;
  item bigint;
BEGIN
  PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
  IF to_regclass('pg_dist_shard') IS NOT NULL THEN
    EXECUTE $sql$SELECT greatest(count(*), 1) FROM pg_dist_shard WHERE logicalrelid = 'turns'::regclass$sql$ INTO shards;
  END IF;
  FOR model IN SELECT * FROM (VALUES
      ('local-hash-v2@384', 'local_hash_v2_384', 384),
      ('text-embedding-3-small@1536', 'text_embedding_3_small_1536', 1536)) m (id, name, dimension)
  LOOP
    EXECUTE format('SELECT count(*) FROM turns WHERE embedding_model = %L AND ann_indexed', model.id) INTO indexed;
    lists := greatest(1, round(sqrt(indexed::float8 / shards)));
    -- The build's k-means needs this much maintenance_work_mem (db/ann-index-upkeep.ts, buildMemoryKb):
    -- the embedded database's default of 16 MB refused 148 lists of 384 dimensions (22 MB).
    item := 8 + 4 * model.dimension;
    PERFORM set_config('maintenance_work_mem', greatest((SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'),
      ceil((greatest(10000, lists * 50) * (item + 4 * lists + 12) + lists * (3 * item + 4 * lists + 16)) * 1.1 / 1024) + 1024)::text, true);
    EXECUTE format('DROP INDEX turns_ann_%s', model.name);
    EXECUTE format($sql$
CREATE INDEX turns_ann_%1$s ON turns USING ivfflat ((embedding::vector(%2$s)) vector_ip_ops) WITH (lists = %3$s)
  WHERE embedding_model = %4$L AND ann_indexed
    $sql$, model.name, model.dimension, lists, model.id);
    EXECUTE format('DROP FUNCTION nearest_turns_%s(text, text, vector, integer)', model.name);
    EXECUTE format($sql$
CREATE FUNCTION nearest_turns_%1$s(tenant text, usr text, query vector, n integer, probes integer)
  RETURNS TABLE (ref tid, distance double precision)
  LANGUAGE sql STABLE ROWS 100
  SET enable_sort = off SET ivfflat.iterative_scan = relaxed_order SET ivfflat.probes = 1
AS $fn$
  SELECT set_config('ivfflat.probes', greatest(probes, 1)::text, true);
  SELECT t.ctid, 1 + ((t.embedding::vector(%2$s)) <#> query::vector(%2$s))
  FROM turns t
  WHERE t.tenant_id = tenant AND t.user_id = usr AND t.embedding_model = %3$L AND t.ann_indexed
  ORDER BY (t.embedding::vector(%2$s)) <#> query::vector(%2$s)
  LIMIT n
$fn$
    $sql$, model.name, model.dimension, model.id);
  END LOOP;
END
$migration$;
