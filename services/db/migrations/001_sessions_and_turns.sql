-- Sessions and turns. Every primary key starts with (tenant_id, user_id) so the schema can be
-- distributed by user (Citus) without change.
CREATE EXTENSION IF NOT EXISTS vector;

CREATE TABLE sessions (
  tenant_id            text        NOT NULL,
  user_id              text        NOT NULL,
  session_id           uuid        NOT NULL,
  -- Reserved for client-chosen keys (a Slack thread id, a Telegram chat id): DESIGN §11.
  session_key          text,
  session_name         text        NOT NULL,
  created_at           timestamptz NOT NULL,
  updated_at           timestamptz NOT NULL,
  -- Maintained on every write (sliding) or fixed at creation (absolute); every read filters on it.
  expires_at           timestamptz NOT NULL,
  -- turn_count counts live turns; last_turn_number only grows, so numbers are never reused.
  turn_count           integer     NOT NULL DEFAULT 0,
  last_turn_number     integer     NOT NULL DEFAULT 0,
  summary_text         text,
  summary_through_turn integer,
  metadata             jsonb       NOT NULL DEFAULT '{}'::jsonb,
  PRIMARY KEY (tenant_id, user_id, session_id)
);

CREATE UNIQUE INDEX sessions_by_key ON sessions (tenant_id, user_id, session_key)
  WHERE session_key IS NOT NULL;
CREATE INDEX sessions_by_recency ON sessions (tenant_id, user_id, updated_at DESC);
CREATE INDEX sessions_by_expiry ON sessions (expires_at);

CREATE TABLE turns (
  tenant_id          text        NOT NULL,
  user_id            text        NOT NULL,
  session_id         uuid        NOT NULL,
  turn_number        integer     NOT NULL,
  created_at         timestamptz NOT NULL,
  -- ok: answered with SQL; clarification: an answer without SQL; failed: the SQL failed;
  -- upstream_error: the answerer failed. Only 'ok' turns steer later SQL.
  status             text        NOT NULL CHECK (status IN ('ok', 'clarification', 'failed', 'upstream_error')),
  question           text        NOT NULL,
  augmented_question text,
  answer             text        NOT NULL DEFAULT '',
  sql_query          text,
  query_explanation  text,
  tables_used        text[]      NOT NULL DEFAULT '{}',
  vdp_database_names text[]      NOT NULL DEFAULT '{}',
  execution_result   jsonb,
  messages           jsonb,
  context            jsonb,
  metadata           jsonb       NOT NULL DEFAULT '{}'::jsonb,
  embedding          vector,
  -- "<model>@<dimensions>": search compares only embeddings of the active model.
  embedding_model    text,
  PRIMARY KEY (tenant_id, user_id, session_id, turn_number),
  FOREIGN KEY (tenant_id, user_id, session_id) REFERENCES sessions ON DELETE CASCADE
);

-- Keep the vector in the row: out-of-line vectors made per-user search read 4.4x more pages.
ALTER TABLE turns ALTER COLUMN embedding SET STORAGE PLAIN;
ALTER TABLE turns SET (toast_tuple_target = 8160);

-- Per-user exact search: a b-tree narrows to one user's turns of one model, then cosine order.
CREATE INDEX turns_by_user_model ON turns (tenant_id, user_id, embedding_model);
