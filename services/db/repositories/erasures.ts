import pg from 'pg';
import { type Param, type SqlFragment, sql } from '../sql.js';
import type { Queryable, TransactionalQueryable } from './queryable.js';

/*
 * The erasure barrier (migration 011, docs/design.md §7). A request reads its user's erasure epoch
 * when it starts and stores its turn only if the epoch is still the same; the erase job raises it,
 * under a lock the storing statement also takes, before it deletes anything.
 */

/** What memorychat_erase_barrier raises when the epoch moved: the user was erased meanwhile. */
const ERASED_DURING_REQUEST = 'ME001';

/** The user's erasure epoch: 0 until their first erasure. Read when a request that stores starts. */
export async function readEraseEpoch(db: Queryable, tenantId: string, userId: string): Promise<number> {
  const { rows } = await db.query<{ epoch: string }>(
    'SELECT epoch FROM erasures WHERE tenant_id = $1 AND user_digest = memorychat_user_digest($2)',
    [tenantId, userId],
  );
  return rows[0] ? Number(rows[0].epoch) : 0;
}

/** The user's erasure epoch within a statement that reads memory: what a later store compares with. */
export function erasureEpoch(tenant: Param, user: Param): SqlFragment {
  return sql`COALESCE((SELECT epoch FROM erasures WHERE tenant_id = ${tenant} AND user_digest = memorychat_user_digest(${user})), 0)`;
}

/**
 * Raises the user's epoch under the exclusive side of the barrier's lock: it waits for any store
 * that holds the shared side to commit (the deletions that follow then see its rows), and every
 * store after it finds the new epoch and writes nothing.
 */
export async function raiseEraseEpoch(db: TransactionalQueryable, tenantId: string, userId: string): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [tenantId, userId]);
    await tx.query(
      `INSERT INTO erasures (tenant_id, user_digest, epoch) VALUES ($1, memorychat_user_digest($2), 1)
       ON CONFLICT (tenant_id, user_digest) DO UPDATE SET epoch = erasures.epoch + 1`,
      [tenantId, userId],
    );
  });
}

/** The statement that stores refused because its user was erased since the request started. */
export function isErasedDuringRequest(err: unknown): boolean {
  return err instanceof pg.DatabaseError && err.code === ERASED_DURING_REQUEST;
}
