-- Service credentials for chatbots (docs/api-keys.md): API keys a tenant admin creates, lists and
-- revokes. A key belongs to its tenant, not to a user. Only the sha256 of its secret is stored: the
-- secret is 32 random bytes, so a fast hash cannot be reversed by guessing, and every request can
-- check it without a slow password hash.
CREATE TABLE api_keys (
  tenant_id      text        NOT NULL,
  key_id         uuid        NOT NULL,
  name           text        NOT NULL,
  secret_sha256  bytea       NOT NULL,
  -- May act for the end user named in X-Memory-User (on-behalf-of).
  act_for_users  boolean     NOT NULL,
  -- The databases the key bounds memory to, as a JWT's databases claim does; NULL: no bound.
  databases      text[],
  -- The operationIds the key may call; NULL: every route a user may call.
  routes         text[],
  created_at     timestamptz NOT NULL,
  revoked_at     timestamptz,
  PRIMARY KEY (tenant_id, key_id)
);

GRANT SELECT, INSERT, UPDATE (revoked_at) ON api_keys TO memorychat_app;
ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;

-- A tenant's admins manage its keys; a request presenting a key reads that key alone, scoped as the
-- key's own principal (user id 'api-key:<key_id>'). No user reads another's hash, nor any tenant's.
CREATE POLICY tenant_admin_manages ON api_keys TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true)
         AND current_setting('memorychat.tenant_admin', true) = 'on')
  WITH CHECK (tenant_id = current_setting('memorychat.tenant_id', true)
              AND current_setting('memorychat.tenant_admin', true) = 'on');
CREATE POLICY key_reads_itself ON api_keys FOR SELECT TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true)
         AND 'api-key:' || key_id::text = current_setting('memorychat.user_id', true));

-- Every table has a policy for both roles (docs/row-level-security.md). No job reads keys, so the
-- maintenance role has no grant on this table: its policy only keeps to that shape.
CREATE POLICY all_rows ON api_keys TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');

-- Calls a key makes for an end user are in the access audit: actor 'api-key:<key_id>', subject the user.
ALTER TABLE access_audit ADD COLUMN api_key_id uuid;
ALTER TABLE access_audit DROP CONSTRAINT access_audit_action_check;
ALTER TABLE access_audit ADD CONSTRAINT access_audit_action_check
  CHECK (action IN ('export', 'erase', 'download', 'admin_read', 'act_for_user'));
