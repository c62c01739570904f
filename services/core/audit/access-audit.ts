import { type AccessAction, type AccessAuditEntry, appendAccessAudit, listAccessAudit } from '../../db/repositories/access-audit.js';
import type { Queryable } from '../../db/repositories/queryable.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';

/** Where an access came from: the HTTP request's X-Request-Id, so an entry can be found in the logs. */
export interface AccessOrigin {
  httpRequestId?: string;
}

/**
 * Records that `actor` acted on `subject`'s memory (docs/privacy.md#access-audit). Written in the
 * caller's scope (row-level security admits only the caller's own actions), inside the caller's
 * transaction when it has one, so an action is never done unrecorded.
 */
export function recordAccess(
  db: Queryable,
  access: {
    actor: Identity;
    subjectUserId: string;
    action: AccessAction;
    target: string;
    at: Date;
    origin?: AccessOrigin;
    apiKeyId?: string;
  },
): Promise<void> {
  return appendAccessAudit(db, {
    tenant_id: access.actor.tenantId,
    subject_user_id: access.subjectUserId,
    actor_user_id: access.actor.userId,
    action: access.action,
    target: access.target,
    at: access.at,
    http_request_id: access.origin?.httpRequestId ?? null,
    api_key_id: access.apiKeyId ?? null,
  });
}

export interface AuditQuery {
  userId?: string;
  action?: AccessAction;
  from?: string;
  to?: string;
  cursor?: string;
  limit: number;
}

/** GET /admin/audit: the admin's tenant's entries, newest first, a page at a time. */
export async function listTenantAudit(db: ScopedDatabase, admin: Identity, q: AuditQuery) {
  const entries = await listAccessAudit(db.asUser({ ...admin, tenantAdmin: true }), {
    tenantId: admin.tenantId,
    userId: q.userId,
    action: q.action,
    from: q.from ? new Date(q.from) : undefined,
    to: q.to ? new Date(q.to) : undefined,
    before: q.cursor ? decodeCursor(q.cursor) : undefined,
    limit: q.limit + 1,
  });
  const page = entries.slice(0, q.limit);
  const last = page.at(-1);
  return {
    entries: page.map(entryView),
    next_cursor: entries.length > q.limit && last ? encodeCursor(last) : null,
  };
}

function entryView(e: AccessAuditEntry) {
  return { ...e, at: e.at.toISOString() };
}

// Opaque to clients: base64url of the last entry's position.
function encodeCursor(e: AccessAuditEntry): string {
  return Buffer.from(JSON.stringify([e.at.toISOString(), e.entry_id])).toString('base64url');
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function decodeCursor(cursor: string): { at: Date; entryId: string } {
  try {
    const [at, entryId] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    const date = new Date(String(at));
    if (typeof at === 'string' && !Number.isNaN(date.getTime()) && typeof entryId === 'string' && UUID.test(entryId)) {
      return { at: date, entryId };
    }
  } catch {
    // fall through to the problem below
  }
  throw new AppError('invalid-cursor', 'the cursor is not one this service returned; start again without it');
}
