import { randomUUID } from 'node:crypto';
import {
  type AuditRow,
  countErasesSince,
  type ExportRef,
  findAuditRow,
  findExport,
  findUnfinishedErase,
  insertAuditRow,
  markAuditFinished,
  readExportPart,
} from '../../db/repositories/gdpr.js';
import type { Queryable } from '../../db/repositories/queryable.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import { AppError } from '../../model/errors.js';
import type { GdprAction } from '../../model/gdpr.js';
import type { Identity } from '../../model/identity.js';
import { type AccessOrigin, recordAccess } from '../audit/access-audit.js';
import type { JobQueue } from '../job-queue.js';

export const ADMIN_ROLE = 'memory-admin';

export function isAdmin(identity: Identity): boolean {
  return identity.roles.includes(ADMIN_ROLE);
}

export interface GdprDeps {
  db: ScopedDatabase;
  queue: JobQueue;
  clock: () => Date;
  /** GDPR_ERASE_REQUESTS_PER_HOUR: per subject and per requesting user; 0 is no limit. */
  eraseRequestsPerHour: number;
}

const HOUR_MS = 3_600_000;

/**
 * Records a GDPR request in the audit table and queues its job. The subject is always in the
 * actor's tenant: an admin acts only within the tenant of their token. An erasure asked for while
 * one of the same subject is queued or running is that one (the same request id), and new erase
 * requests are limited per hour per subject and per requesting user (docs/design.md §7).
 */
export async function requestGdpr(
  deps: GdprDeps,
  actor: Identity,
  subjectUserId: string,
  action: GdprAction,
  origin?: AccessOrigin,
): Promise<AuditRow> {
  const now = deps.clock();
  // The request and its access-audit entry commit together.
  // An admin sees the subject's pending erasure, whoever asked for it.
  const found = await deps.db.asUser({ ...actor, tenantAdmin: isAdmin(actor) }).transaction(async (tx) => {
    if (action === 'erase') {
      const pending = await pendingOrAllowedErase(tx, deps, actor, subjectUserId, now);
      if (pending) return { pending };
    }
    const inserted = await insertAuditRow(tx, {
      tenant_id: actor.tenantId,
      request_id: randomUUID(),
      action,
      actor_user_id: actor.userId,
      subject_user_id: subjectUserId,
      requested_at: now,
    });
    await recordAccess(tx, { actor, subjectUserId, action, target: inserted.request_id, at: now, origin });
    return { inserted };
  });
  if (found.pending) return found.pending;
  const row = found.inserted;
  try {
    await enqueueGdprJob(deps.queue, row);
  } catch (err) {
    await markAuditFinished(deps.db.asUser(actor), row.tenant_id, row.request_id, {
      status: 'failed',
      now: deps.clock(),
      errorCode: 'queue-unavailable',
    });
    throw new AppError('queue-unavailable', 'the request could not be queued; please retry', { cause: err });
  }
  return row;
}

/**
 * The subject's erasure still queued or running, which a new request joins; otherwise nothing, once the
 * limit allows another. Concurrent requests for one subject take turns on a lock held to the end of
 * the transaction, so the second sees the first's row instead of adding its own.
 */
async function pendingOrAllowedErase(
  tx: Queryable,
  deps: Pick<GdprDeps, 'eraseRequestsPerHour'>,
  actor: Identity,
  subjectUserId: string,
  now: Date,
): Promise<AuditRow | undefined> {
  await tx.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [JSON.stringify(['gdpr-erase', actor.tenantId, subjectUserId])]);
  const pending = await findUnfinishedErase(tx, actor.tenantId, subjectUserId);
  if (pending || deps.eraseRequestsPerHour === 0) return pending;
  const since = new Date(now.getTime() - HOUR_MS);
  const limited: Parameters<typeof countErasesSince>[2][] = [{ column: 'subject_user_id', userId: subjectUserId }];
  if (actor.userId !== subjectUserId) limited.push({ column: 'actor_user_id', userId: actor.userId });
  for (const who of limited) {
    const { count, earliest } = await countErasesSince(tx, actor.tenantId, who, since);
    if (count < deps.eraseRequestsPerHour || !earliest) continue;
    const retryAfterSeconds = Math.max(1, Math.ceil((earliest.getTime() + HOUR_MS - now.getTime()) / 1000));
    const whose = who.column === 'subject_user_id' ? 'for this user' : 'by you';
    throw new AppError('erase-requests-limited', `${count} erase requests ${whose} in the last hour; ask again in ${retryAfterSeconds} s`, {
      retryAfterSeconds,
    });
  }
  return undefined;
}

/**
 * Queues the request's job, under a job id made from the request id, so queueing it again while it
 * waits or runs adds nothing. With Redis down the job waits in Postgres under its subject; this fails
 * only if that fails too.
 */
export function enqueueGdprJob(
  queue: Pick<JobQueue, 'enqueue'>,
  row: Pick<AuditRow, 'tenant_id' | 'request_id' | 'action' | 'subject_user_id'>,
) {
  return queue.enqueue(
    row.action === 'export' ? 'gdpr-export' : 'gdpr-erase',
    { tenantId: row.tenant_id, requestId: row.request_id },
    { owner: { tenantId: row.tenant_id, userId: row.subject_user_id } },
  );
}

/**
 * The request, if the caller may see it: its subject, its actor, or an admin of its tenant.
 * Anyone else gets the same 404 as for a request that does not exist.
 */
export async function findVisibleRequest(db: ScopedDatabase, caller: Identity, requestId: string): Promise<AuditRow> {
  const row = await findAuditRow(db.asUser({ ...caller, tenantAdmin: isAdmin(caller) }), caller.tenantId, requestId);
  if (!row || !(row.subject_user_id === caller.userId || row.actor_user_id === caller.userId || isAdmin(caller))) {
    throw new AppError('gdpr-request-not-found', `GDPR request ${requestId} does not exist or is not yours`);
  }
  return row;
}

/**
 * A request's status. An admin reading another user's export is recorded in the access audit; an
 * erasure's status shows no memory (and the erasure itself is recorded), so reading it is not, which
 * also keeps an erased user's id out of entries written after the erasure.
 */
export async function viewRequest(deps: Pick<GdprDeps, 'db' | 'clock'>, caller: Identity, requestId: string, origin?: AccessOrigin) {
  const row = await findVisibleRequest(deps.db, caller, requestId);
  if (row.action === 'export' && row.subject_user_id !== caller.userId) {
    await recordAccess(deps.db.asUser(caller), {
      actor: caller,
      subjectUserId: row.subject_user_id,
      action: 'admin_read',
      target: row.request_id,
      at: deps.clock(),
      origin,
    });
  }
  return row;
}

/**
 * The finished export's JSON text, for its subject or an admin of the tenant; every download is
 * audited. Its parts are read one at a time as the response is sent, so a large export never sits in
 * memory whole.
 */
export async function downloadExport(
  deps: Pick<GdprDeps, 'db' | 'clock'>,
  caller: Identity,
  requestId: string,
  origin?: AccessOrigin,
): Promise<AsyncIterable<string> | Iterable<string>> {
  const row = await findVisibleRequest(deps.db, caller, requestId);
  if (row.action !== 'export') throw new AppError('gdpr-request-not-found', `GDPR request ${requestId} is not an export`);
  if (row.status !== 'completed') {
    throw new AppError('export-not-ready', `the export is ${row.status}; poll GET /gdpr/requests/${requestId}`);
  }
  // Allowed above; the export is the subject's row, read as the subject.
  const subject = deps.db.asUser({ tenantId: row.tenant_id, userId: row.subject_user_id });
  const ref: ExportRef = { tenantId: row.tenant_id, userId: row.subject_user_id, requestId: row.request_id };
  const stored = await findExport(subject, ref, deps.clock());
  if (stored === undefined) throw new AppError('export-expired', 'the export has expired or its data was erased; request a new one');
  await recordAccess(deps.db.asUser(caller), {
    actor: caller,
    subjectUserId: row.subject_user_id,
    action: 'download',
    target: row.request_id,
    at: deps.clock(),
    origin,
  });
  return stored.payload === null ? exportParts(subject, ref) : [stored.payload];
}

async function* exportParts(db: Queryable, ref: ExportRef): AsyncIterable<string> {
  for (let part = 0; ; part++) {
    const body = await readExportPart(db, ref, part);
    if (body === undefined) return;
    yield body;
  }
}

export function describeRequest(row: AuditRow) {
  return {
    request_id: row.request_id,
    action: row.action,
    status: row.status,
    subject_user_id: row.subject_user_id,
    actor_user_id: row.actor_user_id,
    requested_at: row.requested_at.toISOString(),
    started_at: row.started_at?.toISOString() ?? null,
    completed_at: row.completed_at?.toISOString() ?? null,
    counts: row.counts,
    error_code: row.error_code,
    status_url: `/gdpr/requests/${row.request_id}`,
    ...(row.action === 'export' && row.status === 'completed' ? { download_url: `/gdpr/requests/${row.request_id}/download` } : {}),
  };
}
