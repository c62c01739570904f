import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteKeysUnder, redisClient, TEST_REDIS_URL, uniquePrefix } from '../../../support/databases/redis.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

function expectRateLimited(reply: Awaited<ReturnType<TestApp['request']>>, detail: string) {
  expect(reply.status).toBe(429);
  expect(reply.headers.get('content-type')).toContain('application/problem+json');
  expect(reply.body).toMatchObject({ code: 'rate-limited', detail: expect.stringContaining(detail) });
  const retryAfter = Number(reply.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

/**
 * Issue 39: one key naming a new user in every X-Memory-User escaped the per-user limit, and failed
 * authentications were never throttled. A limit per key (RATE_LIMIT_PER_KEY_PER_MINUTE) and per client
 * address for failures (AUTH_FAILURES_PER_MINUTE), in memory and in Redis.
 */
describe.each([
  ['in memory', false],
  ['in Redis', true],
])('limits per API key and on failed authentications (%s)', (_where, inRedis) => {
  let t: TestApp;
  let redis: Redis | undefined;
  const prefix = uniquePrefix('key-limits');
  let admin: string;

  beforeAll(async () => {
    redis = inRedis ? redisClient() : undefined;
    t = await startTestApp({
      RATE_LIMIT_PER_MINUTE: '3',
      RATE_LIMIT_PER_KEY_PER_MINUTE: '5',
      AUTH_FAILURES_PER_MINUTE: '3',
      ...(inRedis ? { REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix } : {}),
    });
    admin = t.token('limits-admin', { roles: ['memory-admin'] });
  });
  afterAll(async () => {
    await t?.close();
    if (redis) {
      await deleteKeysUnder(redis, prefix);
      redis.disconnect();
    }
  });

  const newKey = async (name: string) => {
    const res = await t.request('POST', '/admin/api-keys', { token: admin, body: { name, act_for_users: true, user_namespace: 'bot:' } });
    expect(res.status).toBe(201);
    return res.body.api_key as string;
  };

  it('when one key names a new user in every request, then the key is limited; another key and JWT users are not', async () => {
    const key = await newKey('rotating');
    for (let i = 0; i < 5; i++) {
      const res = await t.request('GET', '/sessions', { headers: { 'x-api-key': key, 'x-memory-user': `bot:user-${i}` } });
      expect(res.status, `request ${i}`).toBe(200);
    }
    expectRateLimited(await t.request('GET', '/sessions', { headers: { 'x-api-key': key, 'x-memory-user': 'bot:user-5' } }), 'one API key');
    // The key acting as itself counts against the same key.
    expectRateLimited(await t.request('GET', '/sessions', { headers: { 'x-api-key': key } }), 'one API key');

    const other = await newKey('other');
    expect((await t.request('GET', '/sessions', { headers: { 'x-api-key': other, 'x-memory-user': 'bot:user-0' } })).status).toBe(200);
    expect((await t.request('GET', '/sessions', { token: t.token('jwt-user') })).status).toBe(200);
  });

  it('when an address fails to authenticate too often, then its next requests are refused before any credential is checked', async () => {
    const valid = t.token('patient-user');
    expect((await t.request('GET', '/sessions', { token: valid })).status).toBe(200);
    for (const credential of [
      { token: 'not-a-jwt' },
      { headers: { 'x-api-key': 'mck.guess.1' } },
      { token: `${t.token('x').slice(0, -4)}AAAA` },
    ]) {
      expect((await t.request('GET', '/sessions', credential)).status).toBe(401);
    }
    // The right key or token from that address waits too: a guess that happens to be right is not told apart.
    expectRateLimited(await t.request('GET', '/sessions', { token: valid }), 'failed authentications');
    expectRateLimited(await t.request('GET', '/sessions', { headers: { 'x-api-key': 'mck.guess.2' } }), 'failed authentications');
    // Health and the spec stay reachable.
    expect((await t.request('GET', '/healthz')).status).toBe(200);
  });
});

describe('the client address behind a reverse proxy (TRUST_PROXY)', () => {
  const apps: TestApp[] = [];
  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
  });
  const start = async (env: Record<string, string>) => {
    const app = await startTestApp({ AUTH_FAILURES_PER_MINUTE: '2', ...env });
    apps.push(app);
    return app;
  };
  const failFrom = async (app: TestApp, address: string) => {
    for (let i = 0; i < 2; i++) {
      const res = await app.request('GET', '/sessions', { token: 'not-a-jwt', headers: { 'x-forwarded-for': address } });
      expect(res.status).toBe(401);
    }
  };

  it('when the proxy is trusted, then failures count per address it forwards, and another client behind it is not throttled', async () => {
    const t = await start({ TRUST_PROXY: '127.0.0.1' });
    await failFrom(t, '203.0.113.7');
    const guesser = await t.request('GET', '/sessions', { token: t.token('u'), headers: { 'x-forwarded-for': '203.0.113.7' } });
    expectRateLimited(guesser, 'failed authentications');
    const neighbour = await t.request('GET', '/sessions', { token: t.token('u'), headers: { 'x-forwarded-for': '203.0.113.8' } });
    expect(neighbour.status).toBe(200);
  });

  it('when no proxy is trusted, then X-Forwarded-For is not believed: a client cannot name a new address to escape the throttle', async () => {
    const t = await start({});
    await failFrom(t, '203.0.113.7');
    const renamed = await t.request('GET', '/sessions', { token: t.token('u'), headers: { 'x-forwarded-for': '203.0.113.9' } });
    expectRateLimited(renamed, 'failed authentications');
  });
});
