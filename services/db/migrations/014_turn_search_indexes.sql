-- Memory search that does not grow with a user's history (docs/performance.md, "A user's own history").
--
-- The user's turns of one model, newest first: the exact search's narrowing (as the index it replaces
-- did) and the bounded lexical candidates (db/repositories/hybrid-rank.ts).
CREATE INDEX turns_by_user_model_recency ON turns (tenant_id, user_id, embedding_model, created_at DESC);
DROP INDEX turns_by_user_model;

-- Approximate nearest neighbours for users past MEMORY_EXACT_SEARCH_MAX_TURNS: per embedding model, an
-- HNSW index over that model's rows, on the vector cast to the model's dimension (the column has
-- none), by inner product as the search orders (unit vectors: 1 - cosine); and a function that reads
-- a user's nearest turns from it, as row references (ctid: the statement that calls it reads
-- them in its own snapshot). The function, not the statement, reads the index because only its
-- own settings can make the planner prefer it: the b-tree above narrows to the user (row-level
-- security's conditions alone allow that), and without statistics (the embedded database has none)
-- the planner then sorts what it estimates to be a few rows. Iterative scans read on until `n` of
-- the user's turns are found; ef_search 100 gave recall@20 of 0.98 and more against exact search
-- (scripts/bench/ann-recall.ts). Another model needs an index and a function of the same form and its
-- entry in hybrid-rank.ts's ANN_FUNCTIONS; until then its users are searched exactly.
CREATE INDEX turns_ann_local_hash_v2_384 ON turns USING hnsw ((embedding::vector(384)) vector_ip_ops)
  WHERE embedding_model = 'local-hash-v2@384';
CREATE FUNCTION nearest_turns_local_hash_v2_384(tenant text, usr text, query vector, n integer)
  RETURNS TABLE (ref tid, distance double precision)
  LANGUAGE sql STABLE ROWS 100
  SET enable_sort = off SET hnsw.iterative_scan = relaxed_order SET hnsw.ef_search = 100
AS $$
  SELECT t.ctid, 1 + ((t.embedding::vector(384)) <#> query::vector(384))
  FROM turns t
  WHERE t.tenant_id = tenant AND t.user_id = usr AND t.embedding_model = 'local-hash-v2@384'
  ORDER BY (t.embedding::vector(384)) <#> query::vector(384)
  LIMIT n
$$;

CREATE INDEX turns_ann_text_embedding_3_small_1536 ON turns USING hnsw ((embedding::vector(1536)) vector_ip_ops)
  WHERE embedding_model = 'text-embedding-3-small@1536';
CREATE FUNCTION nearest_turns_text_embedding_3_small_1536(tenant text, usr text, query vector, n integer)
  RETURNS TABLE (ref tid, distance double precision)
  LANGUAGE sql STABLE ROWS 100
  SET enable_sort = off SET hnsw.iterative_scan = relaxed_order SET hnsw.ef_search = 100
AS $$
  SELECT t.ctid, 1 + ((t.embedding::vector(1536)) <#> query::vector(1536))
  FROM turns t
  WHERE t.tenant_id = tenant AND t.user_id = usr AND t.embedding_model = 'text-embedding-3-small@1536'
  ORDER BY (t.embedding::vector(1536)) <#> query::vector(1536)
  LIMIT n
$$;
