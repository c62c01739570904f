import type { Identity } from '../../model/identity.js';
import type { MemoryScope } from '../../model/sessions.js';
import { sql, toQuery } from '../sql.js';
import { withEraseBarrier } from './erase-barrier.js';
import type { Queryable } from './queryable.js';

export interface SessionByKeyRequest {
  identity: Identity;
  key: string;
  now: Date;
  /** A fresh id and name for the session when none is live under the key. */
  newSessionId: string;
  newSessionName: string;
  /** The memory scope a new session keeps; none: the default. */
  newSessionScope?: MemoryScope;
  ttlMs: number;
  /** The user's erasure epoch when the request started: the session is not made if it moved since (erasures.ts). */
  eraseEpoch: number;
}

/**
 * The caller's live session with a client-chosen key, created empty when there is none, atomically:
 * concurrent first messages under one key all get one session. The unique index on
 * (tenant_id, user_id, session_key) (migration 001) decides which insert wins; an insert that loses
 * waits for the winner to commit and then reads it. An expired session (not yet removed by retention
 * cleanup) gives up its key first, so a key whose session expired starts a new one.
 */
export async function findOrCreateSessionByKey(db: Queryable, req: SessionByKeyRequest): Promise<{ sessionId: string; created: boolean }> {
  const { tenantId, userId } = req.identity;
  // A session that expires between the insert and the read is freed and tried again, a few times at most.
  for (let attempt = 0; attempt < 3; attempt++) {
    await db.query(
      toQuery(sql`UPDATE sessions SET session_key = NULL
       WHERE tenant_id = ${tenantId} AND user_id = ${userId} AND session_key = ${req.key} AND expires_at <= ${req.now}`),
    );
    const notErased = sql`memorychat_erase_barrier(${tenantId}, ${userId}, ${req.eraseEpoch}::bigint)`;
    const inserted = await withEraseBarrier(db, notErased, (tx, condition) =>
      tx.query<{ session_id: string }>(
        toQuery(sql`INSERT INTO sessions (tenant_id, user_id, session_id, session_key, session_name, created_at, updated_at, expires_at,
                               memory_scope)
         SELECT ${tenantId}, ${userId}, ${req.newSessionId}, ${req.key}, ${req.newSessionName}, ${req.now}, ${req.now},
                ${req.now}::timestamptz + ${req.ttlMs}::float8 * interval '1 millisecond', ${req.newSessionScope ?? null}::text
         WHERE ${condition}
         ON CONFLICT (tenant_id, user_id, session_key) WHERE session_key IS NOT NULL DO NOTHING
         RETURNING session_id::text`),
      ),
    );
    if (inserted.rows[0]) return { sessionId: inserted.rows[0].session_id, created: true };
    const found = await findSessionIdByKey(db, req.identity, req.key, req.now);
    if (found) return { sessionId: found, created: false };
  }
  throw new Error(`session key ${req.key}: neither created nor found`);
}

/** The caller's live session with this key, if any. */
export async function findSessionIdByKey(db: Queryable, identity: Identity, key: string, now: Date): Promise<string | undefined> {
  const { rows } = await db.query<{ session_id: string }>(
    toQuery(sql`SELECT session_id::text FROM sessions
     WHERE tenant_id = ${identity.tenantId} AND user_id = ${identity.userId} AND session_key = ${key} AND expires_at > ${now}`),
  );
  return rows[0]?.session_id;
}
