-- Chat-native memory (issue 14): client-chosen session keys, memory commands and streamed turns as
-- turns of their own, per-turn feedback, and per-turn accounting.

-- session_key (reserved since 001) is now used. Its unique index (001: sessions_by_key) covers expired
-- sessions too, until retention cleanup removes them; a find-or-create by key first takes the key off
-- the caller's expired session holding it, so an expired session frees its key at once.

-- memory_command: "show me the SQL", "/clear"... answered from memory; incomplete: a streamed answer
-- whose client went away. Neither steers later SQL.
ALTER TABLE turns DROP CONSTRAINT turns_status_check;
ALTER TABLE turns ADD CONSTRAINT turns_status_check
  CHECK (status IN ('ok', 'clarification', 'failed', 'upstream_error', 'memory_command', 'incomplete'));

-- A down-rated turn's SQL is never offered as history or as a similar query until it is corrected
-- (a PATCH of the turn clears the rating).
ALTER TABLE turns ADD COLUMN feedback_rating text CHECK (feedback_rating IN ('up', 'down'));
ALTER TABLE turns ADD COLUMN feedback_comment text;
ALTER TABLE turns ADD COLUMN feedback_at timestamptz;

-- Accounting (the turn schema of the Denodo memory design): the answerer's reported tokens and the
-- time spent on memory retrieval, in the answerer and in total, in milliseconds.
ALTER TABLE turns ADD COLUMN tokens jsonb;
ALTER TABLE turns ADD COLUMN memory_retrieval_ms double precision;
ALTER TABLE turns ADD COLUMN answerer_ms double precision;
ALTER TABLE turns ADD COLUMN total_ms double precision;
ALTER TABLE turns ADD COLUMN vdp_tag_names text[] NOT NULL DEFAULT '{}';
