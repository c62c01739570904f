import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

const MIN = 60_000;

/** Every read a chatbot can make of a session; each must agree that it is gone. */
async function readsOf(t: TestApp, token: string, id: string) {
  return {
    list: (await t.request('GET', '/sessions', { token })).body.sessions.map((s: any) => s.session_id),
    get: (await t.request('GET', `/sessions/${id}`, { token })).status,
    context: (await t.request('POST', '/memory/context', { token, body: { question: 'sales in 2024?', session_id: id } })).status,
    contextWithoutSession: (await t.request('POST', '/memory/context', { token, body: { question: 'sales in 2024?' } })).body.memories
      .length,
    search: (await t.request('POST', '/memory/search', { token, body: { query: 'sales in 2024', k: 5 } })).body.results.length,
    sql: (await t.request('GET', `/sessions/${id}/turns/last/sql`, { token })).status,
    turn: (await t.request('POST', `/sessions/${id}/turns`, { token, body: { question: 'more', answer: 'x' } })).status,
  };
}

async function seed(t: TestApp, token: string) {
  const res = await t.request('POST', '/sessions/turns', {
    token,
    body: { question: 'Show me total sales in 2024', answer: '100', sql_query: 'SELECT sum(amount) FROM sales WHERE year = 2024' },
  });
  expect(res.status).toBe(201);
  return res.body.session as { session_id: string; expires_at: string };
}

describe('memory API retention: MEMORY_TTL=30m sliding', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ MEMORY_TTL: '30m', MEMORY_TTL_MODE: 'sliding', MEMORY_MAX_TURNS_PER_SESSION: '3' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('when a session is idle 31 minutes, then it is gone from every read', async () => {
    const token = t.token('ivy');
    const session = await seed(t, token);
    expect(Date.parse(session.expires_at) - t.clock.now.getTime()).toBe(30 * MIN);
    t.clock.advance(29 * MIN);
    const alive = await readsOf(t, token, session.session_id);
    expect(alive).toMatchObject({ list: [session.session_id], get: 200, context: 200, search: 1, sql: 200, turn: 201 });

    // The turn just stored slid the expiry; reads did not.
    const afterWrite = await t.request('GET', `/sessions/${session.session_id}`, { token });
    expect(Date.parse(afterWrite.body.expires_at) - t.clock.now.getTime()).toBe(30 * MIN);
    t.clock.advance(31 * MIN);
    const gone = await readsOf(t, token, session.session_id);
    expect(gone).toEqual({ list: [], get: 404, context: 404, contextWithoutSession: 0, search: 0, sql: 404, turn: 404 });
  });

  it('when only reads happen, then they do not keep a sliding session alive', async () => {
    const token = t.token('jack');
    const session = await seed(t, token);
    for (let i = 0; i < 3; i++) {
      t.clock.advance(9 * MIN);
      expect((await t.request('GET', `/sessions/${session.session_id}`, { token })).status).toBe(200);
    }
    t.clock.advance(4 * MIN);
    expect((await t.request('GET', `/sessions/${session.session_id}`, { token })).status).toBe(404);
  });

  it('when a session has more turns than MEMORY_MAX_TURNS_PER_SESSION, then the oldest leave the window but stay stored', async () => {
    const token = t.token('kate');
    const { session_id: id } = await seed(t, token);
    for (const q of ['second', 'third', 'fourth']) {
      await t.request('POST', `/sessions/${id}/turns`, { token, body: { question: `${q} question`, answer: 'x' } });
    }
    const ctx = await t.request('POST', '/memory/context', { token, body: { question: 'next', session_id: id, format: 'openai', k: 0 } });
    expect(ctx.body.history_turns).toEqual([2, 3, 4]);
    const stored = await t.request('GET', `/sessions/${id}`, { token });
    expect(stored.body.turns.map((x: any) => [x.turn_number, x.in_context_window])).toEqual([
      [1, false],
      [2, true],
      [3, true],
      [4, true],
    ]);
  });
});

describe('memory API retention: MEMORY_TTL=30m absolute', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ MEMORY_TTL: '30m', MEMORY_TTL_MODE: 'absolute' });
  });
  afterAll(async () => {
    await t?.close();
  });

  it('when 31 minutes pass since creation despite activity, then the session is gone from every read', async () => {
    const token = t.token('liam');
    const session = await seed(t, token);
    t.clock.advance(20 * MIN);
    const write = await t.request('POST', `/sessions/${session.session_id}/turns`, { token, body: { question: 'again', answer: 'x' } });
    expect(write.status).toBe(201);
    expect(write.body.session.expires_at).toBe(session.expires_at);
    t.clock.advance(11 * MIN);
    const gone = await readsOf(t, token, session.session_id);
    expect(gone).toEqual({ list: [], get: 404, context: 404, contextWithoutSession: 0, search: 0, sql: 404, turn: 404 });
  });
});
