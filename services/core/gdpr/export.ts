import {
  findAuditRow,
  insertExport,
  listSessionsForExport,
  listTurnsForExport,
  markAuditFinished,
  markAuditRunning,
} from '../../../db/repositories/gdpr.js';
import type { ScopedDatabase } from '../../../db/row-security.js';
import { type JobLogger, PermanentJobError } from '../jobs/job-queue.js';

export interface GdprJobDeps {
  db: ScopedDatabase;
  clock: () => Date;
  log: JobLogger;
}

const TURN_PAGE = 500;

/**
 * Builds a user's export (docs/design.md §7): every live session with its summary and every turn with its
 * SQL and results, as one JSON document stored in gdpr_exports until GDPR_EXPORT_TTL passes.
 * Expired data is not exported: it is already invisible and awaits deletion.
 */
export async function runGdprExport(
  deps: GdprJobDeps & { exportTtlMs: number },
  job: { tenantId: string; requestId: string },
): Promise<{ sessions: number; turns: number }> {
  // The job knows its request, not yet its subject: the audit row is read and kept across users.
  const jobBookkeeping = deps.db.asMaintenance();
  const audit = await findAuditRow(jobBookkeeping, job.tenantId, job.requestId);
  if (audit?.action !== 'export') throw new PermanentJobError(`no export request ${job.requestId}`);
  if (audit.status === 'completed') return { sessions: audit.counts.sessions ?? 0, turns: audit.counts.turns ?? 0 };
  const now = deps.clock();
  await markAuditRunning(jobBookkeeping, job.tenantId, job.requestId, now);

  const userId = audit.subject_user_id;
  // Everything else acts for the subject only: row-level security confines it to their rows.
  const subject = deps.db.asUser({ tenantId: job.tenantId, userId });
  const sessions = await listSessionsForExport(subject, job.tenantId, userId, now);
  let turnCount = 0;
  const exported = [];
  for (const session of sessions) {
    const turns: Record<string, unknown>[] = [];
    for (let after = 0; ; ) {
      const page = await listTurnsForExport(subject, job.tenantId, userId, session.session_id, after, TURN_PAGE);
      turns.push(...page.map((row) => row.turn));
      if (page.length < TURN_PAGE) break;
      after = page.at(-1)!.turn_number;
    }
    turnCount += turns.length;
    exported.push({ ...session.session, turns });
  }
  const document = {
    format: 'memorychat-export/1',
    request_id: job.requestId,
    tenant_id: job.tenantId,
    user_id: userId,
    generated_at: now.toISOString(),
    sessions: exported,
  };
  await insertExport(subject, {
    tenantId: job.tenantId,
    userId,
    requestId: job.requestId,
    now,
    expiresAt: new Date(now.getTime() + deps.exportTtlMs),
    turnCount,
    payload: JSON.stringify(document),
  });
  const counts = { sessions: sessions.length, turns: turnCount };
  await markAuditFinished(jobBookkeeping, job.tenantId, job.requestId, { status: 'completed', now: deps.clock(), counts });
  deps.log.info(counts, 'export finished');
  return counts;
}
