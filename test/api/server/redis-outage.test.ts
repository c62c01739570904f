import { type Job, Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_NAME } from '../../../services/core/job-queue.js';
import type { BullJobQueue } from '../../../services/infra/queue/bull-queue.js';
import { deleteKeysUnder, redisClient, TEST_REDIS_URL, uniquePrefix, waitFor } from '../../support/databases/redis.js';
import { startTcpFaultProxy, type TcpFaultProxy } from '../../support/databases/tcp-fault-proxy.js';
import type { FakeUpstream } from '../../support/fakes/fake-upstream.js';
import { countUserRows } from '../../support/service/seed-memory.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../support/service/service-with-upstream.js';
import type { TestApp } from '../../support/service/test-app.js';
import { startTestWorker } from '../../support/service/test-worker.js';

/** Generous: a request still running after this is hanging on Redis, not slow. */
const HANG_MS = 15_000;
/** MEMORY_SUMMARIZATION_THRESHOLD here: a session's third turn queues its summarization. */
const THRESHOLD = 3;

interface HeldRow {
  job_id: string;
  kind: string;
  payload: Record<string, string>;
}

const figures = { requests: 0, serverErrors: [] as string[], hung: [] as string[], held: 0, enqueuedAfter: 0, lost: 0, duplicated: 0 };

describe('Redis outages with REDIS_URL set (the service, its BullMQ worker and its rate limit all reach Redis through a faulty link)', () => {
  const prefix = uniquePrefix('redis-outage');
  const redis = redisClient();
  /** The real Redis, straight: what actually reached the queue. */
  const direct = new Queue(QUEUE_NAME, { connection: redis, prefix });
  let upstream: FakeUpstream;
  let proxy: TcpFaultProxy;
  let t: TestApp;
  let worker: Awaited<ReturnType<typeof startTestWorker>>;

  beforeAll(async () => {
    const target = new URL(TEST_REDIS_URL);
    proxy = await startTcpFaultProxy({ host: target.hostname, port: Number(target.port || 6379) });
    const viaProxy = new URL(TEST_REDIS_URL);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    // Down before the service starts: BullMQ would wait for a first connection forever.
    proxy.down();
    ({ t, upstream } = await startServiceWithUpstream({
      REDIS_URL: viaProxy.href,
      QUEUE_PREFIX: prefix,
      MEMORY_SUMMARIZATION_THRESHOLD: String(THRESHOLD),
      JOB_BACKOFF_MS: '20',
    }));
    worker = startTestWorker({ config: t.config, db: t.database.scoped, queue: t.app.queue, clock: () => t.clock.now });
  });

  afterAll(async () => {
    proxy?.resume();
    proxy?.up();
    await worker?.close();
    await stopServiceWithUpstream({ t, upstream });
    await proxy?.close();
    await direct.close();
    await deleteKeysUnder(redis, prefix);
    redis.disconnect();
    console.log(
      `redis outage: requests=${figures.requests} 5xx=${figures.serverErrors.length} hung=${figures.hung.length} ` +
        `jobs held while down=${figures.held} enqueued after=${figures.enqueuedAfter} lost=${figures.lost} duplicated=${figures.duplicated}`,
    );
  });

  /** fetch with a hang detector; every 5xx and every hang is recorded for the figures. */
  async function call(method: string, url: string, token: string | undefined, body?: unknown) {
    figures.requests += 1;
    const what = `${method} ${url}`;
    let response: Response;
    try {
      response = await fetch(`${t.baseUrl}${url}`, {
        method,
        headers: {
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(HANG_MS),
      });
    } catch (err) {
      if ((err as Error).name === 'TimeoutError') figures.hung.push(what);
      throw err;
    }
    const text = await response.text();
    if (response.status >= 500) figures.serverErrors.push(`${what} ${response.status} ${text}`);
    return { status: response.status, body: text ? JSON.parse(text) : undefined };
  }

  async function expectStatus(status: number, method: string, url: string, token: string, body?: unknown) {
    const res = await call(method, url, token, body);
    expect(res.status, `${method} ${url}: ${JSON.stringify(res.body)}`).toBe(status);
    return res.body;
  }

  /**
   * One user's traffic: three /memoryChat turns in one session and three memory API turns in
   * another (each session's third turn makes a summarization due), reads of every kind, then a
   * self-service export. Returns what must exist once the jobs have run.
   */
  async function userTraffic(user: string, turnsPerSession = THRESHOLD) {
    const token = t.token(user);
    const first = await expectStatus(200, 'POST', '/memoryChat', token, { question: `Show me total sales by region for 2024 (${user})` });
    const chatSession: string = first.conversation_metadata.conversation_id;
    for (let year = 2023; year > 2024 - turnsPerSession; year--) {
      await expectStatus(200, 'POST', '/memoryChat', token, { question: `What about ${year}?`, session_id: chatSession });
    }
    const created = await expectStatus(201, 'POST', '/sessions/turns', token, {
      question: `How many orders were placed in March? (${user})`,
      answer: '42 orders',
      sql_query: "SELECT count(*) FROM orders WHERE month = 'March'",
    });
    const apiSession: string = created.session.session_id;
    for (const month of ['April', 'May', 'June'].slice(0, turnsPerSession - 1)) {
      await expectStatus(201, 'POST', `/sessions/${apiSession}/turns`, token, {
        question: `And how many in ${month}?`,
        answer: '7 orders',
        sql_query: `SELECT count(*) FROM orders WHERE month = '${month}'`,
      });
    }
    await expectStatus(200, 'GET', '/sessions', token);
    await expectStatus(200, 'GET', `/sessions/${chatSession}`, token);
    await expectStatus(200, 'POST', '/memory/context', token, { question: 'And for 2021?', session_id: chatSession });
    await expectStatus(200, 'POST', '/memory/search', token, { query: 'sales by region' });
    const exported = await expectStatus(202, 'POST', '/me/export', token);
    return { user, token, sessions: [chatSession, apiSession], exportId: exported.request_id as string };
  }

  async function heldJobs(): Promise<HeldRow[]> {
    const { rows } = await t.admin.query<HeldRow>('SELECT job_id, kind, payload FROM job_outbox ORDER BY created_at');
    return rows;
  }

  /** What a job is for: two jobs for the same thing would be a duplicate. */
  function purpose(kind: string, payload: Record<string, unknown>): string {
    return kind === 'summarize' ? `summarize ${payload.sessionId}` : `${kind} ${payload.requestId}`;
  }

  async function jobsInRedis(): Promise<Job[]> {
    return (await direct.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed', 'prioritized', 'paused'], 0, -1)).filter(Boolean);
  }

  /**
   * After Redis is back: waits until every held job has left Postgres and completed in Redis, then
   * counts, per held job, the jobs in Redis for the same purpose: none is lost, one is duplicated.
   */
  async function expectEachHeldJobRanOnce(held: HeldRow[]) {
    await waitFor(async () => (await heldJobs()).length === 0, 30_000, 'the outbox to drain');
    await waitFor(
      async () => {
        const states = await Promise.all(held.map(async (h) => (await direct.getJob(h.job_id))?.getState()));
        return states.every((s) => s === 'completed');
      },
      30_000,
      'the held jobs to complete',
    );
    const inRedis = await jobsInRedis();
    let found = 0;
    for (const h of held) {
      const same = inRedis.filter((job) => purpose(job.name, job.data) === purpose(h.kind, h.payload));
      if (same.length === 0) figures.lost += 1;
      if (same.length > 1) figures.duplicated += same.length - 1;
      if (same.length >= 1) found += 1;
    }
    figures.enqueuedAfter += found;
    expect((await direct.getJobs(['failed'])).map((job) => `${job?.name}: ${job?.failedReason}`)).toEqual([]);
    expect({ lost: figures.lost, duplicated: figures.duplicated }).toEqual({ lost: 0, duplicated: 0 });
    expect(found).toBe(held.length);
  }

  async function expectReadiness(status: 'ready' | 'degraded') {
    const ready = await call('GET', '/readyz', undefined);
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status, checks: { database: 'ok', redis: status === 'ready' ? 'ok' : 'unavailable' } });
  }

  /** The jobs' effects: exports hold every turn stored during the outage, due sessions are summarized. */
  async function expectJobEffects(traffic: Awaited<ReturnType<typeof userTraffic>>[], turnsPerSession = THRESHOLD) {
    for (const { token, exportId } of traffic) {
      const status = await expectStatus(200, 'GET', `/gdpr/requests/${exportId}`, token);
      expect(status).toMatchObject({ status: 'completed', counts: { sessions: 2, turns: 2 * turnsPerSession } });
    }
    const { rows } = await t.admin.query<{ summary_through_turn: number | null }>(
      'SELECT summary_through_turn FROM sessions WHERE session_id = ANY($1::uuid[])',
      [traffic.flatMap((x) => x.sessions)],
    );
    expect(rows).toHaveLength(2 * traffic.length);
    expect(
      rows.every((r) => (r.summary_through_turn ?? 0) >= 1),
      JSON.stringify(rows),
    ).toBe(true);
  }

  it('when Redis is down from the start, then every route answers without 5xx or waiting, /readyz says degraded, and each job the requests made runs once when Redis comes', async () => {
    await expectReadiness('degraded');
    const users = Array.from({ length: 6 }, (_, i) => `cold-${i}`);
    // Four turns per session: due at the third and again at the fourth.
    const traffic = await Promise.all(users.map((u) => userTraffic(u, 4)));
    // Erased while Redis is down: the erase waits in Postgres like the rest.
    const erasee = t.token('cold-erasee');
    await expectStatus(201, 'POST', '/sessions/turns', erasee, { question: 'Something to forget', answer: 'forgotten' });
    const erase = await expectStatus(202, 'DELETE', '/me', erasee);
    const adminExport = await expectStatus(
      202,
      'POST',
      `/admin/users/${users[0]}/export`,
      t.token('cold-admin', { roles: ['memory-admin'] }),
    );
    expect(figures.serverErrors).toEqual([]);
    expect(figures.hung).toEqual([]);

    const held = await heldJobs();
    const kinds = held.map((h) => h.kind).sort();
    // One summarization per session (not one per due turn), one job per GDPR request.
    expect(kinds).toEqual([...Array(7).fill('gdpr-export'), 'gdpr-erase', ...Array(12).fill('summarize')].sort());
    expect(await jobsInRedis()).toEqual([]);
    figures.held += held.length;

    proxy.up();
    await waitFor(async () => (await call('GET', '/readyz', undefined)).body.status === 'ready', 20_000, 'Redis to be reported back');
    await expectReadiness('ready');
    await expectEachHeldJobRanOnce(held);
    await expectJobEffects(traffic, 4);
    expect(await expectStatus(200, 'GET', `/gdpr/requests/${erase.request_id}`, erasee)).toMatchObject({
      status: 'completed',
      counts: { turns: 1, sessions: 1 },
    });
    expect(await countUserRows(t.admin, 'cold-erasee')).toEqual({ sessions: 0, turns: 0, embeddings: 0 });
    expect(await expectStatus(200, 'GET', `/gdpr/requests/${adminExport.request_id}`, traffic[0]!.token)).toMatchObject({
      status: 'completed',
      counts: { sessions: 2, turns: 8 },
    });
  }, 90_000);

  it('when Redis goes away while the service is serving and comes back, then nothing waits on it and each job made meanwhile runs once', async () => {
    await expectReadiness('ready');
    const before = new Set((await jobsInRedis()).map((job) => job.id));
    proxy.down();
    await waitFor(async () => (await call('GET', '/readyz', undefined)).body.status === 'degraded', 10_000, 'the outage to be reported');

    const traffic = await Promise.all(['warm-0', 'warm-1', 'warm-2', 'warm-3'].map((u) => userTraffic(u)));
    expect(figures.serverErrors).toEqual([]);
    expect(figures.hung).toEqual([]);
    const held = await heldJobs();
    expect(held.map((h) => h.kind).sort()).toEqual([...Array(4).fill('gdpr-export'), ...Array(8).fill('summarize')].sort());
    expect((await jobsInRedis()).filter((job) => !before.has(job.id))).toEqual([]);
    figures.held += held.length;

    proxy.up();
    await expectEachHeldJobRanOnce(held);
    await expectReadiness('ready');
    await expectJobEffects(traffic);
  }, 90_000);

  it('when the network to Redis stalls (the connection stays open, nothing answers), then requests go on after a short bound and the adds that land late do not double the held jobs', async () => {
    await expectReadiness('ready');
    proxy.stall();
    // Small: every call to Redis now waits out its command timeout (the rate limit's, then the add's).
    const users = ['stalled-0', 'stalled-1'];
    const traffic = await Promise.all(
      users.map(async (user) => {
        const token = t.token(user);
        const first = await expectStatus(200, 'POST', '/memoryChat', token, {
          question: `Show me total sales by region for 2024 (${user})`,
        });
        const sessionId: string = first.conversation_metadata.conversation_id;
        for (const year of [2023, 2022])
          await expectStatus(200, 'POST', '/memoryChat', token, { question: `What about ${year}?`, session_id: sessionId });
        const exported = await expectStatus(202, 'POST', '/me/export', token);
        return { token, sessionId, exportId: exported.request_id as string };
      }),
    );
    const degraded = await call('GET', '/readyz', undefined);
    expect(degraded.body).toEqual({ status: 'degraded', checks: { database: 'ok', redis: 'unavailable' } });
    expect(figures.serverErrors).toEqual([]);
    expect(figures.hung).toEqual([]);
    const held = await heldJobs();
    expect(held.map((h) => h.kind).sort()).toEqual(['gdpr-export', 'gdpr-export', 'summarize', 'summarize']);
    figures.held += held.length;

    // The stalled adds now reach Redis, and the dispatcher hands over the held copies: one job each.
    proxy.resume();
    await expectEachHeldJobRanOnce(held);
    for (const { token, exportId } of traffic) {
      expect(await expectStatus(200, 'GET', `/gdpr/requests/${exportId}`, token)).toMatchObject({
        status: 'completed',
        counts: { sessions: 1, turns: 3 },
      });
    }
  }, 90_000);

  it("when a user is erased, then their held summarizations go with them, while their GDPR jobs and other users' jobs stay", async () => {
    const queue = t.app.queue as BullJobQueue;
    const outbox = queue.outbox!;
    // The dispatcher would hand these to Redis first; held rows are what this is about.
    await outbox.stop();
    try {
      const held = [
        {
          tenantId: 'default',
          userId: 'held-erasee',
          jobId: 'summarize-held-1',
          kind: 'summarize',
          payload: { tenantId: 'default', userId: 'held-erasee', sessionId: '5b0c7a43-6f3e-4f43-9d55-0c1a2b3c4d5e' },
          dedupKey: 'summarize-held-session',
        },
        {
          tenantId: 'default',
          userId: 'held-erasee',
          jobId: 'gdpr-export-held-2',
          kind: 'gdpr-export',
          payload: { tenantId: 'default', requestId: '0f6d1e2a-3b4c-4d5e-8f70-1a2b3c4d5e6f' },
        },
        {
          tenantId: 'default',
          userId: 'held-bystander',
          jobId: 'summarize-held-3',
          kind: 'summarize',
          payload: { tenantId: 'default', userId: 'held-bystander', sessionId: '7c1d2e3f-4a5b-4c6d-8e7f-9a0b1c2d3e4f' },
        },
        {
          tenantId: 'tenant-b',
          userId: 'held-erasee',
          jobId: 'summarize-held-4',
          kind: 'summarize',
          payload: { tenantId: 'tenant-b', userId: 'held-erasee', sessionId: '9e8d7c6b-5a4f-4e3d-8c2b-1a0f9e8d7c6b' },
        },
      ];
      for (const job of held) expect(await outbox.hold(job)).toBe(true);
      // A second summarization of a held session is the same job, as BullMQ's deduplication would make it.
      expect(await outbox.hold({ ...held[0]!, jobId: 'summarize-held-5' })).toBe(false);

      expect(await queue.removeUserJobs('default', 'held-erasee')).toBe(1);
      expect((await heldJobs()).map((h) => h.job_id).sort()).toEqual(['gdpr-export-held-2', 'summarize-held-3', 'summarize-held-4']);
    } finally {
      await t.admin.query("DELETE FROM job_outbox WHERE job_id LIKE '%-held-%'");
      outbox.start();
    }
  });
});
