import { deleteOldAccessAudit } from '../../db/repositories/access-audit.js';
import {
  deleteExpiredEmptySessions,
  deleteExpiredExports,
  deleteExpiredIdempotencyKeys,
  deleteExpiredTurns,
} from '../../db/repositories/cleanup.js';
import { deleteStaleLinkedIdentities } from '../../db/repositories/linked-identities.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import type { ExpiringTable } from '../../db/user-tables.js';
import type { JobLogger } from '../job-queue.js';

export interface CleanupDeps {
  db: ScopedDatabase;
  clock: () => Date;
  log: JobLogger;
  batchSize: number;
  /** ACCESS_AUDIT_RETENTION: access-audit entries older than this are deleted. */
  accessAuditRetentionMs: number;
}

export interface CleanupResult {
  turns: number;
  sessions: number;
  exports: number;
  idempotencyKeys: number;
  accessAudit: number;
  /** Abandoned sign-ins and linked accounts that can give no token (docs/account-linking.md). */
  linkedIdentities: number;
  batches: number;
  ms: number;
}

/**
 * Deletes expired data in bounded batches (docs/design.md §7): the turns of expired sessions, then the
 * emptied sessions, then expired exports and idempotency keys, then access-audit entries past their retention,
 * then abandoned sign-ins and linked accounts that can give no token. Reads already hide expired data, so
 * this only reclaims space; it is idempotent and safe to run on two workers at once (see services/db/repositories/cleanup.ts).
 * "Now" is fixed at the start so that a long run cannot chase sessions expiring while it runs.
 */
export async function runRetentionCleanup(deps: CleanupDeps): Promise<CleanupResult> {
  const started = performance.now();
  const now = deps.clock();
  const result: CleanupResult = {
    turns: 0,
    sessions: 0,
    exports: 0,
    idempotencyKeys: 0,
    accessAudit: 0,
    linkedIdentities: 0,
    batches: 0,
    ms: 0,
  };
  // A step for each table whose rows expire (USER_TABLES, db/user-tables.ts), run in this order.
  const steps: {
    [T in ExpiringTable]: { count: keyof Omit<CleanupResult, 'batches' | 'ms'>; deleteBatch: typeof deleteExpiredTurns };
  } = {
    turns: { count: 'turns', deleteBatch: deleteExpiredTurns },
    sessions: { count: 'sessions', deleteBatch: deleteExpiredEmptySessions },
    gdpr_exports: { count: 'exports', deleteBatch: deleteExpiredExports },
    idempotency_keys: { count: 'idempotencyKeys', deleteBatch: deleteExpiredIdempotencyKeys },
    access_audit: {
      count: 'accessAudit',
      deleteBatch: (db, at, limit) => deleteOldAccessAudit(db, new Date(at.getTime() - deps.accessAuditRetentionMs), limit),
    },
    linked_identities: { count: 'linkedIdentities', deleteBatch: deleteStaleLinkedIdentities },
  };
  for (const { count: what, deleteBatch } of Object.values(steps)) {
    for (;;) {
      const deleted = await deleteBatch(deps.db.asMaintenance(), now, deps.batchSize);
      result[what] += deleted;
      result.batches += 1;
      if (deleted > 0) deps.log.info({ what, deleted, total: result[what] }, 'cleanup batch');
      if (deleted < deps.batchSize) break;
    }
  }
  result.ms = Math.round(performance.now() - started);
  deps.log.info({ ...result }, 'cleanup finished');
  return result;
}
