/**
 * The background jobs of docs/design.md §7 and the queue the API and the worker share. Two implementations
 * live in services/worker: BullMQ (REDIS_URL set) and in-process (no Redis). Core code only sees
 * this interface, so it has no BullMQ import.
 */
export interface JobPayloads {
  cleanup: Record<string, never>;
  summarize: { tenantId: string; userId: string; sessionId: string };
  /** GDPR jobs carry only the request id: the subject is read from the audit row, so no user id sits in Redis. */
  'gdpr-export': { tenantId: string; requestId: string };
  'gdpr-erase': { tenantId: string; requestId: string };
  're-embed': { modelId: string };
}

export type JobKind = keyof JobPayloads;
export const JOB_KINDS: JobKind[] = ['cleanup', 'summarize', 'gdpr-export', 'gdpr-erase', 're-embed'];

export const QUEUE_NAME = 'memorychat';

export type JobState = 'waiting' | 'active' | 'delayed' | 'completed' | 'failed' | 'paused' | 'prioritized';

export interface FailedJobView {
  id: string;
  kind: string;
  /** Ids only (tenant, session, request): job payloads never hold content. */
  data: Record<string, unknown>;
  failedReason: string;
  attemptsMade: number;
  failedAt: string | null;
}

export interface EnqueueOptions {
  /**
   * The user the job concerns, when its payload does not name one (a GDPR job names only its
   * request). Lets the BullMQ queue hold the job in Postgres, under that user, while Redis is down.
   */
  owner?: { tenantId: string; userId: string };
}

export interface JobQueue {
  readonly mode: 'bullmq' | 'in-process';
  /**
   * Queues a job. On BullMQ, a job of a user that Redis does not take within a short bound is held
   * in Postgres and enqueued once Redis is back (docs/worker.md): the caller never waits on an outage.
   */
  enqueue<K extends JobKind>(kind: K, data: JobPayloads[K], options?: EnqueueOptions): Promise<void>;
  /** Jobs per state, of every tenant: for readiness and metrics. */
  counts(): Promise<Record<JobState, number>>;
  /**
   * Jobs per state that a tenant's admin may see: the tenant's own and the system's (cleanup,
   * re-embedding, which name no tenant), as the dead-letter view shows them. Completed and failed
   * jobs count as far as they are retained.
   */
  tenantCounts(tenantId: string): Promise<Record<JobState, number>>;
  /** The dead-letter view: jobs that used up their attempts, newest first. */
  failed(limit: number): Promise<FailedJobView[]>;
  /** Removes every not-running job whose payload names this user (GDPR erase). Returns how many. */
  removeUserJobs(tenantId: string, userId: string): Promise<number>;
  /** Starts the repeatable cleanup where this queue owns scheduling (in-process mode). */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** A job a tenant's admin may see: the tenant's own, or a system job, which names no tenant. */
export function visibleToTenant(data: { tenantId?: unknown } | undefined, tenantId: string): boolean {
  return data?.tenantId === undefined || data.tenantId === tenantId;
}

/** Thrown by processors for input that no retry can fix; BullMQ maps it to UnrecoverableError. */
export class PermanentJobError extends Error {
  override name = 'PermanentJobError';
}

/** What a processor gets besides its payload: a per-job logger and the attempt number (1-based). */
export interface JobContext {
  jobId: string;
  attempt: number;
  /** No retry follows if this attempt fails. */
  finalAttempt: boolean;
  log: JobLogger;
}

export interface JobLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

export type Processors = { [K in JobKind]: (data: JobPayloads[K], ctx: JobContext) => Promise<unknown> };
