import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

describe('memory API: sessions', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  async function newSession(token: string, question: string) {
    const res = await t.request('POST', '/sessions/turns', { token, body: { question, answer: 'ok' } });
    expect(res.status).toBe(201);
    t.clock.advance(1000);
    return res.body.session.session_id as string;
  }

  it('when sessions are listed page by page, then they come newest first and each exactly once', async () => {
    const erin = t.token('erin');
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await newSession(erin, `question ${i}`));
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await t.request('GET', `/sessions?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: erin });
      expect(page.status).toBe(200);
      expect(page.body.sessions.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.sessions.map((s: any) => s.session_id));
      cursor = page.body.next_cursor;
    } while (cursor);
    expect(seen).toEqual([...ids].reverse());
  });

  it('when a cursor is not one we returned, then it answers 400 invalid-cursor', async () => {
    const res = await t.request('GET', '/sessions?cursor=bm90LWEtY3Vyc29y', { token: t.token('erin') });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('invalid-cursor');
  });

  it('when a session is read, renamed, cleared and deleted, then each answers as documented', async () => {
    const frank = t.token('frank');
    const id = await newSession(frank, 'What were sales in 2024?');
    await t.request('POST', `/sessions/${id}/turns`, {
      token: frank,
      body: { question: 'And 2023?', answer: 'less', context: { year: 2023 } },
    });

    const got = await t.request('GET', `/sessions/${id}`, { token: frank });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ session_id: id, session_name: 'What were sales in 2024?', message_count: 2, slots: { year: 2023 } });
    expect(got.body.turns.map((turn: any) => [turn.turn_number, turn.question, turn.status])).toEqual([
      [1, 'What were sales in 2024?', 'clarification'],
      [2, 'And 2023?', 'clarification'],
    ]);

    const renamed = await t.request('PATCH', `/sessions/${id}`, { token: frank, body: { session_name: 'Sales' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.session_name).toBe('Sales');

    const cleared = await t.request('POST', `/sessions/${id}/clear`, { token: frank });
    expect(cleared.status).toBe(200);
    expect(cleared.body).toMatchObject({ message_count: 0, slots: {}, session_name: 'Sales' });
    expect((await t.request('GET', `/sessions/${id}`, { token: frank })).body.turns).toEqual([]);
    const next = await t.request('POST', `/sessions/${id}/turns`, { token: frank, body: { question: 'Fresh start', answer: 'ok' } });
    expect(next.body.turn.turn_number).toBe(3);

    expect((await t.request('DELETE', `/sessions/${id}`, { token: frank })).status).toBe(204);
    expect((await t.request('GET', `/sessions/${id}`, { token: frank })).status).toBe(404);
    expect((await t.request('DELETE', `/sessions/${id}`, { token: frank })).status).toBe(404);
  });

  it('when another user addresses my session, then every route answers 404 and nothing changes', async () => {
    const grace = t.token('grace');
    const id = await newSession(grace, 'private question');
    const mallory = t.token('mallory');
    for (const [method, url, body] of [
      ['GET', `/sessions/${id}`, undefined],
      ['PATCH', `/sessions/${id}`, { session_name: 'mine now' }],
      ['POST', `/sessions/${id}/clear`, undefined],
      ['DELETE', `/sessions/${id}`, undefined],
      ['GET', `/sessions/${id}/turns/last/sql`, undefined],
    ] as const) {
      const res = await t.request(method, url, { token: mallory, body });
      expect(res.status, `${method} ${url}`).toBe(404);
      expect(res.body.code).toBe('session-not-found');
    }
    expect((await t.request('GET', '/sessions', { token: mallory })).body.sessions).toEqual([]);
    const mine = await t.request('GET', `/sessions/${id}`, { token: grace });
    expect(mine.body).toMatchObject({ session_name: 'private question', message_count: 1 });
  });

  it('when the id is not a uuid or the rename is empty, then it answers 400 validation-failed', async () => {
    const token = t.token('henry');
    expect((await t.request('GET', '/sessions/not-a-uuid', { token })).body.code).toBe('validation-failed');
    const id = await newSession(token, 'q');
    const res = await t.request('PATCH', `/sessions/${id}`, { token, body: { session_name: '' } });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation-failed');
  });
});
