-- Row-level security (docs/row-level-security.md): Postgres itself keeps every user's rows from every
-- other user, in addition to the WHERE clauses of each statement.
--
-- Each statement runs in a transaction that sets, with SET LOCAL semantics, the role and the caller's
-- identity taken from the verified JWT:
--   role                     memorychat_app (requests, and jobs acting for one user) or
--                            memorychat_maintenance (jobs that work across users: cleanup, re-embedding)
--   memorychat.tenant_id     the caller's tenant
--   memorychat.user_id       the caller's user id
--   memorychat.tenant_admin  'on' when the token carries the admin role (only widens gdpr_audit)
-- memorychat_app is neither superuser nor owner and has no BYPASSRLS: whatever SQL it runs, it sees and
-- writes only rows of the identity set for its transaction, and none when no identity is set.

-- Roles are global to the cluster: another database on the same server may have made them already,
-- maybe at this very moment.
DO $$
DECLARE
  role_name text;
BEGIN
  FOREACH role_name IN ARRAY ARRAY['memorychat_app', 'memorychat_maintenance'] LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = role_name) THEN
      BEGIN
        EXECUTE format('CREATE ROLE %I NOLOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB NOCREATEROLE', role_name);
      EXCEPTION WHEN duplicate_object OR unique_violation THEN
        NULL;
      END;
    END IF;
  END LOOP;
END
$$;

-- The login that runs the service switches into these roles per transaction. A DBA may have created
-- the roles and granted them already, to a login that may not grant them itself.
DO $$
BEGIN
  IF NOT pg_has_role(current_user, 'memorychat_app', 'MEMBER') THEN
    EXECUTE format('GRANT memorychat_app TO %I', current_user);
  END IF;
  IF NOT pg_has_role(current_user, 'memorychat_maintenance', 'MEMBER') THEN
    EXECUTE format('GRANT memorychat_maintenance TO %I', current_user);
  END IF;
END
$$;

GRANT SELECT, INSERT, UPDATE, DELETE ON sessions, turns, gdpr_audit, gdpr_exports, idempotency_keys
  TO memorychat_app, memorychat_maintenance;

-- FORCE: a login that owns the tables (the usual server setup) is held to the policies too, so a
-- statement that is not scoped sees nothing rather than everything. A superuser login (the embedded
-- database) bypasses policies; the service's code reaches the database only through the scoped handle of
-- db/row-security.ts, so its statements always run as one of the two roles.
ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessions FORCE ROW LEVEL SECURITY;
ALTER TABLE turns ENABLE ROW LEVEL SECURITY;
ALTER TABLE turns FORCE ROW LEVEL SECURITY;
ALTER TABLE gdpr_exports ENABLE ROW LEVEL SECURITY;
ALTER TABLE gdpr_exports FORCE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys FORCE ROW LEVEL SECURITY;
ALTER TABLE gdpr_audit ENABLE ROW LEVEL SECURITY;
ALTER TABLE gdpr_audit FORCE ROW LEVEL SECURITY;

-- current_setting(..., true) is NULL when nothing was set, so an unscoped statement matches no row.
CREATE POLICY own_rows ON sessions TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true) AND user_id = current_setting('memorychat.user_id', true));
CREATE POLICY own_rows ON turns TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true) AND user_id = current_setting('memorychat.user_id', true));
CREATE POLICY own_rows ON gdpr_exports TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true) AND user_id = current_setting('memorychat.user_id', true));
CREATE POLICY own_rows ON idempotency_keys TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true) AND user_id = current_setting('memorychat.user_id', true));

-- A GDPR request is visible to its subject, its actor and the tenant's admins, and only its actor or
-- subject may record one.
CREATE POLICY visible_requests ON gdpr_audit FOR SELECT TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true)
         AND (subject_user_id = current_setting('memorychat.user_id', true)
              OR actor_user_id = current_setting('memorychat.user_id', true)
              OR current_setting('memorychat.tenant_admin', true) = 'on'));
CREATE POLICY own_requests ON gdpr_audit FOR INSERT TO memorychat_app
  WITH CHECK (tenant_id = current_setting('memorychat.tenant_id', true)
              AND (subject_user_id = current_setting('memorychat.user_id', true)
                   OR actor_user_id = current_setting('memorychat.user_id', true)));
CREATE POLICY own_request_status ON gdpr_audit FOR UPDATE TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true)
         AND (subject_user_id = current_setting('memorychat.user_id', true)
              OR actor_user_id = current_setting('memorychat.user_id', true)));

-- A policy TO a role applies to its members too, and the login is a member: checking current_user
-- keeps a statement of the login that took no role from seeing everything through this policy.
CREATE POLICY all_rows ON sessions TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');
CREATE POLICY all_rows ON turns TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');
CREATE POLICY all_rows ON gdpr_exports TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');
CREATE POLICY all_rows ON idempotency_keys TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');
CREATE POLICY all_rows ON gdpr_audit TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');
