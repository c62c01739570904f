-- The HNSW indexes of migration 014 held every turn of their model, so every stored turn paid an HNSW
-- insert (1.1 of the append's 1.9 ms of database CPU on the bench's 100k turns: docs/performance.md)
-- although only users past MEMORY_EXACT_SEARCH_MAX_TURNS are ever searched through them. Now they hold
-- the turns marked ann_indexed: the append marks its turn, and a batch of the user's older unmarked
-- turns, when the request's retrieval took the HNSW path (db/repositories/memory-store.ts). The HNSW
-- path scores the user's unmarked turns exactly besides (turns_not_ann_indexed), so every turn is
-- found by one of the two, whichever the marks (db/repositories/hybrid-rank.ts).
-- On a Citus coordinator (migration 016), a DDL statement on a distributed table is sent to the
-- workers with the query string it came in, and this file is one string of many statements, which a
-- worker refuses ("cannot insert multiple commands into a prepared statement"): so each statement
-- runs alone, through EXECUTE; and the shards are changed one connection at a time, as Citus runs
-- no function command in a transaction after a parallel operation on a distributed table (on a
-- single server the setting is an unused placeholder).
DO $migration$
BEGIN
  PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
  EXECUTE $sql$
ALTER TABLE turns ADD COLUMN ann_indexed boolean NOT NULL DEFAULT false
  $sql$;
  -- Users past the threshold's default keep their turns in the index.
  EXECUTE $sql$
UPDATE turns SET ann_indexed = true
WHERE (tenant_id, user_id) IN (SELECT tenant_id, user_id FROM turns GROUP BY tenant_id, user_id HAVING count(*) > 2000)
  $sql$;
  EXECUTE $sql$
CREATE INDEX turns_not_ann_indexed ON turns (tenant_id, user_id, embedding_model) WHERE NOT ann_indexed
  $sql$;
  EXECUTE $sql$
DROP INDEX turns_ann_local_hash_v2_384
  $sql$;
  EXECUTE $sql$
CREATE INDEX turns_ann_local_hash_v2_384 ON turns USING hnsw ((embedding::vector(384)) vector_ip_ops)
  WHERE embedding_model = 'local-hash-v2@384' AND ann_indexed
  $sql$;
  EXECUTE $sql$
CREATE OR REPLACE FUNCTION nearest_turns_local_hash_v2_384(tenant text, usr text, query vector, n integer)
  RETURNS TABLE (ref tid, distance double precision)
  LANGUAGE sql STABLE ROWS 100
  SET enable_sort = off SET hnsw.iterative_scan = relaxed_order SET hnsw.ef_search = 100
AS $fn$
  SELECT t.ctid, 1 + ((t.embedding::vector(384)) <#> query::vector(384))
  FROM turns t
  WHERE t.tenant_id = tenant AND t.user_id = usr AND t.embedding_model = 'local-hash-v2@384' AND t.ann_indexed
  ORDER BY (t.embedding::vector(384)) <#> query::vector(384)
  LIMIT n
$fn$
  $sql$;
  EXECUTE $sql$
DROP INDEX turns_ann_text_embedding_3_small_1536
  $sql$;
  EXECUTE $sql$
CREATE INDEX turns_ann_text_embedding_3_small_1536 ON turns USING hnsw ((embedding::vector(1536)) vector_ip_ops)
  WHERE embedding_model = 'text-embedding-3-small@1536' AND ann_indexed
  $sql$;
  EXECUTE $sql$
CREATE OR REPLACE FUNCTION nearest_turns_text_embedding_3_small_1536(tenant text, usr text, query vector, n integer)
  RETURNS TABLE (ref tid, distance double precision)
  LANGUAGE sql STABLE ROWS 100
  SET enable_sort = off SET hnsw.iterative_scan = relaxed_order SET hnsw.ef_search = 100
AS $fn$
  SELECT t.ctid, 1 + ((t.embedding::vector(1536)) <#> query::vector(1536))
  FROM turns t
  WHERE t.tenant_id = tenant AND t.user_id = usr AND t.embedding_model = 'text-embedding-3-small@1536' AND t.ann_indexed
  ORDER BY (t.embedding::vector(1536)) <#> query::vector(1536)
  LIMIT n
$fn$
  $sql$;
END
$migration$;
