import { inUserBatches, type UserFilter } from './per-user-batches.js';
import type { Queryable } from './queryable.js';

/*
 * Retention deletes (docs/design.md §7). These are the one place that works across users: they select by
 * expiry, not by (tenant, user), and delete by full primary key. Each call is one statement, so one
 * short transaction; `FOR UPDATE SKIP LOCKED` lets two workers delete side by side without waiting
 * on each other or deleting a row twice.
 *
 * On Citus each delete runs per user with expired rows (per-user-batches.ts).
 *
 * The rows to delete are a MATERIALIZED CTE, read once: as a subquery joined to the table, a nested
 * loop (the plan Citus's shards chose) re-reads it per row, each time skipping the rows the statement
 * has just deleted, and so deletes past the LIMIT.
 */

/** A delete of up to `$2` rows expired at `$1`, within `byUser` (empty: every user). */
type DeleteStatement = (byUser: UserFilter) => string;

function deleteExpired(db: Queryable, now: Date, limit: number, usersWithExpired: string, statement: DeleteStatement): Promise<number> {
  return inUserBatches(db, limit, usersWithExpired, [now, limit], async (byUser, remaining) => {
    const { rowCount } = await db.query(statement(byUser), [now, remaining]);
    return rowCount ?? 0;
  });
}

/** Deletes up to `limit` turns of expired sessions; returns how many. */
export async function deleteExpiredTurns(db: Queryable, now: Date, limit: number): Promise<number> {
  return deleteExpired(
    db,
    now,
    limit,
    `SELECT DISTINCT s.tenant_id, s.user_id FROM sessions s
     JOIN turns x ON x.tenant_id = s.tenant_id AND x.user_id = s.user_id AND x.session_id = s.session_id
     WHERE s.expires_at <= $1 LIMIT $2`,
    (byUser) => `WITH d AS MATERIALIZED (
       SELECT x.tenant_id, x.user_id, x.session_id, x.turn_number
       FROM sessions s
       JOIN turns x ON x.tenant_id = s.tenant_id AND x.user_id = s.user_id AND x.session_id = s.session_id
       WHERE s.expires_at <= $1 ${byUser('s.tenant_id', 's.user_id')} ${byUser('x.tenant_id', 'x.user_id')}
       LIMIT $2
       FOR UPDATE OF x SKIP LOCKED
     )
     DELETE FROM turns t USING d
     WHERE t.tenant_id = d.tenant_id AND t.user_id = d.user_id AND t.session_id = d.session_id
       AND t.turn_number = d.turn_number ${byUser('t.tenant_id', 't.user_id')}`,
  );
}

/**
 * Deletes up to `limit` expired sessions that have no turns left (their turns go first, in bounded
 * batches, so a session with thousands of turns never becomes one long cascading delete).
 */
export async function deleteExpiredEmptySessions(db: Queryable, now: Date, limit: number): Promise<number> {
  return deleteExpired(
    db,
    now,
    limit,
    'SELECT DISTINCT tenant_id, user_id FROM sessions WHERE expires_at <= $1 LIMIT $2',
    (byUser) => `WITH d AS MATERIALIZED (
       SELECT e.tenant_id, e.user_id, e.session_id FROM sessions e
       WHERE e.expires_at <= $1 ${byUser('e.tenant_id', 'e.user_id')}
         AND NOT EXISTS (SELECT 1 FROM turns t
                         WHERE t.tenant_id = e.tenant_id AND t.user_id = e.user_id AND t.session_id = e.session_id
                           ${byUser('t.tenant_id', 't.user_id')})
       LIMIT $2
       FOR UPDATE SKIP LOCKED
     )
     DELETE FROM sessions s USING d
     WHERE s.tenant_id = d.tenant_id AND s.user_id = d.user_id AND s.session_id = d.session_id ${byUser('s.tenant_id', 's.user_id')}`,
  );
}

/** Deletes up to `limit` GDPR exports past their download window. */
export async function deleteExpiredExports(db: Queryable, now: Date, limit: number): Promise<number> {
  return deleteExpired(
    db,
    now,
    limit,
    'SELECT DISTINCT tenant_id, user_id FROM gdpr_exports WHERE expires_at <= $1 LIMIT $2',
    (byUser) => `WITH d AS MATERIALIZED (
       SELECT tenant_id, user_id, request_id FROM gdpr_exports WHERE expires_at <= $1 ${byUser('tenant_id', 'user_id')}
       LIMIT $2 FOR UPDATE SKIP LOCKED)
     DELETE FROM gdpr_exports g USING d
     WHERE g.tenant_id = d.tenant_id AND g.user_id = d.user_id AND g.request_id = d.request_id ${byUser('g.tenant_id', 'g.user_id')}`,
  );
}

/** Deletes up to `limit` idempotency keys past IDEMPOTENCY_TTL (docs/idempotency.md). */
export async function deleteExpiredIdempotencyKeys(db: Queryable, now: Date, limit: number): Promise<number> {
  return deleteExpired(
    db,
    now,
    limit,
    'SELECT DISTINCT tenant_id, user_id FROM idempotency_keys WHERE expires_at <= $1 LIMIT $2',
    (byUser) => `WITH d AS MATERIALIZED (
       SELECT tenant_id, user_id, idempotency_key FROM idempotency_keys WHERE expires_at <= $1 ${byUser('tenant_id', 'user_id')}
       LIMIT $2 FOR UPDATE SKIP LOCKED)
     DELETE FROM idempotency_keys k USING d
     WHERE k.tenant_id = d.tenant_id AND k.user_id = d.user_id AND k.idempotency_key = d.idempotency_key ${byUser('k.tenant_id', 'k.user_id')}`,
  );
}
