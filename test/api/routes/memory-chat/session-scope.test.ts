import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

/**
 * A session's stored memory scope (docs/memory-api.md#memory-scope): set by the request that creates
 * it, by PATCH /sessions/{id} or by a memory command; a request's `memory_scope` overrides it for
 * that request. A session kept to itself recalls no other conversation, and no other recalls it.
 * The fake upstream writes SQL naming the question's year, so "year = 2024" in what reaches it is
 * the 2024 conversation's SQL.
 */
describe('memory scope stored per session', () => {
  let upstream: Awaited<ReturnType<typeof startFakeUpstream>>;
  let t: TestApp;

  beforeAll(async () => {
    upstream = await startFakeUpstream();
    t = await startTestApp({ ANSWER_URL: upstream.answerUrl });
  });
  afterAll(async () => {
    await t?.close();
    await upstream?.close();
  });

  const userOf = (sub: string) => {
    const token = t.token(sub);
    return {
      chat: (body: Record<string, unknown>) => t.request('POST', '/memoryChat', { token, body }),
      get: (id: string) => t.request('GET', `/sessions/${id}`, { token }),
      patch: (id: string, body: unknown) => t.request('PATCH', `/sessions/${id}`, { token, body }),
      clear: (id: string) => t.request('POST', `/sessions/${id}/clear`, { token }),
    };
  };
  const sentUpstream = () => JSON.stringify(upstream.lastBody());

  it('when a session is set to session scope, then a new thread does not recall it, nor it another; by default both recall', async () => {
    const u = userOf('scope-patch');
    const old = await u.chat({ question: 'Show me total sales by region for 2024', session_key: 'old' });
    const oldId = old.body.conversation_metadata.conversation_id;
    const other = await u.chat({ question: 'Show me total sales by region for 2022', session_key: 'other' });
    expect(other.body.memory_context_used.similar_queries_count).toBeGreaterThan(0);
    expect(sentUpstream()).toContain('year = 2024');
    expect((await u.get(oldId)).body.memory_scope).toBeNull();

    const patched = await u.patch(oldId, { memory_scope: 'session' });
    expect(patched.status).toBe(200);
    expect(patched.body.memory_scope).toBe('session');
    expect((await u.get(oldId)).body.memory_scope).toBe('session');

    const fresh = await u.chat({ question: 'Total sales by region in 2023?', session_key: 'new-thread' });
    expect(fresh.status).toBe(200);
    expect(sentUpstream()).not.toContain('year = 2024');
    expect(fresh.body.memory_context_used.similar_queries.map((q: { session_id: string }) => q.session_id)).not.toContain(oldId);

    const inside = await u.chat({ question: 'Total sales by region in 2022?', session_id: oldId });
    expect(inside.body.memory_context_used.similar_queries.every((q: { session_id: string }) => q.session_id === oldId)).toBe(true);
    expect(sentUpstream()).not.toContain('year = 2022 GROUP');

    // The request's scope overrides the stored one for that request alone.
    const over = await u.chat({ question: 'Total sales by region in 2022?', session_id: oldId, memory_scope: 'user' });
    expect(over.body.memory_context_used.similar_queries.some((q: { session_id: string }) => q.session_id !== oldId)).toBe(true);
    expect((await u.get(oldId)).body.memory_scope).toBe('session');

    // null is the default again: the conversation is recalled elsewhere once more.
    expect((await u.patch(oldId, { memory_scope: null })).body.memory_scope).toBeNull();
    const again = await u.chat({ question: 'Total sales by region in 2023?', session_key: 'newer-thread' });
    expect(again.body.memory_context_used.similar_queries.map((q: { session_id: string }) => q.session_id)).toContain(oldId);
  });

  it('when a conversation is kept to itself (/private), then searching all of the user’s memory leaves it out, and searching that session finds it', async () => {
    const token = t.token('scope-search');
    const u = userOf('scope-search');
    const secret = await u.chat({ question: 'Show me total sales by region for 2021', session_key: 'private-thread' });
    const secretId = secret.body.conversation_metadata.conversation_id;
    await u.chat({ question: 'Show me total sales by region for 2020', session_key: 'open-thread' });
    const before = await t.request('POST', '/memory/search', { token, body: { query: 'total sales by region', k: 10 } });
    expect(before.body.results.map((r: { session_id: string }) => r.session_id)).toContain(secretId);

    expect((await u.chat({ question: '/private', session_id: secretId })).status).toBe(200);
    expect((await u.get(secretId)).body.memory_scope).toBe('session');
    const all = await t.request('POST', '/memory/search', { token, body: { query: 'total sales by region', k: 10 } });
    expect(all.status).toBe(200);
    expect(all.body.results.length).toBeGreaterThan(0);
    expect(all.body.results.map((r: { session_id: string }) => r.session_id)).not.toContain(secretId);
    const inside = await t.request('POST', '/memory/search', {
      token,
      body: { query: 'total sales by region', k: 10, session_id: secretId },
    });
    expect(inside.body.results.map((r: { question: string }) => r.question)).toContain('Show me total sales by region for 2021');
  });

  it('when a request that creates a session names a scope, then the session keeps it, by session_key or without', async () => {
    const u = userOf('scope-create');
    await u.chat({ question: 'Show me total sales by region for 2024', session_key: 'shared' });
    const keyed = await u.chat({
      question: 'Show me total sales by region for 2021',
      session_key: 'slack:C1:1.0',
      memory_scope: 'session',
    });
    expect(sentUpstream()).not.toContain('year = 2024');
    const keyedId = keyed.body.conversation_metadata.conversation_id;
    expect(keyed.body.conversation_metadata.memory_scope).toBe('session');
    expect((await u.get(keyedId)).body.memory_scope).toBe('session');
    const listed = await t.request('GET', '/sessions?key=slack:C1:1.0', { token: t.token('scope-create') });
    expect(listed.body.sessions[0].memory_scope).toBe('session');

    const unkeyed = await u.chat({ question: 'Show me total sales by region for 2020', memory_scope: 'session' });
    expect((await u.get(unkeyed.body.conversation_metadata.conversation_id)).body.memory_scope).toBe('session');

    // A follow-up without a scope keeps to the conversation, as stored.
    await u.chat({ question: 'Total sales by region in 2024?', session_key: 'slack:C1:1.0' });
    expect(sentUpstream()).not.toContain('year = 2024');
    // Neither session-scoped conversation is recalled by a new one.
    await u.chat({ question: 'Total sales by region in 2019?', session_key: 'probe' });
    expect(sentUpstream()).not.toContain('year = 2021');
    expect(sentUpstream()).not.toContain('year = 2020');
    expect(sentUpstream()).toContain('year = 2024');
  });

  it('when the user says "keep this conversation to itself", then the session keeps session scope; "use my other conversations too" undoes it', async () => {
    const u = userOf('scope-command');
    await u.chat({ question: 'Show me total sales by region for 2024', session_key: 'earlier' });
    const said = await u.chat({ question: 'Keep this conversation to itself, please', session_key: 'private' });
    expect(said.status).toBe(200);
    expect(said.body.memory_command).toEqual({ name: 'memory_scope', memory_scope: 'session' });
    const privateId = said.body.conversation_metadata.conversation_id;
    expect((await u.get(privateId)).body.memory_scope).toBe('session');

    const asked = await u.chat({ question: 'Total sales by region in 2023?', session_key: 'private' });
    expect(asked.body.memory_context_used.similar_queries_count).toBe(0);
    expect(sentUpstream()).not.toContain('year = 2024');
    // /memory/context reads the stored scope too, and a request's scope overrides it there as well.
    const context = (body: Record<string, unknown>) =>
      t.request('POST', '/memory/context', {
        token: t.token('scope-command'),
        body: { question: 'Total sales by region for 2024?', session_key: 'private', ...body },
      });
    expect((await context({})).body.context_text).not.toContain('year = 2024');
    expect((await context({ memory_scope: 'user' })).body.context_text).toContain('year = 2024');

    const undone = await u.chat({ question: 'use my other conversations too', session_key: 'private' });
    expect(undone.body.memory_command).toEqual({ name: 'memory_scope', memory_scope: 'user' });
    expect((await u.get(privateId)).body.memory_scope).toBe('user');
    await u.chat({ question: 'Total sales by region in 2022?', session_key: 'private' });
    expect(sentUpstream()).toContain('year = 2024');
  });

  // "What about 2023?" alone is like nothing stored for the local embedder and has no term in common
  // with it, so the new thread asks the whole question: by default it is resolved from the other conversation.
  it('when a conversation is forgotten by /clear, then a brand-new thread does not resolve 2023 from its SQL', async () => {
    const u = userOf('clear-then-new');
    const old = await u.chat({ question: 'Show me total sales by region for 2024', session_key: 'telegram:1' });
    // Before the /clear, a new thread's "What about 2023?" is resolved from it: the check below can fail.
    await u.chat({ question: 'Total sales by region in 2023?', session_key: 'telegram:0' });
    expect(sentUpstream()).toContain('year = 2024');
    await u.chat({ question: '/forget', session_key: 'telegram:0' });
    expect((await u.chat({ question: '/clear', session_key: 'telegram:1' })).body.memory_command).toEqual({
      name: 'forget',
      cleared: true,
    });
    const fresh = await u.chat({ question: 'Total sales by region in 2023?', session_key: 'telegram:2' });
    expect(fresh.status).toBe(200);
    expect(fresh.body.memory_context_used.similar_queries_count).toBe(0);
    expect(sentUpstream()).not.toContain('year = 2024');
    // The forgotten turns are deleted, not hidden: the session is empty and its turns are gone.
    const session = await u.get(old.body.conversation_metadata.conversation_id);
    expect(session.body.turns.filter((turn: { status: string }) => turn.status !== 'memory_command')).toEqual([]);
  });

  it("when PATCH names neither field, an unknown scope, or another user's session, then 400, 400 and 404", async () => {
    const u = userOf('scope-bad');
    const made = await u.chat({ question: 'Show me total sales by region for 2024' });
    const id = made.body.conversation_metadata.conversation_id;
    expect((await u.patch(id, {})).status).toBe(400);
    const unknown = await u.patch(id, { memory_scope: 'tenant' });
    expect(unknown.status).toBe(400);
    expect(unknown.body.code).toBe('validation-failed');
    expect((await userOf('scope-intruder').patch(id, { memory_scope: 'session' })).status).toBe(404);
    expect((await u.get(id)).body.memory_scope).toBeNull();
    // Renaming alone leaves the scope as it is.
    await u.patch(id, { memory_scope: 'session' });
    const renamed = await u.patch(id, { session_name: 'Sales' });
    expect(renamed.body).toMatchObject({ session_name: 'Sales', memory_scope: 'session' });
  });
});
