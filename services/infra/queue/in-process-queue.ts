import { randomUUID } from 'node:crypto';
import type { Config } from '../../config/config.js';
import {
  type FailedJobView,
  type JobKind,
  type JobLogger,
  type JobPayloads,
  type JobQueue,
  type JobState,
  PermanentJobError,
  type Processors,
  visibleToTenant,
} from '../../core/job-queue.js';
import { withTraceContext } from '../../core/tracing.js';
import { type JobPolicy, jobPolicy } from './job-policy.js';

export type ParentLogger = JobLogger & { child(bindings: Record<string, unknown>): JobLogger };

interface Entry {
  id: string;
  kind: JobKind;
  data: Record<string, unknown>;
  policy: JobPolicy;
  attempt: number;
}

const FAILED_KEPT = 1000;

/**
 * The queue without Redis (docs/design.md §7, the embedded default): the same processors, run inside the
 * API process with the same retries and backoff, a concurrency limit, one summarization per
 * session at a time, and a timer for the repeatable cleanup. Jobs live in memory, so a restart
 * forgets queued work; the next turn, cleanup tick or start re-creates what matters.
 */
export class InProcessQueue implements JobQueue {
  readonly mode = 'in-process' as const;
  private readonly pending: Entry[] = [];
  private readonly delayed = new Map<Entry, NodeJS.Timeout>();
  private readonly running = new Map<Entry, Promise<void>>();
  private readonly dedup = new Set<string>();
  private readonly failedJobs: (FailedJobView & { entry: Entry })[] = [];
  private completed = 0;
  /** Completed jobs per tenant, `undefined` for system jobs: the tenant admin's counts. */
  private readonly completedByTenant = new Map<unknown, number>();
  private timer?: NodeJS.Timeout;
  private closed = false;
  private processors?: Processors;

  constructor(
    private readonly options: {
      config: Config;
      log: ParentLogger;
      /**
       * Asked for at the first job, not here: erase removes queued jobs through this queue, so the
       * processors (services/core/jobs/processors.ts) are made with it, after it.
       */
      processors: (queue: InProcessQueue) => Processors;
    },
  ) {}

  async enqueue<K extends JobKind>(kind: K, data: JobPayloads[K]): Promise<void> {
    if (this.closed) throw new Error('the queue is closed');
    const policy = jobPolicy(kind, data, this.options.config);
    const key = policy.dedupKey ?? policy.jobId;
    if (key && this.dedup.has(key)) return;
    if (key) this.dedup.add(key);
    this.pending.push({
      id: policy.jobId ?? randomUUID(),
      kind,
      data: withTraceContext(data) as Record<string, unknown>,
      policy,
      attempt: 0,
    });
    this.pump();
  }

  async counts(): Promise<Record<JobState, number>> {
    return {
      waiting: this.pending.length,
      active: this.running.size,
      delayed: this.delayed.size,
      completed: this.completed,
      failed: this.failedJobs.length,
      paused: 0,
      prioritized: 0,
    };
  }

  async tenantCounts(tenantId: string): Promise<Record<JobState, number>> {
    const visible = (entries: Iterable<Entry>) => [...entries].filter((e) => visibleToTenant(e.data, tenantId)).length;
    return {
      waiting: visible(this.pending),
      active: visible(this.running.keys()),
      delayed: visible(this.delayed.keys()),
      completed: (this.completedByTenant.get(tenantId) ?? 0) + (this.completedByTenant.get(undefined) ?? 0),
      failed: visible(this.failedJobs.map((f) => f.entry)),
      paused: 0,
      prioritized: 0,
    };
  }

  async failed(limit: number): Promise<FailedJobView[]> {
    return this.failedJobs
      .slice(-limit)
      .reverse()
      .map(({ entry: _entry, ...view }) => view);
  }

  async removeUserJobs(tenantId: string, userId: string): Promise<number> {
    const isUsers = (e: Entry) => e.data.tenantId === tenantId && e.data.userId === userId;
    let removed = 0;
    for (let i = this.pending.length - 1; i >= 0; i--) {
      if (isUsers(this.pending[i]!)) {
        this.release(this.pending.splice(i, 1)[0]!);
        removed += 1;
      }
    }
    for (const [entry, timer] of this.delayed) {
      if (!isUsers(entry)) continue;
      clearTimeout(timer);
      this.delayed.delete(entry);
      this.release(entry);
      removed += 1;
    }
    for (let i = this.failedJobs.length - 1; i >= 0; i--) {
      if (isUsers(this.failedJobs[i]!.entry)) {
        this.failedJobs.splice(i, 1);
        removed += 1;
      }
    }
    return removed;
  }

  async start(): Promise<void> {
    if (this.timer || this.closed) return;
    this.timer = setInterval(() => void this.enqueue('cleanup', {}).catch(() => {}), this.options.config.cleanupIntervalMs);
    this.timer.unref();
  }

  /** Stops taking jobs, drops what waits, and lets running jobs finish. */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    for (const timer of this.delayed.values()) clearTimeout(timer);
    this.delayed.clear();
    this.pending.length = 0;
    await Promise.allSettled([...this.running.values()]);
  }

  private pump() {
    while (!this.closed && this.running.size < this.options.config.WORKER_CONCURRENCY && this.pending.length) {
      const entry = this.pending.shift()!;
      const run = this.run(entry).finally(() => {
        this.running.delete(entry);
        this.pump();
      });
      this.running.set(entry, run);
    }
  }

  private async run(entry: Entry) {
    entry.attempt += 1;
    const finalAttempt = entry.attempt >= entry.policy.attempts;
    const log = this.options.log.child({ job_id: entry.id, job: entry.kind, attempt: entry.attempt });
    this.processors ??= this.options.processors(this);
    const processor = this.processors[entry.kind] as (data: unknown, ctx: unknown) => Promise<unknown>;
    try {
      await processor(entry.data, { jobId: entry.id, attempt: entry.attempt, finalAttempt, log });
      this.completed += 1;
      this.completedByTenant.set(entry.data.tenantId, (this.completedByTenant.get(entry.data.tenantId) ?? 0) + 1);
      this.release(entry);
    } catch (err) {
      const permanent = err instanceof PermanentJobError;
      log.warn({ err, permanent, finalAttempt }, 'job failed');
      if (permanent || finalAttempt || this.closed) {
        this.failedJobs.push({
          entry,
          id: entry.id,
          kind: entry.kind,
          data: entry.data,
          failedReason: (err as Error).message,
          attemptsMade: entry.attempt,
          failedAt: new Date().toISOString(),
        });
        if (this.failedJobs.length > Math.min(FAILED_KEPT, entry.policy.keepFailed)) this.failedJobs.shift();
        this.release(entry);
        return;
      }
      const delay = entry.policy.backoffMs * 2 ** (entry.attempt - 1);
      const timer = setTimeout(() => {
        this.delayed.delete(entry);
        this.pending.push(entry);
        this.pump();
      }, delay);
      this.delayed.set(entry, timer);
    }
  }

  private release(entry: Entry) {
    const key = entry.policy.dedupKey ?? entry.policy.jobId;
    if (key) this.dedup.delete(key);
  }
}
