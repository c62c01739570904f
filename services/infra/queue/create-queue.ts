import type { Config } from '../../config/config.js';
import type { JobQueue, Processors } from '../../core/job-queue.js';
import type { Queryable } from '../../db/repositories/queryable.js';
import { InProcessQueue, type ParentLogger } from './in-process-queue.js';

/**
 * BullMQ when REDIS_URL is set (a separate worker consumes; jobs wait in Postgres while Redis is
 * down); otherwise the in-process queue, which runs `processors` itself. BullMQ and its Redis client
 * (~15 MB) are loaded only when used.
 */
export async function createJobQueue(
  config: Config,
  options: {
    /** Job bookkeeping across users (the maintenance scope): where jobs wait while Redis is down. */
    outboxDb: Queryable;
    log: ParentLogger;
    processors: (queue: JobQueue) => Processors;
  },
): Promise<JobQueue> {
  if (config.REDIS_URL) {
    const { BullJobQueue } = await import('./bull-queue.js');
    return new BullJobQueue({ ...config, REDIS_URL: config.REDIS_URL }, { outboxDb: options.outboxDb, log: options.log });
  }
  return new InProcessQueue({ config, log: options.log, processors: options.processors });
}
