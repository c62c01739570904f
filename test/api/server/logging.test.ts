import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../services/config/config.js';
import { loggerOptions } from '../../../services/infra/logger-options.js';
import { sendJson } from '../../support/fakes/fake-http-server.js';
import type { FakeUpstream } from '../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../support/service/service-with-upstream.js';
import type { TestApp } from '../../support/service/test-app.js';

const QUESTION = 'How much did customer Zanzibar-Quartz spend?';
const SQL = "SELECT SUM(amount) FROM orders WHERE customer = 'Zanzibar-Quartz-SQL'";

describe('logs', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  const lines: Record<string, any>[] = [];

  beforeAll(async () => {
    const stream = new Writable({
      write(chunk, _enc, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
        done();
      },
    });
    const config = loadConfig({ JWT_SECRET: 'x'.repeat(32), LOG_LEVEL: 'info' });
    ({ t, upstream } = await startServiceWithUpstream({ LOG_LEVEL: 'info' }, { logger: { ...loggerOptions(config), stream } }));
    upstream.handle((_req, res) => sendJson(res, 200, { answer: '42', sql_query: SQL, tables_used: ['orders'] }));
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  it('when a question is answered, then info logs have the request id, tenant, a user pseudonym and timings, but no question, SQL, user id or token', async () => {
    const token = t.token('user-Zanzibar-id', { tenant: 'acme' });
    const reply = await t.request('POST', '/memoryChat', { token, body: { question: QUESTION }, headers: { 'x-request-id': 'req-log-1' } });
    expect(reply.status).toBe(200);
    const sessionId = reply.body.conversation_metadata.conversation_id;
    await t.request('GET', `/sessions/${sessionId}/sql?q=Zanzibar`, { token });

    const text = JSON.stringify(lines);
    expect(lines.length).toBeGreaterThan(2);
    expect(text).not.toContain('Zanzibar');
    expect(text).not.toContain(token);
    const completed = lines.find((l) => l.msg === 'request completed' && l.reqId === 'req-log-1')!;
    expect(completed).toMatchObject({ level: 30, tenant: 'acme' });
    expect(completed.user).toMatch(/^[0-9a-f]{16}$/);
    expect(completed.responseTime).toBeGreaterThan(0);
    const incoming = lines.find((l) => l.msg === 'incoming request' && l.reqId === 'req-log-1')!;
    expect(incoming.req).toMatchObject({ method: 'POST', route: '/memoryChat' });
  });
});
