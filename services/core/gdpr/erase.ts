import { pseudonymiseAccessAudit } from '../../db/repositories/access-audit.js';
import { raiseEraseEpoch } from '../../db/repositories/erasures.js';
import {
  addAuditCount,
  deleteUserExports,
  deleteUserSessions,
  deleteUserTurns,
  findAuditRow,
  markAuditFinished,
  markAuditRunning,
} from '../../db/repositories/gdpr.js';
import { deleteUserIdempotencyKeys } from '../../db/repositories/idempotency.js';
import { deleteUserLinkedIdentities } from '../../db/repositories/linked-identities.js';
import { erasePairsOfAuthor } from '../../db/repositories/verified-pairs.js';
import type { ErasedTable, UserTable } from '../../db/user-tables.js';
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
  /** Verified pairs promoted from the user's turns: deleted, or kept without the user when adopted. */
  verified_pairs: number;
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
  verified_pairs: { count: 'verified_pairs', deleteBatch: erasePairsOfAuthor },
};

/** The table each count's rows were deleted from: their space is reclaimed after the erasure. */
const COUNTED_TABLE: Record<keyof EraseCounts, UserTable> = {
  turns: 'turns',
  sessions: 'sessions',
  exports: 'gdpr_exports',
  idempotency_keys: 'idempotency_keys',
  linked_identities: 'linked_identities',
  verified_pairs: 'verified_pairs',
  queued_jobs: 'job_outbox',
};

/**
 * Erases a user (docs/design.md §7): turns (with their embeddings), sessions (with their summaries), stored
 * exports, Idempotency-Key responses, a linked account's tokens and the verified pairs promoted from their turns (an adopted one is kept without them), then the user's not-yet-running jobs in the queue. Each table goes in bounded batches,
 * each batch its own short transaction that also adds its count to the audit row, so a large user never
 * holds a long lock, a retried job simply continues, and the counts are what was deleted, over every
 * attempt. The audit row is kept, with counts only.
 */
export async function runGdprErase(
  deps: GdprJobDeps & { batchSize: number; removeQueuedJobs: (tenantId: string, userId: string) => Promise<number> },
  job: { tenantId: string; requestId: string },
): Promise<{ counts: EraseCounts; turnsDeletedNow: number }> {
  // The job knows its request, not yet its subject: the audit row is read and kept across users.
  const jobBookkeeping = deps.db.asMaintenance();
  const audit = await findAuditRow(jobBookkeeping, job.tenantId, job.requestId);
  if (audit?.action !== 'erase') throw new PermanentJobError(`no erase request ${job.requestId}`);
  await markAuditRunning(jobBookkeeping, job.tenantId, job.requestId, deps.clock());

  const userId = audit.subject_user_id;
  // Everything else acts for the subject only: row-level security confines it to their rows.
  const subject = deps.db.asUser({ tenantId: job.tenantId, userId });
  // The barrier before any deletion: a request already running for this user (an answer can take
  // minutes) either stored before this returns, and is deleted below, or stores nothing (migration 011).
  await raiseEraseEpoch(subject, job.tenantId, userId);
  // Jobs live in the queue, not in this database: their count is added once they are gone, so a kill
  // between the two loses it (the jobs are gone either way).
  const removeJobs = async () => {
    const removed = await deps.removeQueuedJobs(job.tenantId, userId);
    if (removed > 0) await addAuditCount(jobBookkeeping, job.tenantId, job.requestId, 'queued_jobs', removed);
  };
  // Jobs first, so no queued summarization re-touches rows while they are being deleted; then again
  // at the end for anything queued meanwhile.
  await removeJobs();
  let turnsDeletedNow = 0;
  for (const { count: what, deleteBatch } of Object.values(ERASE_STEPS)) {
    let deletedHere = 0;
    for (;;) {
      const deleted = await subject.transaction(async (tx) => {
        const n = await deleteBatch(tx, job.tenantId, userId, deps.batchSize);
        if (n > 0) await addAuditCount(tx, job.tenantId, job.requestId, what, n);
        return n;
      });
      deletedHere += deleted;
      if (deleted < deps.batchSize) break;
    }
    if (what === 'turns') turnsDeletedNow = deletedHere;
    deps.log.info({ what, deleted: deletedHere }, 'erase step finished');
  }
  await removeJobs();
  // The access audit is the record of who saw this user's memory: kept, with the user's id replaced by
  // the pseudonym the logs use (docs/privacy.md#access-audit).
  const pseudonymised = await pseudonymiseAccessAudit(
    jobBookkeeping,
    job.tenantId,
    userId,
    `erased:${userPseudonym({ tenantId: job.tenantId, userId })}`,
  );
  deps.log.info({ pseudonymised }, 'erase: access-audit entries pseudonymised');
  // The counts of every attempt, a killed one's included: its deleted rows are in the files still.
  const counts = erasedCounts((await findAuditRow(jobBookkeeping, job.tenantId, job.requestId))?.counts ?? {});
  const touched = (Object.keys(counts) as (keyof EraseCounts)[]).filter((what) => counts[what] > 0).map((what) => COUNTED_TABLE[what]);
  // Deleted rows stay readable in the database's files until their space is reclaimed: only the tables
  // this erasure deleted from, in one run with the other erasures finishing meanwhile. A user with no
  // data costs no rewrite: the old versions of their access-audit entries (an id, no memory) wait for
  // the next erasure's reclaim (docs/gdpr-storage.md).
  if (touched.length > 0) {
    await deps.db.reclaimErasedRows([...touched, 'access_audit']);
    deps.log.info({ tables: touched }, 'erase: space of the deleted rows reclaimed');
  }
  // The counts read above, written whole so that a count with nothing deleted reads 0.
  await markAuditFinished(jobBookkeeping, job.tenantId, job.requestId, { status: 'completed', now: deps.clock(), counts: { ...counts } });
  // The counts over every attempt, and the turns this attempt deleted, which a metric adds up.
  return { counts, turnsDeletedNow };
}

function erasedCounts(stored: Record<string, number>): EraseCounts {
  const count = (what: keyof EraseCounts) => Number(stored[what] ?? 0);
  return {
    turns: count('turns'),
    sessions: count('sessions'),
    exports: count('exports'),
    idempotency_keys: count('idempotency_keys'),
    linked_identities: count('linked_identities'),
    verified_pairs: count('verified_pairs'),
    queued_jobs: count('queued_jobs'),
  };
}
