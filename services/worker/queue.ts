import { Queue, type Job, type JobsOptions } from 'bullmq';
import type { Config } from '../core/config.js';
import {
  QUEUE_NAME,
  type FailedJobView,
  type JobKind,
  type JobPayloads,
  type JobQueue,
  type JobState,
} from '../core/job-queue.js';
import { jobPolicy } from './job-policy.js';
import { redisOptions } from './redis-connection.js';

const STATES: JobState[] = ['waiting', 'active', 'delayed', 'completed', 'failed', 'paused', 'prioritized'];
/** States whose jobs can be removed; an active job is locked by its worker. */
const REMOVABLE = ['waiting', 'delayed', 'prioritized', 'paused', 'completed', 'failed', 'waiting-children'] as const;
const PAGE = 500;
export const CLEANUP_SCHEDULER_ID = 'memorychat-cleanup';

/** BullMQ job options for a kind: attempts, exponential backoff, retention, dedup. */
export function bullJobOptions<K extends JobKind>(kind: K, data: JobPayloads[K], config: Config): JobsOptions {
  const policy = jobPolicy(kind, data, config);
  return {
    attempts: policy.attempts,
    backoff: { type: 'exponential', delay: policy.backoffMs },
    removeOnComplete: { count: policy.keepCompleted.count, ...(policy.keepCompleted.ageSeconds ? { age: policy.keepCompleted.ageSeconds } : {}) },
    removeOnFail: { count: policy.keepFailed },
    ...(policy.jobId ? { jobId: policy.jobId } : {}),
    ...(policy.dedupKey ? { deduplication: { id: policy.dedupKey } } : {}),
  };
}

/** The producer side on BullMQ (REDIS_URL set): the API enqueues here, `npm run worker` consumes. */
export class BullJobQueue implements JobQueue {
  readonly mode = 'bullmq' as const;
  readonly queue: Queue;

  constructor(private readonly config: Config & { REDIS_URL: string }) {
    this.queue = new Queue(QUEUE_NAME, { connection: redisOptions(config.REDIS_URL, 'producer'), prefix: config.QUEUE_PREFIX });
  }

  async enqueue<K extends JobKind>(kind: K, data: JobPayloads[K]): Promise<void> {
    await this.queue.waitUntilReady();
    await this.queue.add(kind, data, bullJobOptions(kind, data, this.config));
  }

  async counts(): Promise<Record<JobState, number>> {
    const counts = await this.queue.getJobCounts(...STATES);
    return Object.fromEntries(STATES.map((s) => [s, counts[s] ?? 0])) as Record<JobState, number>;
  }

  async failed(limit: number): Promise<FailedJobView[]> {
    const jobs = await this.queue.getFailed(0, Math.max(0, limit - 1));
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
   * Removes the user's jobs in every removable state. Job payloads name users only for
   * summarization (GDPR jobs carry a request id), so this scans by payload; it reads every
   * retained job, which the removeOnComplete/removeOnFail limits keep bounded.
   */
  async removeUserJobs(tenantId: string, userId: string): Promise<number> {
    await this.queue.waitUntilReady();
    const matching: Job[] = [];
    for (let start = 0; ; start += PAGE) {
      const page = await this.queue.getJobs([...REMOVABLE], start, start + PAGE - 1, true);
      for (const job of page) {
        if (job && job.data?.tenantId === tenantId && job.data?.userId === userId) matching.push(job);
      }
      if (page.length < PAGE) break;
    }
    let removed = 0;
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

  /** Registers the repeatable cleanup (idempotent: the API and every worker may call it). */
  async start(): Promise<void> {
    await this.queue.waitUntilReady();
    await this.queue.upsertJobScheduler(
      CLEANUP_SCHEDULER_ID,
      { every: this.config.cleanupIntervalMs },
      { name: 'cleanup', data: {}, opts: bullJobOptions('cleanup', {}, this.config) },
    );
  }

  async close(): Promise<void> {
    await this.queue.close();
  }
}
