import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/service/test-app.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('X-Request-Id', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  it.each([
    ['a valid id on a success', '/sessions', true, 'chatbot-7f3a:42'],
    ['a valid id on a 401', '/sessions', false, '01HZX3K8Q2W9Y5T6R7E8D9C0B1'],
    ['a valid id on a 404', '/no-such-route', true, 'abc.DEF_123-xyz'],
  ])('when a client sends %s, then the response echoes it', async (_what, path, authorized, id) => {
    const res = await t.request('GET', path, { token: authorized ? t.token('rid') : undefined, headers: { 'x-request-id': id } });
    expect(res.headers.get('x-request-id')).toBe(id);
  });

  it.each([
    ['nothing', undefined],
    ['an id with spaces', 'two words'],
    ['an id with a quote and a newline escape', 'a"b\\nc'],
    ['an id over 128 characters', 'x'.repeat(129)],
    ['an id with non-ASCII letters', 'réquest'],
  ])('when a client sends %s, then a new UUID is used and echoed instead', async (_what, id) => {
    const res = await t.request('GET', '/sessions', { token: t.token('rid'), headers: id === undefined ? {} : { 'x-request-id': id } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(UUID);
  });
});
