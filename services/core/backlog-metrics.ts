import client from 'prom-client';
import { countUnfinishedRequests } from '../db/repositories/gdpr.js';
import { countHeldJobs } from '../db/repositories/job-outbox.js';
import type { Queryable } from '../db/repositories/queryable.js';
import type { GdprAction } from '../model/gdpr.js';
import type { JobQueue } from './job-queue.js';
import type { Metrics } from './metrics.js';

const GDPR_ACTIONS: GdprAction[] = ['export', 'erase'];

export interface BacklogSources {
  queue: Pick<JobQueue, 'counts'>;
  /** The maintenance scope: the counts are of every tenant. */
  db: Queryable;
  /** Ages are read on it, and a reading is reused until it moved on by SAMPLE_EVERY_MS. */
  clock?: () => Date;
}

/**
 * Scrapes closer together than this reuse the last reading: the API's /metrics is public, so no
 * caller can make it read Redis and the database more often than that.
 */
export const SAMPLE_EVERY_MS = 15_000;

/**
 * What waits, as gauges read when scraped: the queue's jobs by state, jobs held in Postgres while
 * Redis is away (docs/worker.md), and GDPR requests not yet finished with the age of the oldest.
 * Every process that has the queue registers them (the API and the worker), so alert rules take the
 * max across pods (k8s/monitoring/prometheus-rule.yaml). A source that cannot be read leaves its
 * gauges without samples until it can: no stale value stands in for it.
 */
export function watchBacklog(metrics: Metrics, sources: BacklogSources): void {
  const clock = sources.clock ?? (() => new Date());
  const queueCounts = sampled(() => sources.queue.counts(), clock);
  const stored = sampled(async () => ({ held: await countHeldJobs(sources.db), gdpr: await countUnfinishedRequests(sources.db) }), clock);
  const registers = [metrics.registry];

  new client.Gauge({
    name: 'memorychat_queue_jobs',
    help: 'Jobs in the queue by state (waiting, prioritized, delayed, active, paused, failed, completed as far as kept), of every tenant',
    labelNames: ['state'],
    registers,
    async collect() {
      this.reset();
      const counts = await queueCounts();
      for (const [state, n] of Object.entries(counts ?? {})) this.set({ state }, n);
    },
  });
  new client.Gauge({
    name: 'memorychat_queue_held_jobs',
    help: 'Jobs held in Postgres because Redis did not take them, waiting to be handed over (job_outbox)',
    registers,
    async collect() {
      this.reset();
      const read = await stored();
      if (read) this.set(read.held);
    },
  });
  new client.Gauge({
    name: 'memorychat_gdpr_unfinished_requests',
    help: 'GDPR requests (action: export, erase) queued or running, of every tenant',
    labelNames: ['action'],
    registers,
    async collect() {
      this.reset();
      const read = await stored();
      for (const action of read ? GDPR_ACTIONS : []) this.set({ action }, read?.gdpr.find((r) => r.action === action)?.count ?? 0);
    },
  });
  new client.Gauge({
    name: 'memorychat_gdpr_oldest_unfinished_request_age_seconds',
    help: 'Age of the oldest GDPR request (action: export, erase) still queued or running; 0 when none is',
    labelNames: ['action'],
    registers,
    async collect() {
      this.reset();
      const read = await stored();
      const now = clock().getTime();
      for (const action of read ? GDPR_ACTIONS : []) {
        const oldest = read?.gdpr.find((r) => r.action === action)?.oldest;
        this.set({ action }, oldest ? Math.max(0, (now - oldest.getTime()) / 1000) : 0);
      }
    },
  });
}

/** `read` at most once per SAMPLE_EVERY_MS on `clock`; undefined when the last read failed. */
function sampled<T>(read: () => Promise<T>, clock: () => Date): () => Promise<T | undefined> {
  let last: { at: number; value: Promise<T | undefined> } | undefined;
  return () => {
    const now = clock().getTime();
    if (!last || Math.abs(now - last.at) >= SAMPLE_EVERY_MS) last = { at: now, value: read().catch(() => undefined) };
    return last.value;
  };
}
