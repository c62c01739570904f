import type { Config } from '../../config/config.js';
import type { JobQueue } from '../../core/jobs/job-queue.js';
import { InProcessQueue, type ParentLogger } from './in-process-queue.js';
import { createProcessors, type ProcessorDeps } from '../../core/jobs/processors.js';
import { BullJobQueue } from './bull-queue.js';

/**
 * BullMQ when REDIS_URL is set (a separate worker consumes; jobs wait in Postgres while Redis is
 * down); otherwise the in-process queue.
 */
export function createJobQueue(config: Config, deps: Omit<ProcessorDeps, 'queue' | 'config'>, log: ParentLogger): JobQueue {
  if (config.REDIS_URL) return new BullJobQueue({ ...config, REDIS_URL: config.REDIS_URL }, { outboxDb: deps.db.asMaintenance(), log });
  return new InProcessQueue({ config, log, processors: (queue) => createProcessors({ ...deps, config, queue }) });
}
