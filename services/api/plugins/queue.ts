import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config/config.js';
import type { JobQueue } from '../../core/jobs/job-queue.js';
import { createJobQueue } from '../../infra/queue/create-queue.js';
import type { ProcessorDeps } from '../../core/jobs/processors.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Background jobs (docs/design.md §7): BullMQ with REDIS_URL, in-process without. */
    queue: JobQueue;
  }
}

export interface QueuePluginOptions {
  config: Config;
  /** A queue made by the caller (tests); otherwise one is made from config. */
  queue?: JobQueue;
  processorDeps: Omit<ProcessorDeps, 'queue' | 'config'>;
}

/** Decorates `queue` and closes it with the app (in-process mode lets running jobs finish). */
export default fp(
  async function queuePlugin(app: FastifyInstance, options: QueuePluginOptions) {
    const queue = options.queue ?? createJobQueue(options.config, options.processorDeps, app.log);
    app.decorate('queue', queue);
    app.addHook('onClose', async () => queue.close());
  },
  { name: 'queue' },
);
