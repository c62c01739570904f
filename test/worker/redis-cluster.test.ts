import { Queue } from 'bullmq';
import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QUEUE_NAME } from '../../services/core/job-queue.js';
import { startFakeUpstream } from '../support/fakes/fake-upstream.js';
import { waitFor } from '../support/databases/redis.js';
import { type RedisCluster, startRedisCluster } from '../support/databases/redis-cluster.js';
import { startTestApp, type TestApp } from '../support/service/test-app.js';
import { startTestWorker } from '../support/service/test-worker.js';

/** MEMORY_SUMMARIZATION_THRESHOLD here: a session's third turn queues its summarization. */
const THRESHOLD = 3;

describe('BullMQ on a Redis Cluster (three masters, REDIS_CLUSTER=true, a hash-tag QUEUE_PREFIX)', () => {
  const prefix = `{mctest-cluster-${process.pid}}`;
  let cluster: RedisCluster;
  let direct: Cluster;
  /** The queue as Redis holds it, read around the service. */
  let queue: Queue;
  let upstream: FakeUpstream;
  let t: TestApp;
  let worker: ReturnType<typeof startTestWorker>;

  beforeAll(async () => {
    cluster = await startRedisCluster(3);
    direct = new Cluster([{ host: '127.0.0.1', port: cluster.ports[0]! }]);
    queue = new Queue(QUEUE_NAME, { connection: direct, prefix });
    ({ t, upstream } = await startServiceWithUpstream({
      REDIS_URL: cluster.url,
      REDIS_CLUSTER: 'true',
      QUEUE_PREFIX: prefix,
      MEMORY_SUMMARIZATION_THRESHOLD: String(THRESHOLD),
      JOB_BACKOFF_MS: '20',
    }));
    worker = startTestWorker({ config: t.config, db: t.database.scoped, queue: t.app.queue, clock: () => t.clock.now });
  }, 60_000);

  afterAll(async () => {
    cluster?.resume();
    await worker?.close();
    await stopServiceWithUpstream({ t, upstream });
    await queue?.close();
    direct?.disconnect();
    await cluster?.close();
  });

  /** One session of THRESHOLD /memoryChat turns (its summarization comes due) and a self-service export. */
  async function userTraffic(user: string) {
    const token = t.token(user);
    const first = await t.request('POST', '/memoryChat', { token, body: { question: `Show me total sales by region for 2024 (${user})` } });
    expect(first.status).toBe(200);
    const sessionId: string = first.body.conversation_metadata.conversation_id;
    for (let year = 2023; year > 2024 - THRESHOLD; year--) {
      const next = await t.request('POST', '/memoryChat', { token, body: { question: `What about ${year}?`, session_id: sessionId } });
      expect(next.status).toBe(200);
    }
    const exported = await t.request('GET', '/me/export', { token });
    expect(exported.status).toBe(202);
    return { token, sessionId, exportId: exported.body.request_id as string };
  }

  async function expectJobEffects(traffic: Awaited<ReturnType<typeof userTraffic>>[]) {
    for (const { token, exportId } of traffic) {
      await waitFor(
        async () => (await t.request('GET', `/gdpr/requests/${exportId}`, { token })).body.status === 'completed',
        30_000,
        `export ${exportId} to complete`,
      );
    }
    const { rows } = await t.admin.query<{ summary_through_turn: number | null }>(
      'SELECT summary_through_turn FROM sessions WHERE session_id = ANY($1::uuid[])',
      [traffic.map((x) => x.sessionId)],
    );
    expect(rows.map((r) => (r.summary_through_turn ?? 0) >= 1)).toEqual(traffic.map(() => true));
  }

  it('when the API and the worker run on the cluster, then the jobs run and every key of the queue is on one node', async () => {
    const traffic = await Promise.all(['c-0', 'c-1'].map(userTraffic));
    await expectJobEffects(traffic);
    const keysPerNode = await Promise.all(direct.nodes('master').map(async (node) => (await node.keys(`${prefix}*`)).length));
    expect(keysPerNode.filter((n) => n > 0)).toHaveLength(1);
    expect(await queue.getJobCounts('failed')).toEqual({ failed: 0 });
  }, 60_000);

  it('when every node stops answering during traffic and comes back, then no request fails, the jobs wait in Postgres, and each runs once', async () => {
    cluster.pause();
    const traffic = await Promise.all(['p-0', 'p-1'].map(userTraffic));
    const { rows: held } = await t.admin.query<{ job_id: string; kind: string }>('SELECT job_id, kind FROM job_outbox');
    expect(held.map((h) => h.kind).sort()).toEqual(['gdpr-export', 'gdpr-export', 'summarize', 'summarize']);

    cluster.resume();
    await waitFor(async () => (await t.admin.query('SELECT 1 FROM job_outbox')).rowCount === 0, 30_000, 'the outbox to drain');
    await expectJobEffects(traffic);
    const jobs = (await queue.getJobs(['completed', 'failed', 'active', 'waiting', 'delayed', 'prioritized'], 0, -1)).filter(Boolean);
    const ran = held.map((h) => jobs.filter((job) => job.id === h.job_id).length);
    // Each held job is in Redis once (a late add and the held copy share the job id), and completed.
    expect(ran).toEqual(held.map(() => 1));
    expect(await Promise.all(held.map(async (h) => (await queue.getJob(h.job_id))?.getState()))).toEqual(held.map(() => 'completed'));
    console.log(
      `redis cluster outage: jobs held while down=${held.length}, in Redis after=${ran.filter((n) => n === 1).length}, lost=${ran.filter((n) => n === 0).length}, duplicated=${ran.filter((n) => n > 1).length}`,
    );
  }, 90_000);
});
