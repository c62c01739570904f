import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteKeysUnder, keysUnder, redisClient, TEST_REDIS_URL, uniquePrefix } from '../../../support/databases/redis.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

const ALLOWED_ORIGIN = 'https://chat.example.com';

/** The status of a GET, with the body read: an unread body keeps the connection busy and app.close() waiting. */
async function statusOf(url: URL): Promise<number> {
  const response = await fetch(url);
  await response.arrayBuffer();
  return response.status;
}

function expectRateLimited(reply: Awaited<ReturnType<TestApp['request']>>) {
  expect(reply.status).toBe(429);
  expect(reply.headers.get('content-type')).toContain('application/problem+json');
  expect(reply.body).toMatchObject({ type: '/problems/rate-limited', status: 429, code: 'rate-limited' });
  const retryAfter = Number(reply.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(60);
}

describe('limits and headers', () => {
  describe('with an in-memory rate limit and CORS for one origin', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '3', CORS_ORIGINS: `${ALLOWED_ORIGIN}, https://admin.example.com` });
    });
    afterAll(async () => t?.close());

    it('when a user goes over the limit, then 429 problem with Retry-After, and another user is unaffected', async () => {
      const alice = t.token('alice');
      for (let i = 0; i < 3; i++) {
        const reply = await t.request('GET', '/sessions', { token: alice });
        expect(reply.status).toBe(200);
        expect(reply.headers.get('x-ratelimit-remaining')).toBe(String(2 - i));
      }
      expectRateLimited(await t.request('GET', '/sessions', { token: alice }));
      expect((await t.request('GET', '/sessions', { token: t.token('bob') })).status).toBe(200);
      // The same user id in another tenant is another user.
      expect((await t.request('GET', '/sessions', { token: t.token('alice', { tenant: 'acme' }) })).status).toBe(200);
    });

    it('when the OpenAPI document is read, then every limited route documents its 429 and public ones do not', async () => {
      const spec = (await t.request('GET', '/openapi.json')).body;
      expect(spec.paths['/memoryChat'].post.responses['429'].content['application/problem+json']).toBeDefined();
      expect(spec.paths['/sessions'].get.responses['429']).toBeDefined();
      expect(spec.paths['/healthz'].get.responses['429']).toBeUndefined();
    });

    it('when health, readiness, metrics or docs are requested often, then they are never limited', async () => {
      for (let i = 0; i < 5; i++) {
        expect((await t.request('GET', '/healthz')).status).toBe(200);
        expect((await t.request('GET', '/readyz')).status).toBe(200);
        expect((await t.request('GET', '/metrics')).status).toBe(200);
        expect((await t.request('GET', '/docs/')).status).toBe(200);
      }
    });

    it('when any response is sent, then it carries the security headers', async () => {
      for (const reply of [await t.request('GET', '/healthz'), await t.request('GET', '/sessions')]) {
        expect(reply.headers.get('x-content-type-options')).toBe('nosniff');
        expect(reply.headers.get('strict-transport-security')).toContain('max-age=');
        expect(reply.headers.get('x-frame-options')).toBe('SAMEORIGIN');
        expect(reply.headers.get('content-security-policy')).toContain("default-src 'self'");
        expect(reply.headers.get('x-powered-by')).toBeNull();
      }
    });

    it('when /docs is requested, then Swagger UI renders under the CSP: its scripts and styles are files from the same origin', async () => {
      const page = await fetch(`${t.baseUrl}/docs/`);
      expect(page.status).toBe(200);
      const html = await page.text();
      const csp = page.headers.get('content-security-policy') ?? '';
      expect(csp).toMatch(/script-src 'self'/);
      expect(csp).not.toContain('upgrade-insecure-requests');
      // No inline script (the CSP allows none): every script is a same-origin file that loads.
      const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
      expect(scripts.length).toBeGreaterThan(0);
      for (const [, attributes, body] of scripts) {
        expect(body!.trim()).toBe('');
        const src = /src="([^"]+)"/.exec(attributes!)?.[1];
        expect(src).toMatch(/^\.\//);
        expect(await statusOf(new URL(src!, `${t.baseUrl}/docs/`))).toBe(200);
      }
      for (const [, href] of html.matchAll(/<link rel="stylesheet" type="text\/css" href="([^"]+)"/g)) {
        expect(await statusOf(new URL(href!, `${t.baseUrl}/docs/`))).toBe(200);
      }
    });

    it('when a configured origin sends a preflight, then it is allowed without a token; another origin is not', async () => {
      const preflight = (origin: string) =>
        fetch(`${t.baseUrl}/memoryChat`, {
          method: 'OPTIONS',
          headers: {
            origin,
            'access-control-request-method': 'POST',
            'access-control-request-headers': 'authorization,content-type,idempotency-key',
          },
        });
      const allowed = await preflight(ALLOWED_ORIGIN);
      expect(allowed.status).toBe(204);
      expect(allowed.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
      expect(allowed.headers.get('access-control-allow-methods')).toContain('POST');
      expect(allowed.headers.get('access-control-allow-headers')).toContain('authorization');

      const other = await preflight('https://evil.example.com');
      await other.arrayBuffer();
      expect(other.status).not.toBe(500);
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
    });

    it('when a configured origin calls the API, then the response exposes Retry-After, Idempotent-Replayed and X-Request-Id', async () => {
      const reply = await t.request('GET', '/healthz', { headers: { origin: ALLOWED_ORIGIN } });
      expect(reply.headers.get('access-control-allow-origin')).toBe(ALLOWED_ORIGIN);
      const exposed = reply.headers.get('access-control-expose-headers')?.toLowerCase() ?? '';
      for (const header of ['retry-after', 'idempotent-replayed', 'x-request-id']) expect(exposed).toContain(header);
      expect(reply.headers.get('access-control-allow-credentials')).toBeNull();
    });
  });

  describe('with the rate limit in Redis', () => {
    const prefix = uniquePrefix('rate-limit');
    let redis: Redis;
    let a: TestApp;
    let b: TestApp;
    beforeAll(async () => {
      redis = redisClient();
      const env = { REDIS_URL: TEST_REDIS_URL, QUEUE_PREFIX: prefix, RATE_LIMIT_PER_MINUTE: '3' };
      a = await startTestApp(env);
      b = await startTestApp(env);
    });
    afterAll(async () => {
      await a?.close();
      await b?.close();
      await deleteKeysUnder(redis, prefix);
      redis.disconnect();
    });

    it('when one user spreads requests over two API instances, then they share one count, kept in Redis under the prefix', async () => {
      const alice = a.token('alice');
      expect((await a.request('GET', '/sessions', { token: alice })).status).toBe(200);
      expect((await b.request('GET', '/sessions', { token: alice })).status).toBe(200);
      expect((await a.request('GET', '/sessions', { token: alice })).status).toBe(200);
      expectRateLimited(await b.request('GET', '/sessions', { token: alice }));
      expect((await b.request('GET', '/sessions', { token: b.token('bob') })).status).toBe(200);

      const keys = await keysUnder(redis, `${prefix}:rate-limit`);
      expect(keys.length).toBeGreaterThanOrEqual(2);
      // Counters name a pseudonym of the user, not the user id.
      expect(keys.join(' ')).not.toContain('alice');
    });

    it('when CORS_ORIGINS is unset, then responses carry no CORS headers', async () => {
      const reply = await a.request('GET', '/healthz', { headers: { origin: ALLOWED_ORIGIN } });
      expect(reply.headers.get('access-control-allow-origin')).toBeNull();
    });
  });
});
