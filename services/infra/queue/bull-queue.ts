import { randomUUID } from 'node:crypto';
import { type Job, type JobsOptions, Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import type { Config } from '../../config/config.js';
import {
  type EnqueueOptions,
  type FailedJobView,
  type JobKind,
  type JobLogger,
  type JobPayloads,
  type JobQueue,
  type JobState,
  QUEUE_NAME,
  visibleToTenant,
} from '../../core/job-queue.js';
import { type ClaimedJob, JobOutbox } from '../../core/jobs/job-outbox.js';
import { withTraceContext } from '../../core/tracing.js';
import type { Queryable } from '../../db/repositories/queryable.js';
import { AppError } from '../../model/errors.js';
import { redisConnection } from '../redis-connection.js';
import { jobPolicy } from './job-policy.js';

const STATES: JobState[] = ['waiting', 'active', 'delayed', 'completed', 'failed', 'paused', 'prioritized'];
/** States whose jobs can be removed; an active job is locked by its worker. */
const REMOVABLE = ['waiting', 'delayed', 'prioritized', 'paused', 'completed', 'failed', 'waiting-children'] as const;
const PAGE = 500;
export const CLEANUP_SCHEDULER_ID = 'memorychat-cleanup';
/** How long a call waits for a connection that is being made (not for one known to be down). */
const CONNECT_WAIT_MS = 1_000;

/** BullMQ job options for a kind: attempts, exponential backoff, retention, dedup. */
export function bullJobOptions<K extends JobKind>(kind: K, data: JobPayloads[K], config: Config): JobsOptions {
  const policy = jobPolicy(kind, data, config);
  return {
    attempts: policy.attempts,
    backoff: { type: 'exponential', delay: policy.backoffMs },
    removeOnComplete: {
      count: policy.keepCompleted.count,
      ...(policy.keepCompleted.ageSeconds ? { age: policy.keepCompleted.ageSeconds } : {}),
    },
    removeOnFail: { count: policy.keepFailed },
    ...(policy.jobId ? { jobId: policy.jobId } : {}),
    ...(policy.dedupKey ? { deduplication: { id: policy.dedupKey } } : {}),
  };
}

/**
 * The producer side on BullMQ (REDIS_URL set): the API enqueues here, `npm run worker` consumes.
 *
 * Nothing here waits on a Redis outage: while Redis is known to be down a call fails at once, a
 * connection being made is waited for briefly (BullMQ alone would wait for it forever), and a
 * command on a connection that stopped answering times out (redis-connection.ts).
 * A user's job that Redis does not take is held in Postgres (`outboxDb`) and handed over when Redis
 * is back, under the same job id, so a late add and the held copy make one job.
 */
export class BullJobQueue implements JobQueue {
  readonly mode = 'bullmq' as const;
  readonly queue: Queue;
  readonly outbox?: JobOutbox;
  private readonly redis: Redis | Cluster;
  private schedulesCleanup = false;
  /** A connection closed and none is ready since: calls fail without waiting. */
  private redisDown = false;
  private closing = false;

  constructor(
    private readonly config: Config & { REDIS_URL: string },
    private readonly options: {
      /** Where jobs wait while Redis is down: job bookkeeping, so the maintenance scope. Without it, such an enqueue fails. */
      outboxDb?: Queryable;
      log?: JobLogger;
    } = {},
  ) {
    // Our own connection, so its state can be read before every command (BullMQ only shares it).
    this.redis = redisConnection(config, 'producer');
    this.queue = new Queue(QUEUE_NAME, { connection: this.redis, prefix: config.QUEUE_PREFIX });
    // While Redis is down every reconnect attempt fails with an error event: the outage is logged
    // once, when the connection closes.
    this.queue.on('error', (err) => {
      if (this.redis.status === 'ready') options.log?.warn({ err }, 'the job queue reported an error');
    });
    this.redis.on('close', () => this.redisLost());
    this.redis.on('ready', () => this.redisReady());
    if (options.outboxDb) {
      this.outbox = new JobOutbox({ db: options.outboxDb, send: (job) => this.addHeld(job), log: options.log ?? silent });
      this.outbox.start();
    }
  }

  async enqueue<K extends JobKind>(kind: K, payload: JobPayloads[K], options: EnqueueOptions = {}): Promise<void> {
    const data = withTraceContext(payload);
    const policy = jobPolicy(kind, data, this.config);
    // Chosen before the first try, so a late add and the held copy make one job.
    const jobId = policy.jobId ?? `${kind}-${randomUUID()}`;
    try {
      await this.add(kind, data, jobId);
    } catch (err) {
      const owner = options.owner ?? ownerNamedIn(data);
      if (!this.outbox || !owner) throw err;
      await this.outbox.hold({ ...owner, jobId, kind, payload: data as Record<string, unknown>, dedupKey: policy.dedupKey });
    }
  }

  async counts(): Promise<Record<JobState, number>> {
    const counts = await this.read(() => this.queue.getJobCounts(...STATES));
    return Object.fromEntries(STATES.map((s) => [s, counts[s] ?? 0])) as Record<JobState, number>;
  }

  /** Reads the data of every retained job (bounded by removeOnComplete / removeOnFail) to see its tenant. */
  async tenantCounts(tenantId: string): Promise<Record<JobState, number>> {
    const counts = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<JobState, number>;
    for (const state of STATES) {
      for (let start = 0; ; start += PAGE) {
        const page = await this.read(() => this.queue.getJobs([state], start, start + PAGE - 1, true));
        counts[state] += page.filter((job) => job && visibleToTenant(job.data, tenantId)).length;
        if (page.length < PAGE) break;
      }
    }
    return counts;
  }

  async failed(limit: number): Promise<FailedJobView[]> {
    const jobs = await this.read(() => this.queue.getFailed(0, Math.max(0, limit - 1)));
    return jobs.filter(Boolean).map((job) => ({
      id: String(job.id),
      kind: job.name,
      data: (job.data ?? {}) as Record<string, unknown>,
      failedReason: job.failedReason ?? '',
      attemptsMade: job.attemptsMade,
      failedAt: job.finishedOn ? new Date(job.finishedOn).toISOString() : null,
    }));
  }

  /**
   * Removes the user's jobs held in Postgres and, in Redis, in every removable state. Job payloads
   * name users only for summarization (GDPR jobs carry a request id), so this scans by payload; it
   * reads every retained job, which the removeOnComplete/removeOnFail limits keep bounded.
   */
  async removeUserJobs(tenantId: string, userId: string): Promise<number> {
    let removed = (await this.outbox?.removeUserJobs(tenantId, userId)) ?? 0;
    await this.redisUp();
    const matching: Job[] = [];
    for (let start = 0; ; start += PAGE) {
      const page = await this.queue.getJobs([...REMOVABLE], start, start + PAGE - 1, true);
      for (const job of page) {
        if (job && job.data?.tenantId === tenantId && job.data?.userId === userId) matching.push(job);
      }
      if (page.length < PAGE) break;
    }
    for (const job of matching) {
      try {
        await job.remove();
        removed += 1;
      } catch {
        // It became active meanwhile: it finds the session gone and does nothing.
      }
    }
    return removed;
  }

  /**
   * Registers the repeatable cleanup (idempotent: the API and every worker may call it), now if
   * Redis is up, else when it connects; again on every reconnect, in case Redis lost its data.
   */
  async start(): Promise<void> {
    this.schedulesCleanup = true;
    if (
      await this.redisUp().then(
        () => true,
        () => false,
      )
    )
      await this.registerCleanup();
  }

  async close(): Promise<void> {
    this.closing = true;
    this.schedulesCleanup = false;
    await this.outbox?.stop();
    await this.queue.close();
    this.redis.disconnect();
  }

  private redisLost() {
    if (this.closing || this.redisDown) return;
    this.redisDown = true;
    this.options.log?.warn({}, 'Redis is unavailable: jobs of users are held in Postgres until it is back');
  }

  private redisReady() {
    if (this.redisDown) this.options.log?.info({}, 'Redis is back: handing held jobs over');
    this.redisDown = false;
    if (this.schedulesCleanup) {
      this.registerCleanup().catch((err) => this.options.log?.warn({ err }, 'registering the cleanup schedule failed'));
    }
    this.outbox?.kick();
  }

  private async registerCleanup() {
    await this.queue.upsertJobScheduler(
      CLEANUP_SCHEDULER_ID,
      { every: this.config.cleanupIntervalMs },
      { name: 'cleanup', data: {}, opts: bullJobOptions('cleanup', {}, this.config) },
    );
  }

  private async add<K extends JobKind>(kind: K, data: JobPayloads[K], jobId: string) {
    await this.redisUp();
    await this.queue.add(kind, data, { ...bullJobOptions(kind, data, this.config), jobId });
  }

  private addHeld(job: ClaimedJob) {
    return this.add(job.kind as JobKind, job.payload as JobPayloads[JobKind], job.jobId);
  }

  private async read<T>(query: () => Promise<T>): Promise<T> {
    await this.redisUp();
    try {
      return await query();
    } catch (err) {
      throw new AppError('queue-unavailable', 'the job queue (Redis) did not answer; please retry', { cause: err });
    }
  }

  /** Connected now, or within CONNECT_WAIT_MS if a connection is being made and none has failed yet. */
  private async redisUp(): Promise<void> {
    if (this.redis.status === 'ready') return;
    const unavailable = () => new AppError('queue-unavailable', 'the job queue (Redis) is not connected; please retry');
    if (this.redisDown) throw unavailable();
    await new Promise<void>((resolve, reject) => {
      const done = (err?: Error) => {
        clearTimeout(timer);
        this.redis.off('ready', onReady).off('close', onClose);
        if (err) reject(err);
        else resolve();
      };
      const onReady = () => done();
      const onClose = () => done(unavailable());
      const timer = setTimeout(onClose, CONNECT_WAIT_MS);
      this.redis.once('ready', onReady).once('close', onClose);
    });
  }
}

/** A summarization names its user; a GDPR job does not (its caller passes the owner). */
function ownerNamedIn(data: object): { tenantId: string; userId: string } | undefined {
  const { tenantId, userId } = data as { tenantId?: unknown; userId?: unknown };
  return typeof tenantId === 'string' && typeof userId === 'string' ? { tenantId, userId } : undefined;
}

const silent: JobLogger = { info() {}, warn() {}, error() {} };
