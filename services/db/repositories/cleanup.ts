import type { Queryable } from './queryable.js';

/*
 * Retention deletes (docs/design.md §7). These are the one place that works across users: they select by
 * expiry, not by (tenant, user), and delete by full primary key. Each call is one statement, so one
 * short transaction; `FOR UPDATE SKIP LOCKED` lets two workers delete side by side without waiting
 * on each other or deleting a row twice.
 */

/** Deletes up to `limit` turns of expired sessions; returns how many. */
export async function deleteExpiredTurns(db: Queryable, now: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM turns t
     USING (
       SELECT x.tenant_id, x.user_id, x.session_id, x.turn_number
       FROM sessions s
       JOIN turns x ON x.tenant_id = s.tenant_id AND x.user_id = s.user_id AND x.session_id = s.session_id
       WHERE s.expires_at <= $1
       LIMIT $2
       FOR UPDATE OF x SKIP LOCKED
     ) d
     WHERE t.tenant_id = d.tenant_id AND t.user_id = d.user_id AND t.session_id = d.session_id
       AND t.turn_number = d.turn_number`,
    [now, limit],
  );
  return rowCount ?? 0;
}

/**
 * Deletes up to `limit` expired sessions that have no turns left (their turns go first, in bounded
 * batches, so a session with thousands of turns never becomes one long cascading delete).
 */
export async function deleteExpiredEmptySessions(db: Queryable, now: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM sessions s
     USING (
       SELECT e.tenant_id, e.user_id, e.session_id FROM sessions e
       WHERE e.expires_at <= $1
         AND NOT EXISTS (SELECT 1 FROM turns t
                         WHERE t.tenant_id = e.tenant_id AND t.user_id = e.user_id AND t.session_id = e.session_id)
       LIMIT $2
       FOR UPDATE SKIP LOCKED
     ) d
     WHERE s.tenant_id = d.tenant_id AND s.user_id = d.user_id AND s.session_id = d.session_id`,
    [now, limit],
  );
  return rowCount ?? 0;
}

/** Deletes up to `limit` GDPR exports past their download window. */
export async function deleteExpiredExports(db: Queryable, now: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM gdpr_exports g
     USING (SELECT tenant_id, user_id, request_id FROM gdpr_exports WHERE expires_at <= $1
            LIMIT $2 FOR UPDATE SKIP LOCKED) d
     WHERE g.tenant_id = d.tenant_id AND g.user_id = d.user_id AND g.request_id = d.request_id`,
    [now, limit],
  );
  return rowCount ?? 0;
}

/** Deletes up to `limit` idempotency keys past IDEMPOTENCY_TTL (docs/idempotency.md). */
export async function deleteExpiredIdempotencyKeys(db: Queryable, now: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys k
     USING (SELECT tenant_id, user_id, idempotency_key FROM idempotency_keys WHERE expires_at <= $1
            LIMIT $2 FOR UPDATE SKIP LOCKED) d
     WHERE k.tenant_id = d.tenant_id AND k.user_id = d.user_id AND k.idempotency_key = d.idempotency_key`,
    [now, limit],
  );
  return rowCount ?? 0;
}
