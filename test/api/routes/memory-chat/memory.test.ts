import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ANSWER_CHARS_IN_CONTEXT } from '../../../../services/core/context/chat-block.js';
import { cutText } from '../../../../services/core/text.js';
import { databaseBehindFaultProxy, freshTestDatabase } from '../../../support/databases/test-database.js';
import { sendJson } from '../../../support/fakes/fake-http-server.js';
import { type FakeUpstream, salesReply } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

describe('memory in /memoryChat', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  const apps: TestApp[] = [];

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
    apps.push(t);
  });
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await upstream?.close();
  });

  async function chat(app: TestApp, sub: string, body: Record<string, unknown>, claims: Record<string, unknown> = {}) {
    return app.request('POST', '/memoryChat', { token: app.token(sub, claims), body });
  }

  /**
   * Asks `first`, then `second` in the same session with the memory read failing (the database
   * connection is reset under it); the second reply must still be a 200 that says memory was unavailable.
   */
  async function followUpWhenReadFails(first: string, second: string) {
    const testDatabase = await freshTestDatabase();
    const { database, proxy } = await databaseBehindFaultProxy(testDatabase);
    const app = await startTestApp({ ANSWER_URL: upstream.answerUrl }, { testDatabase, database });
    apps.push(app);
    const asked = await chat(app, 'faulty', { question: first });
    expect(asked.status).toBe(200);
    proxy.resetOnNextRequest();
    const reply = await chat(app, 'faulty', { question: second, session_id: asked.body.conversation_metadata.conversation_id });
    expect(reply.status).toBe(200);
    expect(reply.body.warnings.join(' ')).toMatch(/memory is unavailable/);
    expect(reply.body.memory_context_used.reason).toBe('memory_unavailable');
    // A memory store failure that degraded the answer (docs/monitoring.md).
    const metrics = await (await fetch(`${app.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/^memorychat_memory_store_failures_total\{effect="degraded"\} 1$/m);
    return reply;
  }

  it('when a user asks about something asked in another session, then semantic search brings that turn', async () => {
    await chat(t, 'searcher', { question: 'How many singers come from France?' });
    const reply = await chat(t, 'searcher', { question: 'How many singers are from France?' });
    expect(reply.body.memory_context_used.similar_queries_count).toBe(1);
    expect(upstream.lastBody().custom_instructions).toContain('How many singers come from France?');
  });

  it('when another user or tenant asks the same, then nothing of the first user is used', async () => {
    await chat(t, 'owner', { question: 'List the average salary of engineers in Oslo' });
    const other = await chat(t, 'stranger', { question: 'List the average salary of engineers in Oslo' });
    expect(other.body.memory_context_used.similar_queries_count).toBe(0);
    expect(upstream.lastBody().custom_instructions).toBeUndefined();
    const sameSubOtherTenant = await chat(t, 'owner', { question: 'List the average salary of engineers in Oslo' }, { tenant: 'acme' });
    expect(sameSubOtherTenant.body.memory_context_used.similar_queries_count).toBe(0);
  });

  it('when the request names databases, then only turns within them are used as memory', async () => {
    await chat(t, 'dbuser', { question: 'Total loans per branch in bank A', vdp_database_names: 'bank_a' });
    await chat(t, 'dbuser', { question: 'Total loans per branch in bank B', vdp_database_names: ['bank_b'] });
    const reply = await chat(t, 'dbuser', { question: 'Total loans per branch in bank', vdp_database_names: 'bank_a' });
    const sent = upstream.lastBody().custom_instructions as string;
    expect(sent).toContain('bank A');
    expect(sent).not.toContain('bank B');
    expect(reply.body.memory_context_used.similar_queries_count).toBe(1);
  });

  it('when the token carries a databases claim, then turns outside it are never used', async () => {
    const app = await startTestApp({ ANSWER_URL: upstream.answerUrl, JWT_DATABASES_CLAIM: 'dbs' });
    apps.push(app);
    await chat(app, 'claimed', { question: 'Total revenue per store in retail', vdp_database_names: 'retail' }, { dbs: ['retail', 'hr'] });
    await chat(app, 'claimed', { question: 'Total revenue per store in finance', vdp_database_names: 'finance' }, { dbs: ['finance'] });
    await chat(app, 'claimed', { question: 'Total revenue per store' }, { dbs: ['retail', 'hr'] });
    const sent = String(upstream.lastBody().custom_instructions);
    expect(sent).toContain('in retail');
    expect(sent).not.toContain('in finance');
  });

  it('when a clarification was asked, then its answer is history but carries no SQL', async () => {
    upstream.handle((req, res) =>
      sendJson(
        res,
        200,
        req.body.question === 'Show sales'
          ? { answer: 'Which year do you mean?', sql_query: '', tables_used: '' }
          : salesReply(req.body.question),
      ),
    );
    const first = await chat(t, 'clarify', { question: 'Show sales' });
    const second = await chat(t, 'clarify', { question: '2024', session_id: first.body.conversation_metadata.conversation_id });
    expect(second.status).toBe(200);
    const sent = String(upstream.lastBody().custom_instructions);
    expect(sent).toContain('Which year do you mean?');
    expect(sent).not.toContain('SQL:');
    upstream.handle((req, res) => sendJson(res, 200, salesReply(req.body.question)));
  });

  it('when the context exceeds MEMORY_MAX_CONTEXT_TOKENS, then it is cut to the budget, keeping the latest turn', async () => {
    const app = await startTestApp({ ANSWER_URL: upstream.answerUrl, MEMORY_MAX_CONTEXT_TOKENS: '220', MEMORY_SEMANTIC_SEARCH_K: '0' });
    apps.push(app);
    let sessionId: string | undefined;
    for (const year of [2018, 2019, 2020, 2021, 2022]) {
      const reply = await chat(app, 'budget', { question: `Show me total sales by region for ${year}`, session_id: sessionId });
      sessionId = reply.body.conversation_metadata.conversation_id;
    }
    const reply = await chat(app, 'budget', { question: 'What about 2023?', session_id: sessionId });
    const used = reply.body.memory_context_used;
    expect(used.context_truncated).toBe(true);
    expect(used.context_tokens).toBeGreaterThan(0);
    expect(used.context_tokens).toBeLessThanOrEqual(220);
    expect(used.history_messages_count).toBeLessThan(5);
    expect(used.custom_instructions).toContain('for 2022');
    expect(used.custom_instructions).not.toContain('for 2018');
  });

  it('when a long answer is in history, then it is cut to 500 characters in context', async () => {
    upstream.handle((req, res) => sendJson(res, 200, { ...salesReply(req.body.question), answer: `Result: ${'x'.repeat(2000)}` }));
    const first = await chat(t, 'longanswer', { question: 'Show me total sales by region for 2024' });
    upstream.handle((req, res) => sendJson(res, 200, salesReply(req.body.question)));
    await chat(t, 'longanswer', { question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id });
    const answerLine = String(upstream.lastBody().custom_instructions)
      .split('\n')
      .find((l) => l.startsWith('Answer: Result'))!;
    expect(answerLine.length).toBeLessThanOrEqual('Answer: '.length + 500);
    expect(answerLine.endsWith('…')).toBe(true);
  });

  it('when a long answer is read for the block, then only its start is read, cut as the whole would be, and /memory/context still reads it whole', async () => {
    // Characters beyond the BMP: JavaScript counts two units for each, Postgres's left() one character.
    const long = `Result: ${'😀 x'.repeat(400)}`;
    upstream.handle((req, res) => sendJson(res, 200, { ...salesReply(req.body.question), answer: long }));
    const first = await chat(t, 'longcut', { question: 'Show me total sales by region for 2024' });
    upstream.handle((req, res) => sendJson(res, 200, salesReply(req.body.question)));
    const cut = `Answer: ${cutText(long, ANSWER_CHARS_IN_CONTEXT)}`;
    await chat(t, 'longcut', { question: 'What about 2023?', session_id: first.body.conversation_metadata.conversation_id });
    expect(String(upstream.lastBody().custom_instructions).split('\n')).toContain(cut);
    // Another conversation finds the turn as a similar one.
    const other = await chat(t, 'longcut', { question: 'Show me total sales by region for 2024' });
    expect(other.body.memory_context_used.similar_queries_count).toBeGreaterThan(0);
    expect(String(upstream.lastBody().custom_instructions).split('\n')).toContain(cut);
    const context = await t.request('POST', '/memory/context', {
      token: t.token('longcut'),
      body: { question: 'Show me total sales by region for 2024' },
    });
    expect(context.status).toBe(200);
    expect(context.body.memories.map((m: { answer: string }) => m.answer)).toContain(long);
  });

  it('when use_memory is false, then no memory is sent but the turn is still stored', async () => {
    const first = await chat(t, 'nomem', { question: 'Show me total sales by region for 2024' });
    const second = await chat(t, 'nomem', {
      question: 'What about 2023?',
      session_id: first.body.conversation_metadata.conversation_id,
      use_memory: false,
    });
    expect(upstream.lastBody().custom_instructions).toBeUndefined();
    expect(second.body.memory_context_used).toMatchObject({ history_messages_count: 0, similar_queries_count: 0, context_tokens: 0 });
    expect(second.body.conversation_metadata.message_count).toBe(2);
  });

  it('when the body is invalid, then 400 problems name the fields', async () => {
    const token = t.token('validator');
    const missing = await t.request('POST', '/memoryChat', { token, body: {} });
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('validation-failed');
    expect(missing.body.errors[0].field).toBe('body.question');
    const tooLong = await t.request('POST', '/memoryChat', { token, body: { question: 'x'.repeat(4001) } });
    expect(tooLong.status).toBe(400);
    const badSession = await t.request('POST', '/memoryChat', { token, body: { question: 'hi', session_id: 'not-a-uuid' } });
    expect(badSession.status).toBe(400);
    expect(badSession.body.errors[0].field).toBe('body.session_id');
    const blank = await t.request('POST', '/memoryChat', { token, body: { question: '   ' } });
    expect(blank.status).toBe(400);
    const badJson = await t.request('POST', '/memoryChat', { token, body: '{"question": ' });
    expect(badJson.status).toBe(400);
    expect(badJson.body.code).toBe('invalid-json');
    const huge = await t.request('POST', '/memoryChat', { token, body: { question: 'hi', custom: 'y'.repeat(1_100_000) } });
    expect(huge.status).toBe(413);
    expect(huge.body.code).toBe('payload-too-large');
    const unknownSession = await t.request('POST', '/memoryChat', {
      token,
      body: { question: 'hi', session_id: '00000000-0000-4000-8000-000000000000' },
    });
    expect(unknownSession.status).toBe(404);
  });

  it('when the memory store fails while reading, then the answer comes without memory and with a warning', async () => {
    const second = await followUpWhenReadFails('Show me total sales by region for 2024', 'What about 2023?');
    expect(second.body.memory_context_used.history_messages_count).toBe(0);
    expect(upstream.lastBody().custom_instructions).toBeUndefined();
    // The write went through on a new connection: the turn is not lost.
    expect(second.body.conversation_metadata.message_count).toBe(2);
  });

  it('when the memory store fails while reading a question that repeats one of its session, then the turn is still marked as its duplicate', async () => {
    // The recent questions come with the memory read; when that read fails they are read on their own.
    const repeat = await followUpWhenReadFails('How many singers come from France?', 'How many singers come from France ?');
    expect(repeat.body.duplicate_of).toBe(1);
  });
});
