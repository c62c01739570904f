// After the fleet soak: did every background job the clients caused run to completion?
// (docs/soak.md, "jobs lost").
import type { Queue } from 'bullmq';
import type pg from 'pg';
import type { ExportRequest } from './soak-client.js';

/** Job states that mean "not done": still to run, running, or given up. */
const UNFINISHED_STATES = ['waiting', 'active', 'delayed', 'prioritized', 'paused', 'waiting-children', 'failed'] as const;

export interface JobAudit {
  /** Exports the service accepted (202) to a client. */
  exportsAccepted: number;
  exportsCompleted: number;
  /** Accepted exports whose request did not reach `completed`. */
  exportsLost: number;
  /** Export requests the service recorded that no client was answered with (a response lost to a kill), and how many of them did not complete. */
  exportsUnacknowledged: number;
  exportsUnacknowledgedNotCompleted: number;
  /** Sessions whose live turns reached MEMORY_SUMMARIZATION_THRESHOLD: each had a summarization enqueued. */
  sessionsDue: number;
  /** Of those, sessions with no summary at all. */
  sessionsNeverSummarized: number;
  /** Summarization and GDPR jobs the queue did not complete (waiting, active, delayed or failed), by kind and state; jobs held in the outbox count as waiting. */
  unfinishedJobs: Record<string, number>;
  /** exportsLost + sessionsNeverSummarized + every unfinished job. */
  jobsLost: number;
  anomalies: string[];
}

/**
 * Reads the state of the jobs: GDPR requests and sessions from the database (as its superuser, so
 * row-level security hides nothing), jobs from the run's queue in Redis.
 */
export async function auditJobs(options: {
  db: pg.Pool;
  queue: Queue;
  tenantId: string;
  exports: ExportRequest[];
  summarizationThreshold: number;
}): Promise<JobAudit> {
  const { db, queue, tenantId } = options;
  const { rows: requests } = await db.query<{ request_id: string; status: string; error_code: string | null }>(
    `SELECT request_id::text, status, error_code FROM gdpr_audit WHERE tenant_id = $1 AND action = 'export'`,
    [tenantId],
  );
  const statusOf = new Map(requests.map((r) => [r.request_id, r]));
  const accepted = options.exports.flatMap((e) => (e.requestId ? [e.requestId] : []));
  const acceptedSet = new Set(accepted);
  const anomalies: string[] = [];
  let exportsCompleted = 0;
  for (const id of accepted) {
    const row = statusOf.get(id);
    if (row?.status === 'completed') exportsCompleted++;
    else
      anomalies.push(`export ${id} accepted but ${row ? `${row.status}${row.error_code ? ` (${row.error_code})` : ''}` : 'not recorded'}`);
  }
  const unacknowledged = requests.filter((r) => !acceptedSet.has(r.request_id));
  const unacknowledgedNotCompleted = unacknowledged.filter((r) => r.status !== 'completed');
  for (const r of unacknowledgedNotCompleted) anomalies.push(`export ${r.request_id} never acknowledged, ${r.status}`);

  const { rows: sessions } = await db.query<{ session_id: string; turn_count: number; summary_through_turn: number | null }>(
    'SELECT session_id::text, turn_count, summary_through_turn FROM sessions WHERE tenant_id = $1 AND turn_count >= $2',
    [tenantId, options.summarizationThreshold],
  );
  const neverSummarized = sessions.filter((s) => s.summary_through_turn === null);
  for (const s of neverSummarized.slice(0, 10)) anomalies.push(`session ${s.session_id}: ${s.turn_count} turns, never summarized`);

  const unfinishedJobs: Record<string, number> = {};
  const jobs = await queue.getJobs([...UNFINISHED_STATES], 0, -1);
  for (const job of jobs) {
    // The cleanup schedule always has its next run delayed: it is not work the clients caused.
    if (!job || job.name === 'cleanup') continue;
    const state = await job.getState();
    unfinishedJobs[`${job.name} ${state}`] = (unfinishedJobs[`${job.name} ${state}`] ?? 0) + 1;
    if (anomalies.length < 30) anomalies.push(`job ${job.id} (${job.name}) ${state}${job.failedReason ? `: ${job.failedReason}` : ''}`);
  }
  const { rows: held } = await db.query<{ kind: string; n: number }>('SELECT kind, count(*)::int AS n FROM job_outbox GROUP BY kind');
  for (const { kind, n } of held) unfinishedJobs[`${kind} held`] = n;

  const exportsLost = accepted.length - exportsCompleted;
  return {
    exportsAccepted: accepted.length,
    exportsCompleted,
    exportsLost,
    exportsUnacknowledged: unacknowledged.length,
    exportsUnacknowledgedNotCompleted: unacknowledgedNotCompleted.length,
    sessionsDue: sessions.length,
    sessionsNeverSummarized: neverSummarized.length,
    unfinishedJobs,
    jobsLost: exportsLost + neverSummarized.length + Object.values(unfinishedJobs).reduce((a, b) => a + b, 0),
    anomalies,
  };
}

/**
 * Polls until no job is lost any more or `timeoutMs` has passed; returns the last audit. (Not for
 * unacknowledged export requests: one whose job was never enqueued would keep it waiting to the end.)
 */
export async function awaitJobs(audit: () => Promise<JobAudit>, timeoutMs: number): Promise<JobAudit & { waitedMs: number }> {
  const started = Date.now();
  for (;;) {
    const result = await audit();
    if (result.jobsLost === 0 || Date.now() - started >= timeoutMs) {
      return { ...result, waitedMs: Date.now() - started };
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}
