import { type ChildProcess, spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { createSigner } from 'fast-jwt';
import { afterAll, describe, expect, it } from 'vitest';
import { deleteKeysUnder, keysUnder, redisClient, TEST_REDIS_URL, uniquePrefix, waitFor } from '../support/databases/redis.js';
import { freshDataDir } from '../support/databases/test-database.js';

const SECRET = 'embedded-redis-secret-of-at-least-32-chars';

function spawnEntry(
  script: string,
  env: Record<string, string>,
): { child: ChildProcess; output: () => { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { PATH: process.env.PATH, JWT_SECRET: SECRET, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += chunk));
  child.stderr!.on('data', (chunk) => (stderr += chunk));
  return { child, output: () => ({ stdout, stderr }) };
}

/**
 * REDIS_URL with the embedded database (`npm start` as a user would run it): jobs go to Redis, and
 * no separate worker can open the embedded database, so the API consumes its own queue.
 */
describe('the service on the embedded database with REDIS_URL', () => {
  const prefix = uniquePrefix('embedded-redis');
  const redis = redisClient();
  const children: ChildProcess[] = [];
  let dataDir = '';
  afterAll(async () => {
    for (const child of children) if (child.exitCode === null) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    await deleteKeysUnder(redis, prefix);
    redis.disconnect();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('when a user asks for their export, then the job goes through Redis and the API runs it; `npm run worker` on that DATA_DIR exits 1 with one sentence and no stack trace', async () => {
    dataDir = await freshDataDir();
    const env = { DATA_DIR: dataDir, REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix };
    const api = spawnEntry('services/api/server.ts', { ...env, PORT: '0' });
    children.push(api.child);
    const url = await waitFor(
      async () => {
        const { stdout } = api.output();
        if (api.child.exitCode !== null) throw new Error(`the API exited: ${stdout}${api.output().stderr}`);
        return stdout.includes('memorychat ready') && /Server listening at (http:\/\/[^"\s]+)/.exec(stdout)?.[1];
      },
      60_000,
      'the API to start',
    );
    expect(api.output().stdout).toContain('this process runs the jobs of its BullMQ queue');

    const token = createSigner({ key: SECRET, expiresIn: 600_000 })({ sub: 'redis-exporter' });
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    expect((await call('POST', '/sessions/turns', { question: 'Sales by region?', answer: 'EMEA 3M' })).status).toBe(201);
    const accepted = await call('POST', '/me/export');
    expect(accepted.status).toBe(202);
    const done = await waitFor(
      async () => {
        const res = await call('GET', `/gdpr/requests/${accepted.body.request_id}`);
        return res.body?.status === 'completed' && res.body;
      },
      30_000,
      'the export',
    );
    expect(done.counts).toMatchObject({ sessions: 1, turns: 1 });
    // The job went through Redis: BullMQ's keys for it are under the prefix.
    expect((await keysUnder(redis, prefix)).some((k) => k.includes(accepted.body.request_id))).toBe(true);

    const worker = spawnEntry('services/worker/worker.ts', { ...env, WORKER_PORT: '0' });
    children.push(worker.child);
    const code = await new Promise<number | null>((resolve) => worker.child.once('exit', resolve));
    const { stdout, stderr } = worker.output();
    expect(code).toBe(1);
    expect(stdout).toBe('');
    const lines = stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^memorychat worker: the embedded database in .+ is in use by process \d+, which runs its own jobs; .*set DATABASE_URL/,
    );
  }, 120_000);
});
