import { pseudonymiseAccessAudit } from '../../db/repositories/access-audit.js';
import { raiseEraseEpoch } from '../../db/repositories/erasures.js';
import {
  deleteUserExports,
  deleteUserSessions,
  deleteUserTurns,
  findAuditRow,
  markAuditFinished,
  markAuditRunning,
} from '../../db/repositories/gdpr.js';
import { deleteUserIdempotencyKeys } from '../../db/repositories/idempotency.js';
import { deleteUserLinkedIdentities } from '../../db/repositories/linked-identities.js';
import type { ErasedTable } from '../../db/user-tables.js';
import { userPseudonym } from '../../model/identity.js';
import { PermanentJobError } from '../job-queue.js';
import type { GdprJobDeps } from './export.js';

export interface EraseCounts {
  turns: number;
  sessions: number;
  exports: number;
  /** Stored Idempotency-Key responses: they hold questions, answers and SQL. */
  idempotency_keys: number;
  /** The user's linked account and its sealed tokens (docs/account-linking.md). */
  linked_identities: number;
  queued_jobs: number;
}

/**
 * A step for each table erasure deletes from (USER_TABLES, db/user-tables.ts), run in this order;
 * job_outbox's rows go with the user's queued jobs (removeQueuedJobs).
 */
const ERASE_STEPS: {
  [T in Exclude<ErasedTable, 'job_outbox'>]: { count: keyof EraseCounts; deleteBatch: typeof deleteUserTurns };
} = {
  turns: { count: 'turns', deleteBatch: deleteUserTurns },
  sessions: { count: 'sessions', deleteBatch: deleteUserSessions },
  gdpr_exports: { count: 'exports', deleteBatch: deleteUserExports },
  idempotency_keys: { count: 'idempotency_keys', deleteBatch: deleteUserIdempotencyKeys },
  linked_identities: { count: 'linked_identities', deleteBatch: deleteUserLinkedIdentities },
};

/**
 * Erases a user (docs/design.md §7): turns (with their embeddings), sessions (with their summaries), stored
 * exports, Idempotency-Key responses and a linked account's tokens, then the user's not-yet-running jobs in the queue. Each table goes in bounded batches,
 * each batch its own short transaction, so a large user never holds a long lock; a retried job
 * simply continues. The audit row is kept, with counts only.
 */
export async function runGdprErase(
  deps: GdprJobDeps & { batchSize: number; removeQueuedJobs: (tenantId: string, userId: string) => Promise<number> },
  job: { tenantId: string; requestId: string },
): Promise<EraseCounts> {
  // The job knows its request, not yet its subject: the audit row is read and kept across users.
  const jobBookkeeping = deps.db.asMaintenance();
  const audit = await findAuditRow(jobBookkeeping, job.tenantId, job.requestId);
  if (audit?.action !== 'erase') throw new PermanentJobError(`no erase request ${job.requestId}`);
  await markAuditRunning(jobBookkeeping, job.tenantId, job.requestId, deps.clock());

  const userId = audit.subject_user_id;
  // Everything else acts for the subject only: row-level security confines it to their rows.
  const subject = deps.db.asUser({ tenantId: job.tenantId, userId });
  // Counts accumulate across attempts so the audit row reports the whole erasure.
  const counts: EraseCounts = {
    turns: 0,
    sessions: 0,
    exports: 0,
    idempotency_keys: 0,
    linked_identities: 0,
    queued_jobs: 0,
    ...audit.counts,
  };
  // The barrier before any deletion: a request already running for this user (an answer can take
  // minutes) either stored before this returns, and is deleted below, or stores nothing (migration 011).
  await raiseEraseEpoch(subject, job.tenantId, userId);
  // Jobs first, so no queued summarization re-touches rows while they are being deleted; then again
  // at the end for anything queued meanwhile.
  counts.queued_jobs += await deps.removeQueuedJobs(job.tenantId, userId);
  for (const { count: what, deleteBatch } of Object.values(ERASE_STEPS)) {
    for (;;) {
      const deleted = await deleteBatch(subject, job.tenantId, userId, deps.batchSize);
      counts[what] += deleted;
      if (deleted < deps.batchSize) break;
    }
    deps.log.info({ what, deleted: counts[what] }, 'erase step finished');
  }
  counts.queued_jobs += await deps.removeQueuedJobs(job.tenantId, userId);
  // The access audit is the record of who saw this user's memory: kept, with the user's id replaced by
  // the pseudonym the logs use (docs/privacy.md#access-audit).
  const pseudonymised = await pseudonymiseAccessAudit(
    jobBookkeeping,
    job.tenantId,
    userId,
    `erased:${userPseudonym({ tenantId: job.tenantId, userId })}`,
  );
  deps.log.info({ pseudonymised }, 'erase: access-audit entries pseudonymised');
  // Deleted rows stay readable in the database's files until their space is reclaimed.
  await deps.db.reclaimErasedRows();
  deps.log.info({}, 'erase: space of the deleted rows reclaimed');
  await markAuditFinished(jobBookkeeping, job.tenantId, job.requestId, { status: 'completed', now: deps.clock(), counts: { ...counts } });
  return counts;
}
