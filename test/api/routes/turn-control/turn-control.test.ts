import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeUpstream, salesReply } from '../../../support/fakes/fake-upstream.js';
import { seedSession } from '../../../support/service/seed-memory.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

const HOUR = 3_600_000;

describe('per-turn control: correct, delete, rate', () => {
  let upstream: FakeUpstream;
  let t: TestApp;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  const as = (sub: string) => ({
    chat: (body: Record<string, unknown>) => t.request('POST', '/memoryChat', { token: t.token(sub), body }),
    call: (method: string, url: string, body?: unknown) => t.request(method, url, { token: t.token(sub), body }),
  });
  const SQL_2019 = salesReply('2019').sql_query;
  const sent = () => String(upstream.lastBody().custom_instructions ?? '');

  it('when nobody rated a turn, then a later similar question gets its SQL (the control)', async () => {
    const user = as('control');
    await user.chat({ question: 'Total sales by region for 2019' });
    const later = await user.chat({ question: 'Total sales by region for 2019, please' });
    expect(later.body.memory_context_used.similar_queries_count).toBe(1);
    expect(sent()).toContain(SQL_2019);
  });

  it('when a turn is rated down, then its SQL is not offered to a later similar question until the turn is corrected', async () => {
    const user = as('rater');
    const first = await user.chat({ question: 'Total sales by region for 2019' });
    const sessionId = first.body.conversation_metadata.conversation_id;
    const rated = await user.call('POST', `/sessions/${sessionId}/turns/1/feedback`, { rating: 'down', comment: 'wrong year column' });
    expect(rated.status).toBe(200);
    expect(rated.body.turn.feedback).toMatchObject({ rating: 'down', comment: 'wrong year column' });

    const later = await user.chat({ question: 'Total sales by region for 2019, please' });
    expect(later.body.memory_context_used.similar_queries_count).toBe(0);
    expect(sent()).not.toContain(SQL_2019);

    const inSession = await user.chat({ question: 'What about the other regions?', session_id: sessionId, semantic_search_k: 0 });
    expect(inSession.body.memory_context_used.history_messages_count).toBe(1);
    expect(sent()).toContain('Total sales by region for 2019');
    expect(sent()).not.toContain(SQL_2019);

    const detail = await user.call('GET', `/sessions/${sessionId}`);
    expect(detail.body.turns[0].feedback).toMatchObject({ rating: 'down', comment: 'wrong year column' });
    const search = await user.call('POST', '/memory/search', { query: 'Total sales by region for 2019', k: 5 });
    const hit = search.body.results.find(
      (r: { session_id: string; turn_number: number }) => r.session_id === sessionId && r.turn_number === 1,
    );
    expect(hit.feedback_rating).toBe('down');

    const fixed = 'SELECT region, SUM(amount) FROM sales WHERE sale_year = 2019 GROUP BY region';
    const corrected = await user.call('PATCH', `/sessions/${sessionId}/turns/1`, { sql_query: fixed });
    expect(corrected.status).toBe(200);
    expect(corrected.body.turn).toMatchObject({ sql_query: fixed, status: 'ok', feedback: null });
    await user.chat({ question: 'What about the other regions?', session_id: sessionId });
    expect(sent()).toContain(fixed);
  });

  it('when a turn is deleted, then the others keep their numbers and the next turn takes a new one', async () => {
    const user = as('deleter');
    const first = await user.chat({ question: 'Total sales for 2020' });
    const sessionId = first.body.conversation_metadata.conversation_id;
    await user.chat({ question: 'Total sales for 2021', session_id: sessionId });
    await user.chat({ question: 'Total sales for 2022', session_id: sessionId });
    const removed = await user.call('DELETE', `/sessions/${sessionId}/turns/2`);
    expect(removed.status).toBe(204);
    const detail = await user.call('GET', `/sessions/${sessionId}`);
    expect(detail.body.turns.map((turn: { turn_number: number }) => turn.turn_number)).toEqual([1, 3]);
    expect(detail.body.message_count).toBe(2);
    const next = await user.chat({ question: 'Total sales for 2023', session_id: sessionId });
    expect(next.body.conversation_metadata.message_count).toBe(3);
    const again = await user.call('GET', `/sessions/${sessionId}`);
    expect(again.body.turns.map((turn: { turn_number: number }) => turn.turn_number)).toEqual([1, 3, 4]);

    expect((await user.call('DELETE', `/sessions/${sessionId}/turns/2`)).body.code).toBe('turn-not-found');
    expect((await as('intruder').call('DELETE', `/sessions/${sessionId}/turns/1`)).body.code).toBe('session-not-found');
    expect((await as('intruder').call('PATCH', `/sessions/${sessionId}/turns/1`, { answer: 'x' })).body.code).toBe('session-not-found');
    expect((await as('intruder').call('POST', `/sessions/${sessionId}/turns/1/feedback`, { rating: 'up' })).body.code).toBe(
      'session-not-found',
    );
  });

  it('when a corrected turn no longer repeats an earlier one, then the dedup re-check clears its mark', async () => {
    const user = as('deduper');
    const first = await user.call('POST', '/sessions/turns', {
      question: 'How many singers do we have?',
      answer: '6',
      sql_query: 'SELECT count(*) FROM singer',
    });
    const sessionId = first.body.session.session_id;
    const second = await user.call('POST', `/sessions/${sessionId}/turns`, {
      question: 'How many singers do we have?',
      answer: '6',
      sql_query: 'SELECT count(*) FROM singer',
    });
    expect(second.body.turn.duplicate_of).toBe(1);
    await user.call('DELETE', `/sessions/${sessionId}/turns/1`);
    const corrected = await user.call('PATCH', `/sessions/${sessionId}/turns/2`, { answer: 'Six singers.' });
    expect(corrected.body.turn).toMatchObject({ answer: 'Six singers.', duplicate_of: null, status: 'ok' });
  });

  it('when a turn the summary covers is rated down, corrected or deleted, then the summary is dropped and steers nothing', async () => {
    const summary = 'SUMMARY-QUOTING-TURN-1: SELECT wrong FROM sales';
    const summarized = async (sub: string) =>
      seedSession(t.admin, { userId: sub, turns: 3, expiresAt: new Date(t.clock.now.getTime() + HOUR), summary }); // covers turn 1
    const summaryOf = async (sub: string, sessionId: string) => {
      const detail = await as(sub).call('GET', `/sessions/${sessionId}`);
      return [detail.body.is_summarized, detail.body.summary_through_turn];
    };

    const rated = await summarized('summary-rater');
    await as('summary-rater').call('POST', `/sessions/${rated}/turns/2/feedback`, { rating: 'down' }); // not covered
    await as('summary-rater').call('POST', `/sessions/${rated}/turns/1/feedback`, { rating: 'up' });
    expect(await summaryOf('summary-rater', rated)).toEqual([true, 1]);
    await as('summary-rater').call('POST', `/sessions/${rated}/turns/1/feedback`, { rating: 'down' });
    expect(await summaryOf('summary-rater', rated)).toEqual([false, null]);
    await as('summary-rater').chat({ question: 'And for 2024?', session_id: rated });
    expect(sent()).not.toContain('SUMMARY-QUOTING-TURN-1');

    const corrected = await summarized('summary-corrector');
    await as('summary-corrector').call('PATCH', `/sessions/${corrected}/turns/1`, { sql_query: 'SELECT right FROM sales' });
    expect(await summaryOf('summary-corrector', corrected)).toEqual([false, null]);

    const deleted = await summarized('summary-deleter');
    await as('summary-deleter').call('DELETE', `/sessions/${deleted}/turns/1`);
    expect(await summaryOf('summary-deleter', deleted)).toEqual([false, null]);
  });

  it('when a correction is empty or a rating unknown, then the request is refused with a problem', async () => {
    const user = as('validator');
    const first = await user.chat({ question: 'Total sales for 2020' });
    const sessionId = first.body.conversation_metadata.conversation_id;
    expect((await user.call('PATCH', `/sessions/${sessionId}/turns/1`, {})).status).toBe(400);
    expect((await user.call('POST', `/sessions/${sessionId}/turns/1/feedback`, { rating: 'meh' })).status).toBe(400);
    expect((await user.call('PATCH', `/sessions/${sessionId}/turns/0`, { answer: 'x' })).status).toBe(400);
  });
});
