import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FakeUpstream } from '../../../support/fakes/fake-upstream.js';
import { startServiceWithUpstream, stopServiceWithUpstream } from '../../../support/service/service-with-upstream.js';
import type { TestApp } from '../../../support/service/test-app.js';

/** A JSON body carries its own types: a value of the wrong type is refused, never converted and stored. */
describe('request bodies are validated without type coercion', () => {
  let upstream: FakeUpstream;
  let t: TestApp;
  let token: string;

  beforeAll(async () => {
    ({ t, upstream } = await startServiceWithUpstream());
    token = t.token('typed');
  });
  afterAll(() => stopServiceWithUpstream({ t, upstream }));

  async function expect400Naming(url: string, body: unknown, field: string) {
    const reply = await t.request('POST', url, { token, body });
    expect(reply.status, JSON.stringify(body)).toBe(400);
    expect(reply.headers.get('content-type')).toContain('application/problem+json');
    expect(reply.body.code).toBe('validation-failed');
    expect(reply.body.errors.map((e: { field: string }) => e.field)).toContain(field);
  }

  it('when /memoryChat gets a question that is false, a number or a list, then 400 names the field and nothing is stored or sent upstream', async () => {
    for (const question of [false, 123, ['a'], null, { text: 'a' }]) {
      await expect400Naming('/memoryChat', { question }, 'body.question');
    }
    await expect400Naming('/memoryChat', { question: 'Sales in 2024?', use_memory: 'false' }, 'body.use_memory');
    await expect400Naming('/memoryChat', { question: 'Sales in 2024?', semantic_search_k: '3' }, 'body.semantic_search_k');
    expect(upstream.requests).toHaveLength(0);
    const sessions = await t.request('GET', '/sessions', { token });
    expect(sessions.body.sessions).toEqual([]);
  });

  it('when a turn or a search carries a wrong-typed field, then 400 names it', async () => {
    await expect400Naming('/sessions/turns', { question: 123, answer: 'x' }, 'body.question');
    await expect400Naming('/sessions/turns', { question: 'Sales?', answer: false }, 'body.answer');
    await expect400Naming('/memory/search', { query: false }, 'body.query');
    await expect400Naming('/memory/search', { query: 'sales', k: '5' }, 'body.k');
    await expect400Naming('/memory/context', { question: ['a'] }, 'body.question');
    const sessions = await t.request('GET', '/sessions', { token });
    expect(sessions.body.sessions).toEqual([]);
  });

  it('when the same values are of the right type, then they are accepted; query strings are still read as numbers', async () => {
    const reply = await t.request('POST', '/memoryChat', {
      token,
      body: { question: 'Sales in 2024?', use_memory: false, semantic_search_k: 3 },
    });
    expect(reply.status).toBe(200);
    expect(upstream.lastBody().question).toBe('Sales in 2024?');
    const listed = await t.request('GET', '/sessions?limit=1', { token });
    expect(listed.status).toBe(200);
    expect(listed.body.sessions).toHaveLength(1);
  });

  it('when a JSON body is not valid UTF-8, then 400 invalid-body and nothing is stored or sent upstream', async () => {
    const sent = upstream.requests.length;
    for (const bytes of [
      Buffer.concat([Buffer.from('{"question":"Sales '), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]),
      Buffer.concat([Buffer.from('{"question":"caf'), Buffer.from([0xc3]), Buffer.from('"}')]), // a cut two-byte sequence
      Buffer.concat([Buffer.from('{"question":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from('"}')]), // an encoded surrogate
    ]) {
      const reply = await fetch(`${t.baseUrl}/memoryChat`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: bytes,
      });
      expect(reply.status, bytes.toString('hex')).toBe(400);
      expect(reply.headers.get('content-type')).toContain('application/problem+json');
      expect((await reply.json()).code).toBe('invalid-body');
    }
    const turn = await fetch(`${t.baseUrl}/sessions/turns`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json; charset=utf-8' },
      body: Buffer.concat([Buffer.from('{"question":"q","answer":"'), Buffer.from([0x80]), Buffer.from('"}')]),
    });
    expect([turn.status, (await turn.json()).code]).toEqual([400, 'invalid-body']);
    expect(upstream.requests).toHaveLength(sent);
    const replaced = await t.admin.query(`SELECT 1 FROM turns WHERE question LIKE '%\uFFFD%' OR answer LIKE '%\uFFFD%'`);
    expect(replaced.rowCount).toBe(0);
  });

  it('when /memoryChat or a turn is sent as text/plain or a form, then 415 unsupported-media-type', async () => {
    for (const [url, type, body] of <[string, string, string][]>[
      ['/memoryChat', 'text/plain', 'Sales in 2024?'],
      ['/memoryChat', 'text/plain; charset=utf-8', '{"question":"Sales in 2024?"}'],
      ['/sessions/turns', 'text/plain', '{"question":"q","answer":"a"}'],
      ['/memoryChat', 'application/x-www-form-urlencoded', 'question=Sales'],
    ]) {
      const reply = await fetch(`${t.baseUrl}${url}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': type },
        body,
      });
      expect(reply.status, `${url} ${type}`).toBe(415);
      expect((await reply.json()).code).toBe('unsupported-media-type');
    }
  });
});
