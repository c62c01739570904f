import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeHttpServer, sendJson, startFakeHttpServer } from '../../../support/fakes/fake-http-server.js';
import { startTestApp, type TestApp } from '../../../support/service/test-app.js';

// Attacks on a JWKS-configured service (test/api/plugins/auth/auth.test.ts covers the HS256 and PEM key modes),
// and key rotation: a new kid works at once, a removed kid is refused once the key cache expires.

const JWKS_TTL_MS = 800;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function keyPair(kid: string) {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    kid,
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    jwk: { ...(publicKey as KeyObject).export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' },
  };
}

const k1 = keyPair('k1');
const k2 = keyPair('k2');
const signWith = (
  key: ReturnType<typeof keyPair>,
  claims: Record<string, unknown> = { sub: 'alice' },
  options: Record<string, unknown> = {},
) =>
  createSigner({
    key: key.privatePem,
    algorithm: 'RS256',
    kid: key.kid,
    expiresIn: 60_000,
    iss: 'https://idp.test',
    aud: 'memorychat',
    ...options,
  })(claims);

/** POST /memoryChat: 503 (no answerer) means authenticated; anything else is returned for checks. */
async function status(t: TestApp, token: string): Promise<number> {
  const reply = await t.request('POST', '/memoryChat', { token, body: { question: 'hi' } });
  if (reply.status === 401) {
    expect(reply.headers.get('content-type')).toContain('application/problem+json');
    expect(reply.body.code).toBe('unauthorized');
  }
  return reply.status;
}

describe('JWT verification against a JWKS', () => {
  let jwks: FakeHttpServer;
  let published: object[];
  let jwksStatus = 200;
  let t: TestApp;

  beforeAll(async () => {
    published = [k1.jwk];
    jwks = await startFakeHttpServer((req, res) =>
      req.path === '/.well-known/jwks.json'
        ? sendJson(res, jwksStatus, jwksStatus === 200 ? { keys: published } : { error: 'down' })
        : sendJson(res, 404, {}),
    );
    t = await startTestApp({
      JWT_SECRET: undefined,
      JWT_JWKS_URL: `${jwks.url}/.well-known/jwks.json`,
      JWT_JWKS_CACHE_TTL: `${JWKS_TTL_MS}ms`,
      JWT_ISSUER: 'https://idp.test',
      JWT_AUDIENCE: 'memorychat',
    });
  });
  afterAll(async () => {
    await t?.close();
    await jwks?.close();
  });

  describe('attacks', () => {
    it('when alg is none, even naming a published kid, then 401', async () => {
      const none = createSigner({ algorithm: 'none', kid: 'k1', iss: 'https://idp.test', aud: 'memorychat' })({ sub: 'alice' });
      expect(await status(t, none)).toBe(401);
    });

    it('when a token is HS256-signed with the published public key as secret, then 401', async () => {
      const forged = createSigner({ key: k1.publicPem, algorithm: 'HS256', kid: 'k1', iss: 'https://idp.test', aud: 'memorychat' })({
        sub: 'alice',
      });
      expect(await status(t, forged)).toBe(401);
    });

    it('when a token is signed by a key that is not published but names a published kid, then 401', async () => {
      expect(await status(t, signWith({ ...k2, kid: 'k1' }))).toBe(401);
    });

    it('when the token names no kid, then 401', async () => {
      const noKid = createSigner({ key: k1.privatePem, algorithm: 'RS256', iss: 'https://idp.test', aud: 'memorychat' })({ sub: 'alice' });
      expect(await status(t, noKid)).toBe(401);
    });

    it('when the payload is tampered with, then 401', async () => {
      const [header, payload, signature] = signWith(k1).split('.');
      const claims = JSON.parse(Buffer.from(payload!, 'base64url').toString());
      const forged = Buffer.from(JSON.stringify({ ...claims, sub: 'admin', roles: ['memory-admin'] })).toString('base64url');
      expect(await status(t, `${header}.${forged}.${signature}`)).toBe(401);
    });

    it('when the token is expired, not yet valid, for another issuer or audience, or has no user, then 401', async () => {
      const now = Math.floor(Date.now() / 1000);
      expect(await status(t, signWith(k1, { sub: 'alice', exp: now - 60 }, { expiresIn: undefined }))).toBe(401);
      expect(await status(t, signWith(k1, { sub: 'alice', nbf: now + 600 }))).toBe(401);
      expect(await status(t, signWith(k1, { sub: 'alice' }, { iss: 'https://evil.test' }))).toBe(401);
      expect(await status(t, signWith(k1, { sub: 'alice' }, { aud: 'another-service' }))).toBe(401);
      expect(await status(t, signWith(k1, { name: 'alice' }))).toBe(401);
    });

    it('when the token is oversized, then 401, not a server error', async () => {
      expect(await status(t, signWith(k1, { sub: 'alice', padding: 'p'.repeat(9000) }))).toBe(401);
    });
  });

  describe('key rotation', () => {
    it('when a new kid is published, then it is accepted at once; when the old kid is removed, then it is refused once the cache expires', async () => {
      published = [k1.jwk];
      expect(await status(t, signWith(k1))).toBe(503);

      // The identity provider publishes k2 next to k1 and starts signing with it.
      published = [k1.jwk, k2.jwk];
      expect(await status(t, signWith(k2))).toBe(503);

      // Then it removes k1: once the cached key set expires, k1 is refused, however often it is tried.
      published = [k2.jwk];
      await sleep(JWKS_TTL_MS + 200);
      for (let i = 0; i < 3; i++) {
        expect(await status(t, signWith(k1))).toBe(401);
        await sleep(JWKS_TTL_MS / 2);
      }
      expect(await status(t, signWith(k2))).toBe(503);
    });

    it('when the JWKS cannot be read for a while, then the last keys are used for one more cache period, then 401, never 500', async () => {
      published = [k2.jwk];
      await sleep(JWKS_TTL_MS + 100);
      expect(await status(t, signWith(k2))).toBe(503); // a fresh read of the key set

      jwksStatus = 503;
      try {
        await sleep(JWKS_TTL_MS + 100);
        expect(await status(t, signWith(k2))).toBe(503); // expired, the JWKS is down: the last keys bridge the outage
        await sleep(JWKS_TTL_MS + 100);
        expect(await status(t, signWith(k2))).toBe(401); // two cache periods without a readable JWKS
      } finally {
        jwksStatus = 200;
      }
      await sleep(2_100); // past the back-off after a failed read
      expect(await status(t, signWith(k2))).toBe(503);
    });
  });
});
