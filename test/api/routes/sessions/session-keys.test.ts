import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

describe('session_key: the bot’s own conversation key', () => {
  let upstream: FakeUpstream;
  let t: TestApp;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream({ RATE_LIMIT_PER_MINUTE: '0' }));
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  const chat = (sub: string, body: Record<string, unknown>) => t.request('POST', '/memoryChat', { token: t.token(sub), body });

  it('when 20 first messages with one key arrive at once, then they make exactly one session with 20 turns', async () => {
    const key = 'slack:C024BE91L:1700000000.123';
    const replies = await Promise.all(
      Array.from({ length: 20 }, (_, i) => chat('racer', { question: `Total sales for 20${10 + i}`, session_key: key })),
    );
    expect(replies.map((r) => r.status)).toEqual(Array(20).fill(200));
    const ids = new Set(replies.map((r) => r.body.conversation_metadata.conversation_id));
    expect(ids.size).toBe(1);
    const { rows } = await t.admin.query(`SELECT session_id, turn_count FROM sessions WHERE user_id = 'racer' AND session_key = $1`, [key]);
    expect(rows).toHaveLength(1);
    expect(rows[0].turn_count).toBe(20);
    const listed = await t.request('GET', `/sessions?key=${encodeURIComponent(key)}`, { token: t.token('racer') });
    expect(listed.body.sessions.map((s: { session_id: string }) => s.session_id)).toEqual([...ids]);
    expect(listed.body.sessions[0].session_key).toBe(key);
  });

  it('when a second message uses the key, then it continues the conversation, and the key is never sent upstream', async () => {
    const first = await chat('alice', { question: 'Show me total sales by region for 2024', session_key: 'telegram:123456' });
    const second = await chat('alice', { question: 'What about 2023?', session_key: 'telegram:123456' });
    expect(second.body.conversation_metadata.conversation_id).toBe(first.body.conversation_metadata.conversation_id);
    expect(second.body.conversation_metadata.message_count).toBe(2);
    expect(second.body.conversation_metadata.session_key).toBe('telegram:123456');
    expect(second.body.memory_context_used.history_messages_count).toBe(1);
    for (const request of upstream.requests) expect(request.body).not.toHaveProperty('session_key');
  });

  it('when another user or tenant uses the same key, then it is another session', async () => {
    const mine = await chat('owner', { question: 'Total sales for 2024', session_key: 'shared-key' });
    const theirs = await chat('stranger', { question: 'Total sales for 2024', session_key: 'shared-key' });
    const otherTenant = await t.request('POST', '/memoryChat', {
      token: t.token('owner', { tenant: 'acme' }),
      body: { question: 'Total sales for 2024', session_key: 'shared-key' },
    });
    const ids = [mine, theirs, otherTenant].map((r) => r.body.conversation_metadata.conversation_id);
    expect(new Set(ids).size).toBe(3);
    expect(theirs.body.memory_context_used.history_messages_count).toBe(0);
  });

  it('when the keyed session is cleared, then it keeps its key and restarts empty; when it expired, the key starts a new session', async () => {
    const first = await chat('cycler', { question: 'Total sales for 2024', session_key: 'k1' });
    const id = first.body.conversation_metadata.conversation_id;
    await t.request('POST', `/sessions/${id}/clear`, { token: t.token('cycler') });
    const afterClear = await chat('cycler', { question: 'Total sales for 2022', session_key: 'k1' });
    expect(afterClear.body.conversation_metadata.conversation_id).toBe(id);
    expect(afterClear.body.memory_context_used.history_messages_count).toBe(0);

    t.clock.advance(8 * 24 * 3600 * 1000);
    const afterExpiry = await chat('cycler', { question: 'Total sales for 2021', session_key: 'k1' });
    expect(afterExpiry.status).toBe(200);
    expect(afterExpiry.body.conversation_metadata.conversation_id).not.toBe(id);
    expect(afterExpiry.body.conversation_metadata.message_count).toBe(1);
  });

  it('when both session_id and session_key are sent, then the request is refused with a problem', async () => {
    const reply = await chat('both', { question: 'Total sales', session_key: 'k', session_id: '00000000-0000-4000-8000-000000000000' });
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe('validation-failed');
  });

  it('when the turns API and /memory/context use a key, then they reach the same session, and a context read creates none', async () => {
    const stored = await t.request('POST', '/sessions/turns', {
      token: t.token('bot'),
      body: { question: 'How many users signed up in May?', answer: '42', sql_query: 'SELECT 42', session_key: 'web:abc' },
    });
    expect(stored.status).toBe(201);
    const again = await t.request('POST', '/sessions/turns', {
      token: t.token('bot'),
      body: { question: 'And in June?', answer: '43', sql_query: 'SELECT 43', session_key: 'web:abc' },
    });
    expect(again.body.session.session_id).toBe(stored.body.session.session_id);
    const context = await t.request('POST', '/memory/context', {
      token: t.token('bot'),
      body: { question: 'And July?', session_key: 'web:abc' },
    });
    expect(context.body.session_id).toBe(stored.body.session.session_id);
    const none = await t.request('POST', '/memory/context', { token: t.token('bot'), body: { question: 'x', session_key: 'web:none' } });
    expect(none.status).toBe(200);
    expect(none.body.session_id).toBeNull();
    const { rows } = await t.admin.query(`SELECT 1 FROM sessions WHERE session_key = 'web:none'`);
    expect(rows).toHaveLength(0);
  });
});
