import { UnrecoverableError, Worker } from 'bullmq';
import type { Config } from '../../config/config.js';
import { PermanentJobError, QUEUE_NAME, type JobKind, type Processors } from '../../core/jobs/job-queue.js';
import type { ParentLogger } from './in-process-queue.js';
import { redisOptions } from '../redis-connection.js';

/**
 * A BullMQ worker running the processors: a child logger per job, PermanentJobError mapped to
 * UnrecoverableError (no retry for bad input), WORKER_CONCURRENCY jobs at a time.
 * `worker.close()` waits for running jobs to finish: that is the graceful shutdown.
 */
export function startBullWorker(options: {
  config: Config & { REDIS_URL: string };
  processors: Processors;
  log: ParentLogger;
}): Worker {
  const { config, processors, log } = options;
  const worker = new Worker(
    QUEUE_NAME,
    async (job) => {
      const processor = processors[job.name as JobKind] as ((data: unknown, ctx: unknown) => Promise<unknown>) | undefined;
      if (!processor) throw new UnrecoverableError(`unknown job kind "${job.name}"`);
      const attempt = job.attemptsMade + 1;
      const jobLog = log.child({ job_id: job.id, job: job.name, attempt });
      try {
        return await processor(job.data, { jobId: String(job.id), attempt, finalAttempt: attempt >= (job.opts.attempts ?? 1), log: jobLog });
      } catch (err) {
        jobLog.warn({ err }, 'job failed');
        if (err instanceof PermanentJobError) throw new UnrecoverableError(err.message);
        throw err;
      }
    },
    {
      connection: redisOptions(config.REDIS_URL, 'worker'),
      prefix: config.QUEUE_PREFIX,
      concurrency: config.WORKER_CONCURRENCY,
    },
  );
  worker.on('error', (err) => log.error({ err }, 'worker error'));
  return worker;
}
