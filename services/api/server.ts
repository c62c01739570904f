import closeWithGrace from 'close-with-grace';
import { type Config, ConfigError, loadConfig } from '../config/config.js';
import { enqueueReEmbeddingIfNeeded } from '../core/jobs/re-embedding.js';
import { startDemoEngine } from '../db/demo/demo-engine.js';
import { EmbeddedDatabaseInUseError } from '../db/embedded/embedded-postgres.js';
import { migrate } from '../db/migrate.js';
import { openDatabase } from '../db/pool.js';
import { loadOrCreateLocalSecret } from '../infra/local-secret.js';
import { loggerOptions } from '../infra/logger-options.js';
import { startTracing } from '../infra/tracing.js';
import { answererNotice, prepareAnswerer } from '../providers/answerers/answerer-start.js';
import type { DemoSqlEngine } from '../providers/answerers/index.js';
import { createProviders } from '../providers/index.js';
import { buildApp } from './app.js';

let config: Config;
try {
  config = loadConfig(process.env);
} catch (err) {
  if (!(err instanceof ConfigError)) throw err;
  console.error(`memorychat: ${err.message}`);
  process.exit(1);
}

const started = performance.now();
// Before the app is built: its tracing plugin adds hooks only when tracing is on.
const tracing = startTracing(config);
const localSecret = config.localAuth ? await loadOrCreateLocalSecret(config.DATA_DIR) : undefined;
// Until the app's logger exists (the migration below), an idle connection's failure goes to stderr.
let logIdleClientError = (err: Error) => console.error(`memorychat: an idle database connection failed: ${err.message}`);
const database = await openDatabase(config, { onIdleClientError: (err) => logIdleClientError(err) }).catch((err: unknown) => {
  if (!(err instanceof EmbeddedDatabaseInUseError)) throw err;
  console.error(`memorychat: ${err.message}`);
  process.exit(1);
});
let demoEngine: DemoSqlEngine | undefined;
try {
  // The embedded database migrates at start; a server database is migrated by `npm run migrate`
  // (the migration Job in k8s), but migrating here too is idempotent and keeps `npm start` one step.
  await migrate(database.pool);
  ({ demoEngine } = await prepareAnswerer(config, {
    memory: database.pool,
    startDemoEngine: () => startDemoEngine({ waitMs: config.SQL_POOL_WAIT_MS, log: { warn: (obj, msg) => app.log.warn(obj, msg) } }),
  }));
} catch (err) {
  console.error(`memorychat: ${(err as Error).message}`);
  await database.close();
  process.exit(1);
}

// Jobs run in this process without Redis (in-process queue), and on the embedded database: only the
// process that opened it can reach it, so no separate worker can run its jobs.
const runsOwnJobs = !config.REDIS_URL || !config.DATABASE_URL;
// The answerers log through the app's logger, which exists by the first question: the sql answerer a failed
// schema refresh, the upstream answerer the list encoding it learnt at first contact.
const providers = createProviders(config, {
  demoEngine,
  log: { warn: (obj, msg) => app.log.warn(obj, msg), info: (obj, msg) => app.log.info(obj, msg) },
});
const app = await buildApp({
  config,
  db: database.pool,
  ...providers,
  localSecret,
  logger: loggerOptions(config),
  consumeOwnQueue: runsOwnJobs,
});
logIdleClientError = (err) => app.log.warn({ err }, 'an idle database connection failed; the next query reconnects');
// In-process mode runs the repeatable cleanup on a timer here; with REDIS_URL this registers the
// BullMQ job scheduler (idempotent; the worker does the same). A Redis outage must not stop the API.
await app.queue.start().catch((err) => app.log.error({ err }, 'starting the job queue failed'));
// Re-embedding is started where jobs run.
if (runsOwnJobs) {
  await enqueueReEmbeddingIfNeeded(app.db, app.queue, providers.embedder, app.log).catch((err) =>
    app.log.error({ err }, 'checking for turns to re-embed failed'),
  );
}

// SIGTERM (docs/soak.md): app.close() stops listening, lets running requests finish (later ones get
// a 503 problem, shutdown-refusal plugin) and runs the plugins' onClose hooks, among them the in-process
// queue's, which waits for running jobs. Only then does the database close: closed earlier, a job
// waiting for the pool's connection would wait forever, and the grace period would end in a kill.
closeWithGrace({ delay: 10_000 }, async ({ err, signal }) => {
  if (err) app.log.error({ err }, 'closing after an error');
  else app.log.info({ signal }, 'closing');
  try {
    await app.close();
  } finally {
    await database.close();
    await tracing?.shutdown();
  }
});

await app.listen({ port: config.PORT, host: config.host });
app.log.info(
  {
    database: database.embedded ? `embedded (${config.DATA_DIR})` : 'DATABASE_URL',
    answerer: config.answerBackend,
    startup_ms: Math.round(performance.now() - started),
  },
  'memorychat ready',
);
const notice = answererNotice(config);
if (notice) app.log[notice.level](notice.message);
if (config.localAuth) {
  app.log.warn(
    'local mode: no JWT_SECRET/JWT_PUBLIC_KEY/JWT_JWKS_URL, listening on loopback with a secret kept in ' +
      `${config.DATA_DIR}. Get a token with: npm run token -- --sub alice` +
      (config.playground ? `, or open the playground: ${playgroundUrl(app.server.address())}` : ''),
  );
}

/** The playground's address as the browser on this machine reaches it (the actual port, PORT=0 included). */
function playgroundUrl(address: ReturnType<typeof app.server.address>): string {
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  return `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}/playground/`;
}
