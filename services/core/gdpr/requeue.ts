import { listUnfinishedAuditRows } from '../../db/repositories/gdpr.js';
import type { ScopedDatabase } from '../../db/row-security.js';
import type { JobLogger, JobQueue } from '../job-queue.js';
import { enqueueGdprJob } from './requests.js';

/**
 * How old a queued or running request must be before the cleanup queues its job again: far longer
 * than the moment between recording a request and queueing its job, which is the gap it closes.
 */
export const GDPR_REQUEUE_AFTER_MS = 5 * 60_000;
const PAGE = 500;

/**
 * Queues again the jobs of GDPR requests that were recorded but never finished: the process died
 * between the audit row's commit and the enqueue, or an in-process queue (no Redis) lost its jobs in
 * a restart, which would leave an export or an erasure `queued` or `running` for ever. The job id is
 * the request's (enqueueGdprJob), so a job that still waits or runs is not doubled; export and
 * erasure both redo safely. Run by the periodic cleanup (docs/design.md §7).
 */
export async function requeueUnfinishedGdprRequests(deps: {
  db: ScopedDatabase;
  queue: Pick<JobQueue, 'enqueue'>;
  clock: () => Date;
  log: JobLogger;
}): Promise<number> {
  const rows = await listUnfinishedAuditRows(deps.db.asMaintenance(), new Date(deps.clock().getTime() - GDPR_REQUEUE_AFTER_MS), PAGE);
  let queued = 0;
  for (const row of rows) {
    try {
      await enqueueGdprJob(deps.queue, row);
      queued += 1;
    } catch (err) {
      deps.log.warn({ err, requestId: row.request_id }, 'queueing an unfinished GDPR request again failed; the next cleanup retries');
    }
  }
  if (queued) deps.log.info({ queued }, 'unfinished GDPR requests queued again');
  return queued;
}
