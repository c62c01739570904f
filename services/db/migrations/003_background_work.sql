-- Background work (DESIGN §7): GDPR request audit trail and stored exports.

-- One row per GDPR request. It is both the request's status record and its audit trail, so it must
-- survive the erasure it records: its key is (tenant_id, request_id), not the user, and it holds who
-- acted on whom, what and when, with row counts -- never content.
CREATE TABLE gdpr_audit (
  tenant_id        text        NOT NULL,
  request_id       uuid        NOT NULL,
  action           text        NOT NULL CHECK (action IN ('export', 'erase')),
  actor_user_id    text        NOT NULL,
  subject_user_id  text        NOT NULL,
  status           text        NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
  requested_at     timestamptz NOT NULL,
  started_at       timestamptz,
  completed_at     timestamptz,
  -- e.g. {"sessions": 20, "turns": 1000}; never content.
  counts           jsonb       NOT NULL DEFAULT '{}'::jsonb,
  -- An error class or code, never a message that could quote data.
  error_code       text,
  PRIMARY KEY (tenant_id, request_id)
);

CREATE INDEX gdpr_audit_by_subject ON gdpr_audit (tenant_id, subject_user_id, requested_at DESC);

-- A finished export's JSON document, downloadable until expires_at; erase and cleanup delete it.
CREATE TABLE gdpr_exports (
  tenant_id   text        NOT NULL,
  user_id     text        NOT NULL,
  request_id  uuid        NOT NULL,
  created_at  timestamptz NOT NULL,
  expires_at  timestamptz NOT NULL,
  turn_count  integer     NOT NULL,
  payload     jsonb       NOT NULL,
  PRIMARY KEY (tenant_id, user_id, request_id)
);

CREATE INDEX gdpr_exports_by_expiry ON gdpr_exports (expires_at);

-- Re-embedding walks turns whose model differs from the active one; the PK order is its cursor.
-- Summarization reads one session's turns by number, which the turns PK already serves.
