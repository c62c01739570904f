import { inUserBatches, type UserFilter } from './per-user-batches.js';
import type { Queryable } from './queryable.js';

/** A job held in Postgres until Redis takes it (migration 006). */
export interface HeldJob {
  tenantId: string;
  userId: string;
  jobId: string;
  kind: string;
  payload: Record<string, unknown>;
  dedupKey?: string;
}

export interface ClaimedJob extends HeldJob {
  createdAt: Date;
  attempts: number;
}

type JobKey = Pick<HeldJob, 'tenantId' | 'userId' | 'jobId'>;

/** Holds a job; false when a job with its dedup key (or its id) is already held. */
export async function insertHeldJob(db: Queryable, job: HeldJob): Promise<boolean> {
  const { rowCount } = await db.query(
    `INSERT INTO job_outbox (tenant_id, user_id, job_id, kind, payload, dedup_key)
     VALUES ($1, $2, $3, $4, $5::jsonb, $6)
     ON CONFLICT DO NOTHING`,
    [job.tenantId, job.userId, job.jobId, job.kind, JSON.stringify(job.payload), job.dedupKey ?? null],
  );
  return rowCount === 1;
}

/** Jobs held, of every user: the queue's backlog while Redis is away (services/core/backlog-metrics.ts). */
export async function countHeldJobs(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ held: number }>('SELECT count(*)::int AS held FROM job_outbox');
  return rows[0]?.held ?? 0;
}

/**
 * Claims up to `limit` of the oldest unclaimed (or abandoned) jobs of every user for `leaseMs`: the
 * dispatcher's scan, the one cross-user statement here. SKIP LOCKED and the lease keep two
 * dispatchers off the same rows; the database's clock decides, so processes need not agree on time.
 */
export async function claimHeldJobs(db: Queryable, limit: number, leaseMs: number): Promise<ClaimedJob[]> {
  const claim = (byUser: UserFilter) => `WITH c AS MATERIALIZED (SELECT tenant_id, user_id, job_id FROM job_outbox
           WHERE (claimed_until IS NULL OR claimed_until < now()) ${byUser('job_outbox.tenant_id', 'job_outbox.user_id')}
           ORDER BY created_at
           LIMIT $1
           FOR UPDATE SKIP LOCKED)
     UPDATE job_outbox o SET claimed_until = now() + $2::float8 * interval '1 millisecond', attempts = o.attempts + 1
     FROM c
     WHERE o.tenant_id = c.tenant_id AND o.user_id = c.user_id AND o.job_id = c.job_id ${byUser('o.tenant_id', 'o.user_id')}
     RETURNING o.tenant_id, o.user_id, o.job_id, o.kind, o.payload, o.dedup_key, o.created_at, o.attempts`;
  const rows: ClaimedRow[] = [];
  // On Citus, per user with claimable jobs, oldest first (per-user-batches.ts).
  await inUserBatches(
    db,
    limit,
    `SELECT tenant_id, user_id FROM job_outbox WHERE claimed_until IS NULL OR claimed_until < now()
     GROUP BY tenant_id, user_id ORDER BY min(created_at) LIMIT $1`,
    [limit],
    async (byUser, remaining) => {
      const claimed = await db.query<ClaimedRow>(claim(byUser), [remaining, leaseMs]);
      rows.push(...claimed.rows);
      return claimed.rows.length;
    },
  );
  return rows
    .map((r) => ({
      tenantId: r.tenant_id,
      userId: r.user_id,
      jobId: r.job_id,
      kind: r.kind,
      payload: r.payload,
      ...(r.dedup_key ? { dedupKey: r.dedup_key } : {}),
      createdAt: r.created_at,
      attempts: r.attempts,
    }))
    .sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
}

interface ClaimedRow {
  tenant_id: string;
  user_id: string;
  job_id: string;
  kind: string;
  payload: Record<string, unknown>;
  dedup_key: string | null;
  created_at: Date;
  attempts: number;
}

/** Gives claimed jobs back at once (Redis refused them), so the next pass need not wait out the lease. */
export async function releaseHeldJobs(db: Queryable, jobs: JobKey[]): Promise<void> {
  if (!jobs.length) return;
  await db.query(
    `UPDATE job_outbox o SET claimed_until = NULL
     FROM unnest($1::text[], $2::text[], $3::text[]) AS k(tenant_id, user_id, job_id)
     WHERE o.tenant_id = k.tenant_id AND o.user_id = k.user_id AND o.job_id = k.job_id`,
    [jobs.map((j) => j.tenantId), jobs.map((j) => j.userId), jobs.map((j) => j.jobId)],
  );
}

/** The job is in Redis now. */
export async function deleteHeldJob(db: Queryable, job: JobKey): Promise<void> {
  await db.query('DELETE FROM job_outbox WHERE tenant_id = $1 AND user_id = $2 AND job_id = $3', [job.tenantId, job.userId, job.jobId]);
}

/**
 * GDPR erase: the user's held jobs whose payload names them (summarizations). GDPR jobs carry only
 * a request id and stay, so the requests they serve still finish.
 */
export async function deleteUserHeldJobs(db: Queryable, tenantId: string, userId: string): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM job_outbox WHERE tenant_id = $1 AND user_id = $2 AND payload->>'userId' = $2`, [
    tenantId,
    userId,
  ]);
  return rowCount ?? 0;
}
