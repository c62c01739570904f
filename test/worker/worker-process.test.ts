import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { keysUnder, redisClient, TEST_REDIS_URL, uniquePrefix } from '../support/databases/redis.js';
import { freshTestDatabase, type TestDatabase } from '../support/databases/test-database.js';

// The compiled worker, as `npm run worker` and the image run it (build-setup.ts builds dist/).
describe('the worker process (`npm run worker`)', () => {
  const prefix = uniquePrefix('worker-process');
  const redis = redisClient();
  let testDatabase: TestDatabase | undefined;
  afterAll(async () => {
    const keys = await keysUnder(redis, prefix);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
    await testDatabase?.remove();
  });

  it('when started, then it serves probes, job and backlog metrics, and SIGTERM closes it cleanly', async () => {
    testDatabase = await freshTestDatabase();
    const child = spawn(process.execPath, ['dist/services/worker/worker.js'], {
      env: {
        PATH: process.env.PATH,
        ...testDatabase.env,
        REDIS_URL: TEST_REDIS_URL,
        QUEUE_PREFIX: prefix,
        WORKER_PORT: '0',
        JWT_SECRET: 'x'.repeat(32),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const port = await new Promise<number>((resolve, reject) => {
      child.stdout!.on('data', (chunk) => {
        out += chunk;
        const ready = out.split('\n').find((l) => l.includes('memorychat worker ready'));
        if (ready) resolve(JSON.parse(ready).port);
      });
      child.stderr!.on('data', (chunk) => (out += chunk));
      child.on('exit', (code) => reject(new Error(`worker exited with ${code}: ${out}`)));
    });
    const base = `http://127.0.0.1:${port}`;
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ready = await fetch(`${base}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ checks: { database: 'ok', redis: 'ok' } });
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toContain('# HELP memorychat_jobs_total');
    // The backlog the alerts watch, read from Redis and the database (services/core/backlog-metrics.ts).
    expect(metrics).toMatch(/^memorychat_queue_jobs\{state="waiting"\} 0$/m);
    expect(metrics).toMatch(/^memorychat_gdpr_unfinished_requests\{action="erase"\} 0$/m);

    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(out).toContain('worker closed');
  }, 60_000);
});
