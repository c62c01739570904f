import type { Worker } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { watchBacklog } from '../../core/backlog-metrics.js';
import type { JobQueue } from '../../core/job-queue.js';
import { createProcessors, type ProcessorDeps } from '../../core/jobs/processors.js';
import { createJobQueue } from '../../infra/queue/create-queue.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Background jobs (docs/design.md §7): BullMQ with REDIS_URL, in-process without. */
    queue: JobQueue;
  }
}

export interface QueuePluginOptions {
  /** A queue made by the caller (tests); otherwise one is made from config. */
  queue?: JobQueue;
  /**
   * Run the jobs of the BullMQ queue in this process too: for the embedded database, which no
   * separate worker process can open (docs/worker.md).
   */
  consume?: boolean;
  /** The providers and clock the job processors run with, beside the app's config, database and metrics. */
  processorParts: Pick<ProcessorDeps, 'embedder' | 'summaryLlm'> & { clock?: () => Date };
}

/**
 * Decorates `queue` and closes it with the app (running jobs finish first, as in the worker process).
 * Jobs that run in this process (no Redis, or `consume`) run with processors made here with this
 * queue (the in-process queue makes them when the first job runs); the memory façade is not needed for them.
 */
export default fp(
  async function queuePlugin(app: FastifyInstance, options: QueuePluginOptions) {
    const { config } = app;
    const { clock = () => new Date(), ...parts } = options.processorParts;
    const processors = (queue: JobQueue) => createProcessors({ ...parts, clock, config, db: app.db, queue, metrics: app.metrics });
    const queue = options.queue ?? (await createJobQueue(config, { outboxDb: app.db.asMaintenance(), log: app.log, processors }));
    let worker: Worker | undefined;
    if (options.consume && queue.mode === 'bullmq' && config.REDIS_URL) {
      const redisUrl = config.REDIS_URL;
      app.addHook('onReady', async () => {
        const { startBullWorker } = await import('../../infra/queue/bull-worker.js');
        worker = startBullWorker({ config: { ...config, REDIS_URL: redisUrl }, processors: processors(queue), log: app.log });
        app.log.info({ concurrency: config.WORKER_CONCURRENCY }, 'this process runs the jobs of its BullMQ queue');
      });
    }
    app.decorate('queue', queue);
    watchBacklog(app.metrics, { queue, db: app.db.asMaintenance(), clock });
    app.addHook('onClose', async () => {
      await worker?.close();
      await queue.close();
    });
  },
  { name: 'queue', dependencies: ['metrics'] },
);
