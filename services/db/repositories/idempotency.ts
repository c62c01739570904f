import type { Queryable } from './queryable.js';

/*
 * Idempotency keys (docs/idempotency.md). Every statement is scoped by (tenant, user, key), the
 * table's primary key, and is one statement on its own: no transaction spans a call to the
 * answerer, and none holds a client while another query waits for the (embedded: only) connection.
 */

export interface IdempotencyKeyRef {
  tenantId: string;
  userId: string;
  key: string;
}

export interface StoredIdempotencyKey {
  route: string;
  fingerprint: string;
  status: 'in_progress' | 'completed';
  locked_until: Date | null;
  response_status: number | null;
  response_body: unknown;
  expires_at: Date;
}

export interface ClaimRequest extends IdempotencyKeyRef {
  route: string;
  fingerprint: string;
  claimId: string;
  now: Date;
  leaseMs: number;
  ttlMs: number;
}

/**
 * Claims the key for one run, atomically: inserts an `in_progress` row, or takes over a row that
 * has expired, or an `in_progress` row of the same request whose lease ran out (its process died).
 * Returns false when the key is held by a live row: the caller reads it to decide what to answer.
 */
export async function claimIdempotencyKey(db: Queryable, req: ClaimRequest): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO idempotency_keys AS k (tenant_id, user_id, idempotency_key, route, fingerprint, status, claim_id,
                                        locked_until, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, 'in_progress', $6,
             $7::timestamptz + $8::float8 * interval '1 millisecond', $7,
             $7::timestamptz + $9::float8 * interval '1 millisecond')
     ON CONFLICT (tenant_id, user_id, idempotency_key) DO UPDATE
       SET route = EXCLUDED.route, fingerprint = EXCLUDED.fingerprint, status = 'in_progress',
           claim_id = EXCLUDED.claim_id, locked_until = EXCLUDED.locked_until, response_status = NULL,
           response_body = NULL, created_at = EXCLUDED.created_at, expires_at = EXCLUDED.expires_at
       WHERE k.expires_at <= $7
          OR (k.status = 'in_progress' AND k.locked_until <= $7 AND k.fingerprint = EXCLUDED.fingerprint)
     RETURNING 1`,
    [req.tenantId, req.userId, req.key, req.route, req.fingerprint, req.claimId, req.now, req.leaseMs, req.ttlMs],
  );
  return rowCount === 1;
}

/** The key's live row (not expired at `now`), if any. */
export async function findIdempotencyKey(db: Queryable, ref: IdempotencyKeyRef, now: Date) {
  const { rows } = await db.query<StoredIdempotencyKey>(
    `SELECT route, fingerprint, status, locked_until, response_status, response_body, expires_at
     FROM idempotency_keys
     WHERE tenant_id = $1 AND user_id = $2 AND idempotency_key = $3 AND expires_at > $4`,
    [ref.tenantId, ref.userId, ref.key, now],
  );
  return rows[0];
}

/** Stores the response of a finished run under its claim; false when the claim was taken over meanwhile. */
export async function completeIdempotencyKey(
  db: Queryable,
  ref: IdempotencyKeyRef & { claimId: string; responseStatus: number; responseBody: unknown },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE idempotency_keys
     SET status = 'completed', locked_until = NULL, response_status = $5, response_body = $6::jsonb
     WHERE tenant_id = $1 AND user_id = $2 AND idempotency_key = $3 AND claim_id = $4 AND status = 'in_progress'`,
    [ref.tenantId, ref.userId, ref.key, ref.claimId, ref.responseStatus, JSON.stringify(ref.responseBody ?? null)],
  );
  return rowCount === 1;
}

/**
 * Extends a running claim's lease: the process holding it renews it while it works, so a claim
 * whose process died lapses within one lease and a retry may take it over. False when the claim is
 * no longer this run's.
 */
export async function renewIdempotencyClaim(
  db: Queryable,
  ref: IdempotencyKeyRef & { claimId: string; now: Date; leaseMs: number },
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE idempotency_keys SET locked_until = $5::timestamptz + $6::float8 * interval '1 millisecond'
     WHERE tenant_id = $1 AND user_id = $2 AND idempotency_key = $3 AND claim_id = $4 AND status = 'in_progress'`,
    [ref.tenantId, ref.userId, ref.key, ref.claimId, ref.now, ref.leaseMs],
  );
  return rowCount === 1;
}

/** The claim a run would complete was taken over by a retry: the run's writes must not stand. */
export class ClaimTakenOverError extends Error {
  override name = 'ClaimTakenOverError';
  constructor(readonly key: string) {
    super(`the claim on Idempotency-Key "${key}" was taken over by a retry`);
  }
}

/** Deletes the claim of a run that failed, so that the client may retry with the same key. */
export async function releaseIdempotencyKey(db: Queryable, ref: IdempotencyKeyRef & { claimId: string }): Promise<void> {
  await db.query(
    `DELETE FROM idempotency_keys
     WHERE tenant_id = $1 AND user_id = $2 AND idempotency_key = $3 AND claim_id = $4 AND status = 'in_progress'`,
    [ref.tenantId, ref.userId, ref.key, ref.claimId],
  );
}

/**
 * Deletes up to `limit` of a user's keys (their stored responses quote questions and answers);
 * for GDPR erasure, in the style of db/repositories/gdpr.ts.
 */
export async function deleteUserIdempotencyKeys(db: Queryable, tenantId: string, userId: string, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM idempotency_keys k USING (
       SELECT idempotency_key FROM idempotency_keys WHERE tenant_id = $1 AND user_id = $2 LIMIT $3) d
     WHERE k.tenant_id = $1 AND k.user_id = $2 AND k.idempotency_key = d.idempotency_key`,
    [tenantId, userId, limit],
  );
  return rowCount ?? 0;
}
