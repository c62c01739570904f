import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { JobQueue } from '../../core/jobs/job-queue.js';
import { createJobQueue } from '../../infra/queue/create-queue.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Background jobs (docs/design.md §7): BullMQ with REDIS_URL, in-process without. */
    queue: JobQueue;
  }
}

/**
 * Decorates `queue` and closes it with the app (in-process mode lets running jobs finish). Without
 * Redis the jobs run here, with the processors of `app.memory` (asked for at the first job, since
 * the memory is made with this queue).
 */
export default fp(
  async function queuePlugin(app: FastifyInstance, options: { queue?: JobQueue }) {
    const queue =
      options.queue ??
      createJobQueue(app.config, { outboxDb: app.db.asMaintenance(), log: app.log, processors: () => app.memory.processors });
    app.decorate('queue', queue);
    app.addHook('onClose', async () => queue.close());
  },
  { name: 'queue' },
);
