import type { GdprAction, GdprStatus } from '../../model/gdpr.js';
import type { Queryable } from './queryable.js';

export interface AuditRow {
  tenant_id: string;
  request_id: string;
  action: GdprAction;
  actor_user_id: string;
  subject_user_id: string;
  status: GdprStatus;
  requested_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  counts: Record<string, number>;
  error_code: string | null;
}

export async function insertAuditRow(
  db: Queryable,
  row: Pick<AuditRow, 'tenant_id' | 'request_id' | 'action' | 'actor_user_id' | 'subject_user_id' | 'requested_at'>,
): Promise<AuditRow> {
  const { rows } = await db.query<AuditRow>(
    `INSERT INTO gdpr_audit (tenant_id, request_id, action, actor_user_id, subject_user_id, status, requested_at)
     VALUES ($1, $2, $3, $4, $5, 'queued', $6) RETURNING *`,
    [row.tenant_id, row.request_id, row.action, row.actor_user_id, row.subject_user_id, row.requested_at],
  );
  return rows[0]!;
}

export async function findAuditRow(db: Queryable, tenantId: string, requestId: string): Promise<AuditRow | undefined> {
  const { rows } = await db.query<AuditRow>('SELECT * FROM gdpr_audit WHERE tenant_id = $1 AND request_id = $2', [tenantId, requestId]);
  return rows[0];
}

export async function markAuditRunning(db: Queryable, tenantId: string, requestId: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE gdpr_audit SET status = 'running', started_at = COALESCE(started_at, $3), error_code = NULL
     WHERE tenant_id = $1 AND request_id = $2`,
    [tenantId, requestId, now],
  );
}

export async function markAuditFinished(
  db: Queryable,
  tenantId: string,
  requestId: string,
  outcome: { status: 'completed' | 'failed'; now: Date; counts?: Record<string, number>; errorCode?: string },
): Promise<void> {
  await db.query(
    `UPDATE gdpr_audit SET status = $3, completed_at = $4, counts = COALESCE($5::jsonb, counts), error_code = $6
     WHERE tenant_id = $1 AND request_id = $2`,
    [tenantId, requestId, outcome.status, outcome.now, outcome.counts ? JSON.stringify(outcome.counts) : null, outcome.errorCode ?? null],
  );
}

/**
 * Adds `n` to one of the request's counts: called in the transaction of the deletion it counts, so the
 * audit row's counts are exactly what was deleted, whichever attempt deleted it.
 */
export async function addAuditCount(db: Queryable, tenantId: string, requestId: string, what: string, n: number): Promise<void> {
  await db.query(
    `UPDATE gdpr_audit SET counts = jsonb_set(counts, ARRAY[$3::text], to_jsonb(COALESCE((counts->>$3)::bigint, 0) + $4))
     WHERE tenant_id = $1 AND request_id = $2`,
    [tenantId, requestId, what, n],
  );
}

/** The subject's erase request still queued or running, if any: a new request for them joins it. */
export async function findUnfinishedErase(db: Queryable, tenantId: string, subjectUserId: string): Promise<AuditRow | undefined> {
  const { rows } = await db.query<AuditRow>(
    `SELECT * FROM gdpr_audit WHERE tenant_id = $1 AND subject_user_id = $2 AND action = 'erase' AND status IN ('queued', 'running')
     ORDER BY requested_at LIMIT 1`,
    [tenantId, subjectUserId],
  );
  return rows[0];
}

/**
 * How many erase requests were made since `since` for the subject, or by the actor, and when the
 * earliest of them was: the per-user limit on erasures (core/gdpr/erase-limit.ts).
 */
export async function countErasesSince(
  db: Queryable,
  tenantId: string,
  who: { column: 'subject_user_id' | 'actor_user_id'; userId: string },
  since: Date,
): Promise<{ count: number; earliest: Date | null }> {
  const { rows } = await db.query<{ count: number; earliest: Date | null }>(
    `SELECT count(*)::int AS count, min(requested_at) AS earliest FROM gdpr_audit
     WHERE tenant_id = $1 AND ${who.column} = $2 AND action = 'erase' AND requested_at > $3`,
    [tenantId, who.userId, since],
  );
  return rows[0]!;
}

/**
 * Requests of every tenant still queued or running that were made before `before`, oldest first: a
 * cross-tenant maintenance read for the cleanup, which queues their jobs again (services/core/gdpr/requeue.ts).
 */
export async function listUnfinishedAuditRows(db: Queryable, before: Date, limit: number): Promise<AuditRow[]> {
  const { rows } = await db.query<AuditRow>(
    `SELECT * FROM gdpr_audit WHERE status IN ('queued', 'running') AND requested_at < $1
     ORDER BY requested_at LIMIT $2`,
    [before, limit],
  );
  return rows;
}

/**
 * How many requests of every tenant are still queued or running, per action, and when the oldest of
 * them was made: a cross-tenant maintenance read for the metrics (services/core/backlog-metrics.ts).
 */
export async function countUnfinishedRequests(db: Queryable): Promise<{ action: GdprAction; count: number; oldest: Date }[]> {
  const { rows } = await db.query<{ action: GdprAction; count: number; oldest: Date }>(
    `SELECT action, count(*)::int AS count, min(requested_at) AS oldest FROM gdpr_audit
     WHERE status IN ('queued', 'running') GROUP BY action`,
  );
  return rows;
}

/**
 * The user's live sessions (expired data is invisible, docs/design.md §7), oldest first. Every column is
 * exported (to_jsonb), so columns added later are exported without touching this code.
 */
export async function listSessionsForExport(db: Queryable, tenantId: string, userId: string, now: Date) {
  const { rows } = await db.query<{ session_id: string; session: Record<string, unknown> }>(
    `SELECT s.session_id, to_jsonb(s) - 'tenant_id' - 'user_id' - 'last_turn_number' AS session
     FROM sessions s WHERE s.tenant_id = $1 AND s.user_id = $2 AND s.expires_at > $3
     ORDER BY s.created_at, s.session_id`,
    [tenantId, userId, now],
  );
  return rows;
}

/**
 * One page of a session's turns, each as the JSON text of its whole row. json, not jsonb: a jsonb
 * string holds at most 256 MB, so to_jsonb of a turn with a larger answer fails; a json text is only
 * bounded by text's 1 GB. The caller drops the columns not exported.
 */
export async function listTurnsForExport(
  db: Queryable,
  tenantId: string,
  userId: string,
  sessionId: string,
  afterTurn: number,
  limit: number,
) {
  const { rows } = await db.query<{ turn_number: number; turn: string }>(
    `SELECT t.turn_number, row_to_json(t)::text AS turn
     FROM turns t WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.session_id = $3 AND t.turn_number > $4
     ORDER BY t.turn_number LIMIT $5`,
    [tenantId, userId, sessionId, afterTurn, limit],
  );
  return rows;
}

export interface ExportRef {
  tenantId: string;
  userId: string;
  requestId: string;
}

/**
 * The export's row, without a document of its own: its parts follow (appendExportPart). Parts of an
 * earlier attempt of the same request are removed, so a retried job writes the export afresh.
 */
export async function beginExport(db: Queryable, ref: ExportRef & { now: Date; expiresAt: Date }): Promise<void> {
  await db.query(
    `INSERT INTO gdpr_exports (tenant_id, user_id, request_id, created_at, expires_at, turn_count, payload)
     VALUES ($1, $2, $3, $4, $5, 0, NULL)
     ON CONFLICT (tenant_id, user_id, request_id) DO NOTHING`,
    [ref.tenantId, ref.userId, ref.requestId, ref.now, ref.expiresAt],
  );
  await db.query('DELETE FROM gdpr_export_parts WHERE tenant_id = $1 AND user_id = $2 AND request_id = $3', [
    ref.tenantId,
    ref.userId,
    ref.requestId,
  ]);
}

export async function appendExportPart(db: Queryable, ref: ExportRef, part: number, body: string): Promise<void> {
  await db.query('INSERT INTO gdpr_export_parts (tenant_id, user_id, request_id, part, body) VALUES ($1, $2, $3, $4, $5)', [
    ref.tenantId,
    ref.userId,
    ref.requestId,
    part,
    body,
  ]);
}

export async function finishExport(db: Queryable, ref: ExportRef, turnCount: number): Promise<void> {
  await db.query('UPDATE gdpr_exports SET turn_count = $4 WHERE tenant_id = $1 AND user_id = $2 AND request_id = $3', [
    ref.tenantId,
    ref.userId,
    ref.requestId,
    turnCount,
  ]);
}

/**
 * The export, when it exists and has not expired: `payload` is its document as JSON text when it was
 * stored whole (exports made before parts), else null and its parts are read with readExportPart.
 */
export async function findExport(db: Queryable, ref: ExportRef, now: Date): Promise<{ payload: string | null } | undefined> {
  const { rows } = await db.query<{ payload: string | null }>(
    `SELECT payload::text AS payload FROM gdpr_exports
     WHERE tenant_id = $1 AND user_id = $2 AND request_id = $3 AND expires_at > $4`,
    [ref.tenantId, ref.userId, ref.requestId, now],
  );
  return rows[0];
}

/** One part of an export (numbered from 0), or undefined after the last. */
export async function readExportPart(db: Queryable, ref: ExportRef, part: number): Promise<string | undefined> {
  const { rows } = await db.query<{ body: string }>(
    'SELECT body FROM gdpr_export_parts WHERE tenant_id = $1 AND user_id = $2 AND request_id = $3 AND part = $4',
    [ref.tenantId, ref.userId, ref.requestId, part],
  );
  return rows[0]?.body;
}

/*
 * Erasure, one table at a time in bounded batches: each call is one statement, so one short
 * transaction, and an interrupted erase resumes safely when the job is retried.
 */
export async function deleteUserTurns(db: Queryable, tenantId: string, userId: string, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM turns t USING (
       SELECT session_id, turn_number FROM turns WHERE tenant_id = $1 AND user_id = $2 LIMIT $3) d
     WHERE t.tenant_id = $1 AND t.user_id = $2 AND t.session_id = d.session_id AND t.turn_number = d.turn_number`,
    [tenantId, userId, limit],
  );
  return rowCount ?? 0;
}

export async function deleteUserSessions(db: Queryable, tenantId: string, userId: string, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM sessions s USING (
       SELECT session_id FROM sessions WHERE tenant_id = $1 AND user_id = $2 LIMIT $3) d
     WHERE s.tenant_id = $1 AND s.user_id = $2 AND s.session_id = d.session_id`,
    [tenantId, userId, limit],
  );
  return rowCount ?? 0;
}

export async function deleteUserExports(db: Queryable, tenantId: string, userId: string, limit: number): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM gdpr_exports g USING (
       SELECT request_id FROM gdpr_exports WHERE tenant_id = $1 AND user_id = $2 LIMIT $3) d
     WHERE g.tenant_id = $1 AND g.user_id = $2 AND g.request_id = d.request_id`,
    [tenantId, userId, limit],
  );
  return rowCount ?? 0;
}
