-- Jobs held in Postgres while Redis cannot take them (docs/worker.md, "When Redis is down").
--
-- With REDIS_URL set, a request that creates a job (a summarization after a stored turn, a GDPR
-- export or erase) adds it to BullMQ at once. When Redis does not answer within a short bound, the job
-- is written here instead and the request carries on; a dispatcher in every API process hands held
-- jobs to BullMQ when Redis is back (on reconnect, and on a timer), then deletes them.
--
-- A row holds ids only, like the job itself. Its key starts with the user the job concerns (for a GDPR
-- job, the request's subject), as every per-user table's does.
CREATE TABLE job_outbox (
  tenant_id      text        NOT NULL,
  user_id        text        NOT NULL,
  -- The BullMQ job id it is added with: handing the same row over twice (a dispatcher that died
  -- between adding and deleting) finds the job already there and adds nothing.
  job_id         text        NOT NULL,
  kind           text        NOT NULL,
  payload        jsonb       NOT NULL,
  -- At most one held job per key, as BullMQ deduplicates them (one summarization per session).
  dedup_key      text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  -- A dispatcher's claim: others skip the row until then, so two API processes do not both add it.
  claimed_until  timestamptz,
  -- Hand-over attempts, for operators: a row that keeps failing shows here.
  attempts       integer     NOT NULL DEFAULT 0,
  PRIMARY KEY (tenant_id, user_id, job_id)
);

CREATE UNIQUE INDEX job_outbox_dedup ON job_outbox (tenant_id, user_id, dedup_key) WHERE dedup_key IS NOT NULL;

-- The dispatcher takes the oldest rows first, across users.
CREATE INDEX job_outbox_by_age ON job_outbox (created_at);

-- Row-level security as for every table (migration 005). The service writes and hands over held jobs
-- as job bookkeeping, in the maintenance scope (the dispatcher reads every user's rows); a user's scope
-- sees only that user's rows.
GRANT SELECT, INSERT, UPDATE, DELETE ON job_outbox TO memorychat_app, memorychat_maintenance;
ALTER TABLE job_outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE job_outbox FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON job_outbox TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true) AND user_id = current_setting('memorychat.user_id', true));
CREATE POLICY all_rows ON job_outbox TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');
