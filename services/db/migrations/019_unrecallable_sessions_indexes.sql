-- Memory skips a user's expired sessions and their sessions kept to themselves (memory_scope
-- 'session'): each retrieval and /memory/search reads those sessions' ids first
-- (db/repositories/recall-bounds.ts, sql-scope.ts). Through sessions_pkey that read all of the user's
-- sessions to keep a few (22,000 read for 2,000 kept at 100,000 turns: docs/performance.md, "A user's
-- own history"); these two indexes hold just the ones it keeps, per user, so the read no longer grows
-- with the history. The first also keeps other users' expired sessions, still waiting for retention
-- cleanup, out of a user's read (sessions_by_expiry orders every user's).
-- Run as migration 017 is, statement by statement through EXECUTE, for a Citus coordinator.
DO $migration$
BEGIN
  PERFORM set_config('citus.multi_shard_modify_mode', 'sequential', true);
  EXECUTE $sql$
CREATE INDEX sessions_by_user_expiry ON sessions (tenant_id, user_id, expires_at)
  $sql$;
  EXECUTE $sql$
CREATE INDEX sessions_kept_to_themselves ON sessions (tenant_id, user_id) WHERE memory_scope = 'session'
  $sql$;
END
$migration$;
