import { randomUUID } from 'node:crypto';
import type { Queryable } from './queryable.js';

export type AccessAction =
  | 'export'
  | 'erase'
  | 'download'
  | 'admin_read'
  | 'act_for_user'
  // An admin's actions on the tenant's verified pairs and settings (docs/verified-pairs.md).
  | 'pair_promote'
  | 'pair_edit'
  | 'pair_retire'
  | 'pair_adopt'
  | 'tenant_settings';

export interface AccessAuditEntry {
  entry_id: string;
  at: Date;
  actor_user_id: string;
  subject_user_id: string;
  action: AccessAction;
  target: string;
  http_request_id: string | null;
  /** The API key that made the call (act_for_user entries). */
  api_key_id: string | null;
}

/** Appends one entry; row-level security admits only the caller's own actions in their tenant. */
export async function appendAccessAudit(db: Queryable, entry: Omit<AccessAuditEntry, 'entry_id'> & { tenant_id: string }): Promise<void> {
  await db.query(
    `INSERT INTO access_audit (tenant_id, subject_user_id, entry_id, at, actor_user_id, action, target, http_request_id, api_key_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      entry.tenant_id,
      entry.subject_user_id,
      randomUUID(),
      entry.at,
      entry.actor_user_id,
      entry.action,
      entry.target,
      entry.http_request_id,
      entry.api_key_id,
    ],
  );
}

export interface AccessAuditQuery {
  tenantId: string;
  /** Entries where this user is the subject or the actor. */
  userId?: string;
  action?: AccessAction;
  from?: Date;
  to?: Date;
  /** Entries strictly older than this (at, entry_id) position: keyset paging. */
  before?: { at: Date; entryId: string };
  limit: number;
}

/** A tenant's entries, newest first. */
export async function listAccessAudit(db: Queryable, q: AccessAuditQuery): Promise<AccessAuditEntry[]> {
  const { rows } = await db.query<AccessAuditEntry>(
    `SELECT entry_id, at, actor_user_id, subject_user_id, action, target, http_request_id, api_key_id
     FROM access_audit
     WHERE tenant_id = $1
       AND ($2::text IS NULL OR subject_user_id = $2 OR actor_user_id = $2)
       AND ($3::text IS NULL OR action = $3)
       AND ($4::timestamptz IS NULL OR at >= $4)
       AND ($5::timestamptz IS NULL OR at < $5)
       AND ($6::timestamptz IS NULL OR (at, entry_id) < ($6, $7::uuid))
     ORDER BY at DESC, entry_id DESC
     LIMIT $8`,
    [
      q.tenantId,
      q.userId ?? null,
      q.action ?? null,
      q.from ?? null,
      q.to ?? null,
      q.before?.at ?? null,
      q.before?.entryId ?? null,
      q.limit,
    ],
  );
  return rows;
}

/**
 * Deletes up to `limit` entries recorded before `cutoff` (ACCESS_AUDIT_RETENTION). No `FOR UPDATE`:
 * it needs the UPDATE privilege, which nobody has on this table; two cleanups picking the same rows
 * only delete them once.
 */
export async function deleteOldAccessAudit(db: Queryable, cutoff: Date, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM access_audit
     WHERE (tenant_id, subject_user_id, entry_id) IN (
       SELECT tenant_id, subject_user_id, entry_id FROM access_audit WHERE at < $1 LIMIT $2)`,
    [cutoff, limit],
  );
  return rowCount ?? 0;
}

/** Replaces a user's id by `pseudonym` in every entry of the tenant where they are the subject or the actor. */
export async function pseudonymiseAccessAudit(db: Queryable, tenantId: string, userId: string, pseudonym: string): Promise<number> {
  const { rowCount } = await db.query(
    `UPDATE access_audit
     SET subject_user_id = CASE WHEN subject_user_id = $2 THEN $3 ELSE subject_user_id END,
         actor_user_id = CASE WHEN actor_user_id = $2 THEN $3 ELSE actor_user_id END
     WHERE tenant_id = $1 AND (subject_user_id = $2 OR actor_user_id = $2)`,
    [tenantId, userId, pseudonym],
  );
  return rowCount ?? 0;
}
