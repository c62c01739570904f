import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

/**
 * memory_scope (docs/memory-api.md#memory-scope): `user`, the default, recalls the user's similar
 * questions of other sessions; `session` keeps to the conversation, so "What about 2023?" in a new
 * thread is not resolved from another conversation's SQL.
 */
describe('memory scope (memory_scope: user | session)', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
    token = t.token('scoped-user');
    const earlier = await t.request('POST', '/memoryChat', {
      token,
      body: { question: 'Show me total sales by region for 2024', session_key: 'old-thread' },
    });
    expect(earlier.status).toBe(200);
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  const ask = (body: Record<string, unknown>) =>
    t.request('POST', '/memoryChat', { token, body: { question: 'Total sales by region in 2023?', ...body } });

  it("when a new thread asks with memory_scope session, then no other conversation's SQL reaches the answerer; by default it does", async () => {
    const scoped = await ask({ session_key: 'new-thread-1', memory_scope: 'session' });
    expect(scoped.status).toBe(200);
    expect(scoped.body.memory_context_used.similar_queries_count).toBe(0);
    expect(JSON.stringify(upstream.lastBody())).not.toContain('year = 2024');

    const byDefault = await ask({ session_key: 'new-thread-2' });
    expect(byDefault.body.memory_context_used.similar_queries_count).toBeGreaterThan(0);
    expect(JSON.stringify(upstream.lastBody())).toContain('year = 2024');
  });

  it('when the conversation itself has the turns, then memory_scope session still uses them', async () => {
    const first = await ask({ session_key: 'own-thread', memory_scope: 'session', question: 'Show me total sales by region for 2022' });
    const next = await ask({ session_key: 'own-thread', memory_scope: 'session', question: 'What about 2021?' });
    expect(next.body.conversation_metadata.conversation_id).toBe(first.body.conversation_metadata.conversation_id);
    expect(next.body.memory_context_used.history_messages_count).toBe(1);
    expect(JSON.stringify(upstream.lastBody())).toContain('year = 2022');
    expect(JSON.stringify(upstream.lastBody())).not.toContain('year = 2024');
  });

  it('when a bot asks /memory/context with memory_scope session, then related memories of other sessions are left out', async () => {
    const bot = t.token('context-user');
    await t.request('POST', '/sessions/turns', {
      token: bot,
      body: { question: 'Total sales by region for 2024?', answer: 'EMEA 100.', sql_query: 'SELECT region FROM sales WHERE year = 2024' },
    });
    const context = (body: Record<string, unknown>) =>
      t.request('POST', '/memory/context', { token: bot, body: { question: 'Total sales by region for 2023?', ...body } });
    const scoped = await context({ memory_scope: 'session', session_key: 'new-thread-3' });
    expect(scoped.status).toBe(200);
    expect(scoped.body.context_text).not.toContain('year = 2024');
    expect((await context({})).body.context_text).toContain('year = 2024');
  });

  it('when a conversation is forgotten (the /forget command, POST /sessions/{id}/clear, or DELETE), then no later memory block of any session recalls it', async () => {
    for (const forget of ['command', 'clear', 'delete'] as const) {
      const user = t.token(`forgetful-${forget}`);
      const chat = (body: Record<string, unknown>) => t.request('POST', '/memoryChat', { token: user, body });
      const old = await chat({ question: 'Show me total sales by region for 2024', session_key: 'to-forget' });
      const oldId = old.body.conversation_metadata.conversation_id;
      await chat({ question: 'Total sales by region in 2023?', session_key: 'probe-before' });
      expect(JSON.stringify(upstream.lastBody()), forget).toContain('year = 2024');

      if (forget === 'command') expect((await chat({ question: '/forget', session_id: oldId })).status).toBe(200);
      else if (forget === 'clear') expect((await t.request('POST', `/sessions/${oldId}/clear`, { token: user })).status).toBe(200);
      else expect((await t.request('DELETE', `/sessions/${oldId}`, { token: user })).status).toBe(204);

      const after = await chat({ question: 'Total sales by region in 2022?', session_key: 'probe-after' });
      expect(after.status).toBe(200);
      // The probe before was itself a 2023 turn with its own SQL; the forgotten 2024 SQL is gone.
      expect(JSON.stringify(upstream.lastBody()), forget).not.toContain('year = 2024');
      const context = await t.request('POST', '/memory/context', { token: user, body: { question: 'Total sales by region for 2024?' } });
      expect(context.body.context_text, forget).not.toContain('year = 2024');
    }
  });

  it('when memory_scope is not one of the two, then 400 naming the field', async () => {
    const res = await ask({ memory_scope: 'tenant' });
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('validation-failed');
    expect(res.body.errors.map((e: { field: string }) => e.field)).toContain('body.memory_scope');
  });
});
