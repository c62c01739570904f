import type { Worker } from 'bullmq';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type Config, loadConfig } from '../../services/config/config.js';
import { createProcessors } from '../../services/core/jobs/processors.js';
import { createMetrics } from '../../services/core/metrics.js';
import { type Database, openDatabase } from '../../services/db/pool.js';
import { BullJobQueue, CLEANUP_SCHEDULER_ID } from '../../services/infra/queue/bull-queue.js';
import { InProcessQueue } from '../../services/infra/queue/in-process-queue.js';
import { createEmbedder } from '../../services/providers/embeddings/index.js';
import { deleteKeysUnder, redisClient, TEST_REDIS_URL, uniquePrefix, waitFor } from '../support/databases/redis.js';
import { adminPool, freshTestDatabase, type TestDatabase } from '../support/databases/test-database.js';
import { seedSession } from '../support/service/seed-memory.js';
import { TEST_JWT_SECRET } from '../support/service/test-app.js';
import { silentLog, startTestWorker } from '../support/service/test-worker.js';

const HOUR = 3_600_000;

describe('retention cleanup job', () => {
  const redis = redisClient();
  const prefix = uniquePrefix('cleanup');
  let testDatabase: TestDatabase;
  let database: Database;
  /** Seeds and inspects every user's rows, above row-level security. */
  let admin: ReturnType<typeof adminPool>;
  let config: Config & { REDIS_URL: string };
  let queue: BullJobQueue;
  const workers: Worker[] = [];

  beforeAll(async () => {
    testDatabase = await freshTestDatabase();
    config = loadConfig({
      JWT_SECRET: TEST_JWT_SECRET,
      ...testDatabase.env,
      REDIS_URL: TEST_REDIS_URL,
      QUEUE_PREFIX: prefix,
      MEMORY_CLEANUP_BATCH_SIZE: '7',
      JOB_BACKOFF_MS: '20',
    }) as Config & { REDIS_URL: string };
    database = await openDatabase(config);
    admin = adminPool(testDatabase, database);
    queue = new BullJobQueue(config);
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.close()));
    await queue?.close();
    await admin?.close();
    await database?.close();
    await deleteKeysUnder(redis, prefix);
    redis.disconnect();
    await testDatabase?.remove();
  });
  beforeEach(async () => {
    await admin.pool.query('TRUNCATE sessions, turns, gdpr_exports CASCADE');
    await queue.queue.obliterate({ force: true });
  });

  async function liveAndExpiredCounts() {
    const { rows } = await admin.pool.query<{ expired_sessions: number; expired_turns: number; live_sessions: number; live_turns: number }>(
      // Four scalar subqueries, not aggregates beside subqueries: Citus runs each as a query of its own.
      `SELECT (SELECT count(*)::int FROM sessions s WHERE s.expires_at <= now()) AS expired_sessions,
              (SELECT count(*)::int FROM sessions s WHERE s.expires_at > now()) AS live_sessions,
              (SELECT count(*)::int FROM turns t JOIN sessions x USING (tenant_id, user_id, session_id) WHERE x.expires_at <= now()) AS expired_turns,
              (SELECT count(*)::int FROM turns t JOIN sessions x USING (tenant_id, user_id, session_id) WHERE x.expires_at > now()) AS live_turns`,
    );
    return rows[0]!;
  }

  async function seedMix(expiredSessions: number, turnsEach: number) {
    const past = new Date(Date.now() - HOUR);
    const future = new Date(Date.now() + HOUR);
    for (let i = 0; i < expiredSessions; i++) await seedSession(admin.pool, { userId: `u${i % 3}`, turns: turnsEach, expiresAt: past });
    await seedSession(admin.pool, { userId: 'u0', turns: 10, expiresAt: future });
    await seedSession(admin.pool, { userId: 'keeper', turns: 10, expiresAt: future });
  }

  it('when the cleanup job runs on BullMQ, then expired sessions, their turns and expired exports are gone and live data stays', async () => {
    await seedMix(3, 50);
    await admin.pool.query(
      `INSERT INTO gdpr_exports (tenant_id, user_id, request_id, created_at, expires_at, turn_count, payload)
       VALUES ('default', 'u1', gen_random_uuid(), now() - interval '2 days', now() - interval '1 day', 0, '{}'),
              ('default', 'u1', gen_random_uuid(), now(), now() + interval '1 day', 0, '{}')`,
    );
    workers.push(startTestWorker({ config, db: database.scoped, queue }));
    await queue.enqueue('cleanup', {});
    const counts = await waitFor(async () => {
      const c = await queue.counts();
      return c.completed === 1 && c;
    });
    expect(counts.failed).toBe(0);
    expect(await liveAndExpiredCounts()).toEqual({ expired_sessions: 0, expired_turns: 0, live_sessions: 2, live_turns: 20 });
    const [done] = await queue.queue.getCompleted();
    // 150 turns in batches of 7: the deletes were bounded, not one statement.
    expect(done!.returnvalue).toMatchObject({ turns: 150, sessions: 3, exports: 1 });
    expect(done!.returnvalue.batches).toBeGreaterThan(150 / 7);
    const { rows } = await admin.pool.query('SELECT count(*)::int AS n FROM gdpr_exports');
    expect(rows[0].n).toBe(1);
  });

  it('when two workers race on two cleanup jobs, then every expired row is deleted exactly once and no job fails', async () => {
    await seedMix(10, 40);
    workers.push(startTestWorker({ config, db: database.scoped, queue }), startTestWorker({ config, db: database.scoped, queue }));
    await Promise.all([queue.enqueue('cleanup', {}), queue.enqueue('cleanup', {})]);
    await waitFor(async () => (await queue.counts()).completed === 2, 30_000, 'two cleanups');
    const done = await queue.queue.getCompleted();
    const total = done.reduce((sum, job) => sum + job.returnvalue.turns, 0);
    const sessions = done.reduce((sum, job) => sum + job.returnvalue.sessions, 0);
    expect({ total, sessions }).toEqual({ total: 400, sessions: 10 });
    expect((await queue.counts()).failed).toBe(0);
    expect(await liveAndExpiredCounts()).toEqual({ expired_sessions: 0, expired_turns: 0, live_sessions: 2, live_turns: 20 });
  });

  it('when the cleanup runs again over a clean database, then it deletes nothing, and the metrics count what each run deleted', async () => {
    await seedMix(2, 5);
    const metrics = createMetrics();
    const processors = createProcessors({
      config,
      db: database.scoped,
      embedder: createEmbedder(config),
      clock: () => new Date(),
      queue,
      metrics,
    });
    const ctx = { jobId: 'x', attempt: 1, finalAttempt: true, log: silentLog };
    expect(await processors.cleanup({}, ctx)).toMatchObject({ turns: 10, sessions: 2 });
    expect(await processors.cleanup({}, ctx)).toMatchObject({ turns: 0, sessions: 0, exports: 0 });
    const counted = async (metric: { get(): Promise<{ values: { labels: Record<string, unknown>; value: number }[] }> }, labels: object) =>
      (await metric.get()).values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
    expect(await counted(metrics.turnsDeleted, { reason: 'retention' })).toBe(10);
    expect(await counted(metrics.jobs, { kind: 'cleanup', outcome: 'completed' })).toBe(2);
  });

  it('when the queue starts, then the repeatable cleanup is scheduled every MEMORY_CLEANUP_INTERVAL and runs by itself', async () => {
    const fast = new BullJobQueue({ ...config, MEMORY_CLEANUP_INTERVAL: '1s', cleanupIntervalMs: 1000 });
    try {
      await seedMix(2, 5);
      workers.push(startTestWorker({ config, db: database.scoped, queue }));
      await fast.start();
      await fast.start(); // idempotent: still one scheduler
      const schedulers = await fast.queue.getJobSchedulers();
      expect(schedulers.map((s) => [s.key, s.every])).toEqual([[CLEANUP_SCHEDULER_ID, 1000]]);
      await waitFor(async () => (await liveAndExpiredCounts()).expired_sessions === 0, 15_000, 'scheduled cleanup');
      expect((await liveAndExpiredCounts()).live_turns).toBe(20);
    } finally {
      await fast.queue.removeJobScheduler(CLEANUP_SCHEDULER_ID);
      await fast.close();
    }
  });

  it('when there is no Redis, then the in-process queue runs the same cleanup on its timer', async () => {
    await seedMix(3, 20);
    const inProcess = new InProcessQueue({
      config: { ...config, REDIS_URL: undefined, cleanupIntervalMs: 200 },
      log: silentLog,
      processors: (q) =>
        createProcessors({ config, db: database.scoped, embedder: createEmbedder(config), clock: () => new Date(), queue: q }),
    });
    try {
      await inProcess.start();
      await waitFor(async () => (await inProcess.counts()).completed >= 1, 10_000, 'in-process cleanup');
      expect(await liveAndExpiredCounts()).toEqual({ expired_sessions: 0, expired_turns: 0, live_sessions: 2, live_turns: 20 });
      expect(inProcess.mode).toBe('in-process');
    } finally {
      await inProcess.close();
    }
  });
});
