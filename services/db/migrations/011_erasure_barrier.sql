-- The erasure barrier (docs/design.md §7): a request that was running when its user's erasure began
-- stores nothing afterwards, however long its answer took.
--
-- Each user has an erasure epoch, 0 until their first erasure. A request reads it when it starts; the
-- statement that stores its turn calls memorychat_erase_barrier with it, which takes a shared advisory
-- lock keyed by the user and refuses (SQLSTATE ME001) when the epoch has moved since. The erase job
-- raises the epoch under the same lock, exclusively, before it deletes anything. So a store either
-- committed before the epoch moved (and the deletions that follow see its rows) or sees the new epoch
-- and writes nothing.
--
-- The row outlives the user's data (it is what keeps the barrier standing), so it names the user by
-- the sha256 of their id (memorychat_user_digest), not by the id: no table but the kept gdpr_audit
-- row of the erasure names an erased user.
CREATE FUNCTION memorychat_user_digest(p_user text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT AS $$ SELECT encode(sha256(convert_to(p_user, 'UTF8')), 'hex') $$;

CREATE TABLE erasures (
  tenant_id   text   NOT NULL,
  user_digest text   NOT NULL,
  epoch       bigint NOT NULL,
  PRIMARY KEY (tenant_id, user_digest)
);

GRANT SELECT, INSERT, UPDATE ON erasures TO memorychat_app;
-- Read-only for jobs across users, like every table (nothing of theirs needs more).
GRANT SELECT ON erasures TO memorychat_maintenance;
ALTER TABLE erasures ENABLE ROW LEVEL SECURITY;
ALTER TABLE erasures FORCE ROW LEVEL SECURITY;
CREATE POLICY own_rows ON erasures TO memorychat_app
  USING (tenant_id = current_setting('memorychat.tenant_id', true)
         AND user_digest = memorychat_user_digest(current_setting('memorychat.user_id', true)));
CREATE POLICY all_rows ON erasures TO memorychat_maintenance USING (current_user = 'memorychat_maintenance');

-- VOLATILE plpgsql: its SELECT takes a snapshot of its own, after the lock is granted, so it sees an
-- epoch raised by an erasure that held the lock meanwhile (the calling statement's snapshot is older).
-- SECURITY INVOKER (the default): it reads the caller's own row under row-level security.
CREATE FUNCTION memorychat_erase_barrier(p_tenant text, p_user text, p_epoch bigint) RETURNS boolean
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock_shared(hashtext(p_tenant), hashtext(p_user));
  IF COALESCE((SELECT epoch FROM erasures WHERE tenant_id = p_tenant AND user_digest = memorychat_user_digest(p_user)), 0)
     <> p_epoch THEN
    RAISE EXCEPTION 'the user''s data was erased while the request ran' USING ERRCODE = 'ME001';
  END IF;
  RETURN true;
END
$$;
