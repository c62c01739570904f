import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TcpFaultProxy } from '../../support/databases/tcp-fault-proxy.js';
import { databaseBehindFaultProxy, freshTestDatabase } from '../../support/databases/test-database.js';
import type { FakeUpstream } from '../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../support/service/service-with-upstream.js';
import type { TestApp } from '../../support/service/test-app.js';

describe('a database outage', () => {
  let upstream: FakeUpstream;
  let proxy: TcpFaultProxy;
  let t: TestApp;

  beforeAll(async () => {
    const testDatabase = await freshTestDatabase();
    const behindProxy = await databaseBehindFaultProxy(testDatabase);
    proxy = behindProxy.proxy;
    ({ t, upstream } = await startServiceWithUpstream({}, { testDatabase, database: behindProxy.database }));
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  it('when the database goes away, then turns, reads and GDPR requests answer 503, count as store failures and /readyz says so; when it returns, the service recovers without a restart', async () => {
    const token = t.token('outage');
    const first = await t.request('POST', '/memoryChat', { token, body: { question: 'Show me total sales by region for 2024' } });
    expect(first.status).toBe(200);
    const sessionId = first.body.conversation_metadata.conversation_id;

    const refusals = async () => {
      const text = await (await fetch(`${t.baseUrl}/metrics`)).text();
      return Number(/^memorychat_memory_store_failures_total\{effect="failed"\} (\d+)$/m.exec(text)?.[1] ?? 0);
    };
    const refusedBefore = await refusals();
    proxy.down();
    const during = await t.request('POST', '/memoryChat', { token, body: { question: 'What about 2023?', session_id: sessionId } });
    expect(during.status).toBe(503);
    expect(during.headers.get('content-type')).toContain('application/problem+json');
    expect(during.body.code).toBe('memory-store-unavailable');
    // Routes that do not map database errors themselves: a retryable 503 too, never a 500.
    for (const [method, path] of [
      ['GET', '/sessions'],
      ['GET', `/sessions/${sessionId}`],
      ['POST', '/me/export'],
    ] as const) {
      const read = await t.request(method, path, { token });
      expect([path, read.status, read.body.code]).toEqual([path, 503, 'memory-store-unavailable']);
    }
    const notReady = await t.request('GET', '/readyz');
    expect(notReady.status).toBe(503);
    expect(notReady.body.checks).toMatchObject({ database: 'unavailable' });
    expect((await t.request('GET', '/healthz')).status).toBe(200);

    proxy.up();
    expect((await t.request('GET', '/readyz')).status).toBe(200);
    // Each of the four refusals counts as a memory store failure (the alert MemorychatMemoryStoreFailing).
    expect((await refusals()) - refusedBefore).toBe(4);
    const after = await t.request('POST', '/memoryChat', { token, body: { question: 'What about 2022?', session_id: sessionId } });
    expect(after.status).toBe(200);
    // The turn refused during the outage was not half-written: only the two answered turns exist.
    expect(after.body.conversation_metadata.message_count).toBe(2);
    expect(after.body.warnings).toEqual([]);
    expect(after.body.memory_context_used.history_messages_count).toBe(1);
  });

  it('when the connection under a read is reset by the network, then the read answers a retryable 503, never a 500', async () => {
    const token = t.token('reset');
    const first = await t.request('POST', '/memoryChat', { token, body: { question: 'Show me total sales by region for 2024' } });
    expect(first.status).toBe(200);
    for (const path of ['/sessions', `/sessions/${first.body.conversation_metadata.conversation_id}`]) {
      proxy.resetOnNextRequest();
      const read = await t.request('GET', path, { token });
      expect([path, read.status, read.body.code]).toEqual([path, 503, 'memory-store-unavailable']);
      expect((await t.request('GET', path, { token })).status).toBe(200);
    }
  });
});
