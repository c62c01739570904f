-- The access audit (docs/privacy.md#access-audit): who exported, erased, downloaded or, as a tenant
-- admin, read another user's memory. Keyed by its subject like gdpr_audit (migration 007), so it
-- distributes with the subject's data.
--
-- Append-only for the service: memorychat_app may insert its own actions and, as a tenant admin, read
-- its tenant's entries; it has no UPDATE or DELETE. memorychat_maintenance (retention cleanup) reads
-- and deletes entries past ACCESS_AUDIT_RETENTION, and on a user's erasure replaces their id in the
-- user columns by a pseudonym (the rows stay: they are the record of who accessed what).
CREATE TABLE access_audit (
  tenant_id       text        NOT NULL,
  subject_user_id text        NOT NULL,
  entry_id        uuid        NOT NULL,
  at              timestamptz NOT NULL,
  actor_user_id   text        NOT NULL,
  action          text        NOT NULL CHECK (action IN ('export', 'erase', 'download', 'admin_read')),
  -- What was acted on: the GDPR request id.
  target          text        NOT NULL,
  -- The HTTP request's X-Request-Id, to find it in the logs.
  http_request_id text,
  PRIMARY KEY (tenant_id, subject_user_id, entry_id)
);
-- GET /admin/audit pages a tenant's entries newest first; retention deletes the oldest.
CREATE INDEX access_audit_by_time ON access_audit (tenant_id, at DESC, entry_id DESC);
CREATE INDEX access_audit_by_age ON access_audit (at);

GRANT SELECT, INSERT ON access_audit TO memorychat_app;
GRANT SELECT, DELETE, UPDATE (subject_user_id, actor_user_id) ON access_audit TO memorychat_maintenance;
ALTER TABLE access_audit ENABLE ROW LEVEL SECURITY;
ALTER TABLE access_audit FORCE ROW LEVEL SECURITY;

CREATE POLICY record_own_actions ON access_audit FOR INSERT TO memorychat_app
  WITH CHECK (tenant_id = current_setting('memorychat.tenant_id', true)
              AND actor_user_id = current_setting('memorychat.user_id', true));
CREATE POLICY tenant_admin_reads ON access_audit FOR SELECT TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true)
         AND current_setting('memorychat.tenant_admin', true) = 'on');
CREATE POLICY all_rows ON access_audit TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');
