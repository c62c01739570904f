import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

describe('POST /memoryChat', () => {
  let upstream: FakeUpstream;
  let t: TestApp;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  it('when a follow-up is asked, then the upstream receives the previous question and its SQL', async () => {
    const alice = t.token('alice');
    const first = await t.request('POST', '/memoryChat', { token: alice, body: { question: 'Show me total sales by region for 2024' } });
    expect(first.status).toBe(200);
    expect(first.body.conversation_metadata.message_count).toBe(1);
    const sessionId = first.body.conversation_metadata.conversation_id;

    const second = await t.request('POST', '/memoryChat', { token: alice, body: { question: 'What about 2023?', session_id: sessionId } });
    expect(second.status).toBe(200);
    const sent = upstream.lastBody();
    expect(sent.question).toBe('What about 2023?');
    expect(sent.custom_instructions).toContain('Show me total sales by region for 2024');
    expect(sent.custom_instructions).toContain('SELECT region, SUM(amount) FROM sales WHERE year = 2024 GROUP BY region');
    expect(second.body.conversation_metadata).toMatchObject({ conversation_id: sessionId, message_count: 2 });
    expect(second.body.memory_context_used).toMatchObject({ history_messages_count: 1, augmented_question: 'What about 2023?' });
    expect(second.body.sql_query).toContain('2023');
  });

  it('when another user sends my session id, then it answers 404 and calls no upstream', async () => {
    const first = await t.request('POST', '/memoryChat', {
      token: t.token('alice'),
      body: { question: 'Show me total sales by region for 2024' },
    });
    const calls = upstream.requests.length;
    const stolen = await t.request('POST', '/memoryChat', {
      token: t.token('mallory'),
      body: { question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id },
    });
    expect(stolen.status).toBe(404);
    expect(stolen.headers.get('content-type')).toContain('application/problem+json');
    expect(stolen.body).toMatchObject({ status: 404, code: 'session-not-found' });
    expect(upstream.requests.length).toBe(calls);
  });
});
