-- Idempotency keys (docs/idempotency.md): a retried POST /memoryChat or turn write with the same
-- Idempotency-Key replays the first response instead of running again.

-- One row per (tenant, user, key). `in_progress` rows are claims held by a running request under a
-- lease (`locked_until`); `completed` rows hold the 2xx response to replay until `expires_at`.
-- A failed request deletes its claim, so nothing but successes is ever replayed.
CREATE TABLE idempotency_keys (
  tenant_id        text        NOT NULL,
  user_id          text        NOT NULL,
  idempotency_key  text        NOT NULL,
  -- "POST /sessions/:id/turns": the route pattern the key was first used on.
  route            text        NOT NULL,
  -- sha256 (hex) of the route, its path parameters and the canonical JSON body.
  fingerprint      text        NOT NULL,
  status           text        NOT NULL CHECK (status IN ('in_progress', 'completed')),
  -- Fencing token of the current claim: completing or releasing a claim needs it, so a request
  -- whose lease ran out cannot overwrite the claim of the request that reclaimed the key.
  claim_id         uuid        NOT NULL,
  locked_until     timestamptz,
  response_status  integer,
  response_body    jsonb,
  created_at       timestamptz NOT NULL,
  expires_at       timestamptz NOT NULL,
  PRIMARY KEY (tenant_id, user_id, idempotency_key),
  CHECK (status = 'in_progress' OR (response_status IS NOT NULL AND response_body IS NOT NULL))
);

-- The retention cleanup deletes expired keys by expiry, across users.
CREATE INDEX idempotency_keys_by_expiry ON idempotency_keys (expires_at);
