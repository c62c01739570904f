import { hostname } from 'node:os';
import { UnrecoverableError, Worker } from 'bullmq';
import type { Config } from '../../config/config.js';
import { type JobKind, PermanentJobError, type Processors, QUEUE_NAME } from '../../core/job-queue.js';
import { redisConnection, redisOptions } from '../redis-connection.js';
import type { ParentLogger } from './in-process-queue.js';

const LOCK_DURATION_MS = 15_000;
const STALLED_CHECK_INTERVAL_MS = 5_000;

/**
 * A BullMQ worker running the processors: a child logger per job, PermanentJobError mapped to
 * UnrecoverableError (no retry for bad input), WORKER_CONCURRENCY jobs at a time.
 * `worker.close()` waits for running jobs to finish: that is the graceful shutdown.
 */
export function startBullWorker(options: { config: Config & { REDIS_URL: string }; processors: Processors; log: ParentLogger }): Worker {
  const { config, processors, log } = options;
  // BullMQ makes its own connections from options, but takes a Redis Cluster only as a client (which
  // it duplicates for its blocking reads and leaves to its owner to close).
  const cluster = config.REDIS_CLUSTER ? redisConnection(config, 'worker') : undefined;
  const worker = new Worker(
    QUEUE_NAME,
    async (job) => {
      const processor = processors[job.name as JobKind] as ((data: unknown, ctx: unknown) => Promise<unknown>) | undefined;
      if (!processor) throw new UnrecoverableError(`unknown job kind "${job.name}"`);
      const attempt = job.attemptsMade + 1;
      const jobLog = log.child({ job_id: job.id, job: job.name, attempt });
      try {
        return await processor(job.data, {
          jobId: String(job.id),
          attempt,
          finalAttempt: attempt >= (job.opts.attempts ?? 1),
          log: jobLog,
        });
      } catch (err) {
        jobLog.warn({ err }, 'job failed');
        if (err instanceof PermanentJobError) throw new UnrecoverableError(err.message);
        throw err;
      }
    },
    {
      connection: cluster ?? redisOptions(config.REDIS_URL, 'worker'),
      prefix: config.QUEUE_PREFIX,
      // Recorded on each job it takes (processedBy) and on its Redis connections: which worker, of
      // which pod, was running a job that stalled (test/api/server/fleet-soak.test.ts kills that one).
      name: `${hostname()}:${process.pid}`,
      concurrency: config.WORKER_CONCURRENCY,
      // A worker that dies without closing (SIGKILL, OOM, a lost node) leaves its jobs active until
      // their lock expires and a stalled-job check moves them back to wait: with BullMQ's defaults
      // (lock 30 s, a check every 30 s) that took 50-72 s in the fleet soak; with these at most
      // lock + 2 checks, about 25 s. The lock is renewed every 7.5 s, on a timer: the processors await
      // I/O and never hold the event loop for seconds, so a live job does not lose its lock.
      lockDuration: LOCK_DURATION_MS,
      stalledInterval: STALLED_CHECK_INTERVAL_MS,
    },
  );
  worker.on('error', (err) => log.error({ err }, 'worker error'));
  if (cluster) worker.on('closed', () => cluster.disconnect());
  return worker;
}
