import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../core/config.js';
import type { JobQueue } from '../../core/job-queue.js';
import { startBullWorker } from '../../worker/bull-worker.js';
import { createJobQueue } from '../../worker/create-queue.js';
import { createProcessors, type ProcessorDeps } from '../../worker/processors.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Background jobs (DESIGN §7): BullMQ with REDIS_URL, in-process without. */
    queue: JobQueue;
  }
}

export interface QueuePluginOptions {
  config: Config;
  /** A queue made by the caller (tests); otherwise one is made from config. */
  queue?: JobQueue;
  processorDeps: Omit<ProcessorDeps, 'queue' | 'config'>;
  /**
   * Run the jobs of the BullMQ queue in this process too: for the embedded database, which no
   * separate worker process can open (docs/worker.md).
   */
  consume?: boolean;
}

/** Decorates `queue` and closes it with the app (in-process mode lets running jobs finish). */
export default fp(
  async function queuePlugin(app: FastifyInstance, options: QueuePluginOptions) {
    const { config } = options;
    const queue = options.queue ?? createJobQueue(config, options.processorDeps, app.log);
    const worker =
      options.consume && queue.mode === 'bullmq' && config.REDIS_URL
        ? startBullWorker({
            config: { ...config, REDIS_URL: config.REDIS_URL },
            processors: createProcessors({ ...options.processorDeps, config, queue }),
            log: app.log,
          })
        : undefined;
    if (worker) app.log.info({ concurrency: config.WORKER_CONCURRENCY }, 'this process runs the jobs of its BullMQ queue');
    app.decorate('queue', queue);
    // Running jobs finish before the queue closes, as in the worker process.
    app.addHook('onClose', async () => {
      await worker?.close();
      await queue.close();
    });
  },
  { name: 'queue' },
);
