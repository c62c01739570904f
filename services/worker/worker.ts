// `npm run worker`: the BullMQ worker process (docs/design.md §7). It shares services/core with the API and
// needs REDIS_URL; without Redis the API runs the same processors in-process instead.
import closeWithGrace from 'close-with-grace';
import { pino } from 'pino';
import { type Config, ConfigError, loadConfig } from '../config/config.js';
import { watchBacklog } from '../core/backlog-metrics.js';
import { createProcessors } from '../core/jobs/processors.js';
import { enqueueReEmbeddingIfNeeded } from '../core/jobs/re-embedding.js';
import { createMetrics } from '../core/metrics.js';
import { EmbeddedDatabaseInUseError } from '../db/embedded/embedded-postgres.js';
import { migrate } from '../db/migrate.js';
import { openDatabase } from '../db/pool.js';
import { loggerOptions } from '../infra/logger-options.js';
import { BullJobQueue } from '../infra/queue/bull-queue.js';
import { startBullWorker } from '../infra/queue/bull-worker.js';
import { startTracing } from '../infra/tracing.js';
import { createEmbedder } from '../providers/embeddings/index.js';
import { createSummaryLlm } from '../providers/llm/summary-llm.js';
import { startWorkerHttp } from './worker-http.js';

let config: Config & { REDIS_URL: string };
try {
  const loaded = loadConfig(process.env);
  if (!loaded.REDIS_URL) throw new ConfigError('REDIS_URL: required by the worker (without Redis, the API runs jobs in-process)');
  config = loaded as Config & { REDIS_URL: string };
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  console.error(`memorychat worker: ${err.message}`);
  process.exit(1);
}

const log = pino({ ...loggerOptions(config), name: 'memorychat-worker' });
const tracing = startTracing(config, undefined, 'memorychat-worker');
const database = await openDatabase(config, {
  onIdleClientError: (err) => log.warn({ err }, 'an idle database connection failed; the next query reconnects'),
}).catch((err: unknown) => {
  // An embedded database is locked by the process that opened it, and an API on it runs the jobs of
  // its queue itself (services/api/plugins/queue.ts), so a worker has nothing to do there.
  if (!(err instanceof EmbeddedDatabaseInUseError)) throw err;
  console.error(
    `memorychat worker: the embedded database in ${config.DATA_DIR} is in use by process ${err.holderPid}, ` +
      'which runs its own jobs; a separate worker needs a PostgreSQL server shared with the API (set DATABASE_URL for both).',
  );
  process.exit(1);
});
try {
  await migrate(database.pool);
} catch (err) {
  // E.g. the database is restarting: one line and exit 1, as the API does; the orchestrator starts it again.
  console.error(`memorychat worker: ${(err as Error).message}`);
  await database.close();
  process.exit(1);
}

const embedder = createEmbedder(config);
// The outbox: an erase removes the user's jobs held in Postgres, and held jobs are handed to Redis from here too.
const queue = new BullJobQueue(config, { outboxDb: database.scoped.asMaintenance(), log });
const metrics = createMetrics();
watchBacklog(metrics, { queue, db: database.scoped.asMaintenance() });
// The same processors as the API's in-process queue, made by the same factory; the worker needs no memory façade.
const processors = createProcessors({
  config,
  db: database.scoped,
  embedder,
  summaryLlm: createSummaryLlm(config),
  clock: () => new Date(),
  queue,
  metrics,
});
const worker = startBullWorker({ config, processors, log });
const http = await startWorkerHttp({ port: config.WORKER_PORT, host: config.host, db: database.scoped.asMaintenance(), queue, metrics });
await queue.start();
await enqueueReEmbeddingIfNeeded(database.scoped, queue, embedder, log).catch((err) =>
  log.error({ err }, 'checking for turns to re-embed failed'),
);

// Finish the running jobs, then close: worker.close() waits for them; the delay bounds a stuck job,
// whose lock then expires and another worker picks it up again.
closeWithGrace({ delay: 60_000 }, async ({ err, signal }) => {
  if (err) log.error({ err }, 'closing after an error');
  else log.info({ signal }, 'closing: finishing running jobs');
  await worker.close();
  http.close();
  await queue.close();
  await database.close();
  await tracing?.shutdown();
  log.info('worker closed');
});

const address = http.address();
log.info(
  {
    port: typeof address === 'object' && address ? address.port : config.WORKER_PORT,
    concurrency: config.WORKER_CONCURRENCY,
    prefix: config.QUEUE_PREFIX,
    cleanup_every_ms: config.cleanupIntervalMs,
    database: database.embedded ? 'embedded' : 'DATABASE_URL',
  },
  'memorychat worker ready',
);
