import { generateKeyPairSync } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeHttpServer, sendJson, startFakeHttpServer } from '../../../support/fakes/fake-http-server.js';
import { startTestApp, TEST_JWT_SECRET, type TestApp } from '../../../support/service/test-app.js';

const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
const RSA_PUBLIC_PEM = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
const RSA_PRIVATE_PEM = rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

async function expect401(app: TestApp, token: string | undefined, detail?: RegExp) {
  const reply = await app.request('POST', '/memoryChat', { token, body: { question: 'hi' } });
  expect(reply.status).toBe(401);
  expect(reply.headers.get('content-type')).toContain('application/problem+json');
  expect(reply.headers.get('www-authenticate')).toBe('Bearer');
  expect(reply.body.code).toBe('unauthorized');
  if (detail) expect(reply.body.detail).toMatch(detail);
}

describe('authentication', () => {
  const apps: TestApp[] = [];
  let jwks: FakeHttpServer;
  afterAll(async () => {
    await Promise.all(apps.map((a) => a.close()));
    await jwks?.close();
  });

  describe('with JWT_SECRET (HS256)', () => {
    let t: TestApp;
    beforeAll(async () => {
      // Dozens of refused tokens from one address: the failed-authentication throttle is off here (tested in key-and-auth-failure-limits.test.ts).
      t = await startTestApp({ JWT_ISSUER: 'https://idp.test', JWT_AUDIENCE: 'memorychat', AUTH_FAILURES_PER_MINUTE: '0' });
      apps.push(t);
    });
    const sign = (claims: Record<string, unknown>, options: Record<string, unknown> = {}) =>
      createSigner({ key: TEST_JWT_SECRET, iss: 'https://idp.test', aud: 'memorychat', expiresIn: 60_000, ...options })(claims);

    it('when the token is valid, then the request passes authentication', async () => {
      const reply = await t.request('POST', '/memoryChat', { token: sign({ sub: 'alice' }), body: { question: 'hi' } });
      expect(reply.status).toBe(503); // authenticated; no answerer configured
    });

    it('when there is no token or a malformed header, then 401', async () => {
      await expect401(t, undefined, /Bearer/);
      const reply = await t.request('POST', '/memoryChat', { headers: { authorization: 'Basic abc' }, body: { question: 'hi' } });
      expect(reply.status).toBe(401);
    });

    it('when the token has expired or is not yet valid, then 401 says so', async () => {
      await expect401(t, sign({ sub: 'alice', exp: Math.floor(Date.now() / 1000) - 60 }, { expiresIn: undefined }), /expired/);
      await expect401(t, sign({ sub: 'alice', nbf: Math.floor(Date.now() / 1000) + 600 }), /active/);
    });

    it('when a token accepted before (and so cached as verified) expires, then its next request is 401', async () => {
      const exp = Math.floor(Date.now() / 1000) + 2;
      const token = sign({ sub: 'alice', exp }, { expiresIn: undefined });
      const first = await t.request('POST', '/memoryChat', { token, body: { question: 'hi' } });
      expect(first.status).toBe(503); // authenticated
      await new Promise((resolve) => setTimeout(resolve, exp * 1000 - Date.now() + 100));
      await expect401(t, token, /expired/);
    });

    it('when the issuer or audience is wrong, then 401', async () => {
      await expect401(t, sign({ sub: 'alice' }, { iss: 'https://evil.test' }));
      await expect401(t, sign({ sub: 'alice' }, { aud: 'other-service' }));
    });

    it('when JWT_ISSUER and JWT_AUDIENCE are set and the token lacks iss or aud, then 401 names the missing claim', async () => {
      await expect401(t, sign({ sub: 'alice' }, { iss: undefined }), /iss/);
      await expect401(t, sign({ sub: 'alice' }, { aud: undefined }), /aud/);
      await expect401(t, sign({ sub: 'alice' }, { iss: undefined, aud: undefined }));
    });

    it('when a user or tenant id holds an invisible or control character (alice\\u200b, a bidi override, a tab), then 401 names the character', async () => {
      await expect401(t, sign({ sub: 'alice\u200b' }), /invisible or control character \(U\+200B\)/);
      await expect401(t, sign({ sub: '\u202egnp.exe' }), /U\+202E/);
      await expect401(t, sign({ sub: 'al\tice' }), /U\+0009/);
      await expect401(t, sign({ sub: 'alice\u2060' }), /U\+2060/);
      await expect401(t, sign({ sub: 'alice', tenant: 'acme\ufeff' }), /"tenant" claim contains an invisible/);
    });

    it('when the same id arrives composed and decomposed (NFC and NFD), then both tokens are one user', async () => {
      const composed = sign({ sub: 'jos\u00e9' });
      const decomposed = sign({ sub: 'jose\u0301' });
      const stored = await t.request('POST', '/sessions/turns', { token: decomposed, body: { question: 'Whose turn?', answer: 'José' } });
      expect(stored.status).toBe(201);
      const listed = await t.request('GET', '/sessions', { token: composed });
      expect(listed.body.sessions.map((x: { session_id: string }) => x.session_id)).toEqual([stored.body.session.session_id]);
    });

    it('when an admin exports or erases a user whose id is as long as sign-in allows (1,024 characters, non-ASCII), then 202; an id sign-in refuses is 400 there too', async () => {
      const admin = sign({ sub: 'admin-long', roles: ['memory-admin'] });
      const long = 'ü'.repeat(1024);
      // That user can sign in...
      expect((await t.request('GET', '/sessions', { token: sign({ sub: long }) })).status).toBe(200);
      // ...so an admin can act on them.
      const exported = await t.request('POST', `/admin/users/${encodeURIComponent(long)}/export`, { token: admin });
      expect(exported.status).toBe(202);
      expect(exported.body.subject_user_id).toBe(long);
      expect((await t.request('DELETE', `/admin/users/${encodeURIComponent(long)}`, { token: admin })).status).toBe(202);
      await expect401(t, sign({ sub: `${long}ü` }), /longer than 1024 characters/);
      expect((await t.request('POST', `/admin/users/${'u'.repeat(1025)}/export`, { token: admin })).status).toBe(400);
      // The NFD spelling of a user names the same (NFC) user; an invisible character is refused as at sign-in.
      const nfd = await t.request('POST', `/admin/users/${encodeURIComponent('jose\u0301')}/export`, { token: admin });
      expect(nfd.body.subject_user_id).toBe('jos\u00e9');
      const hidden = await t.request('POST', `/admin/users/${encodeURIComponent('alice\u200b')}/export`, { token: admin });
      expect(hidden.status).toBe(400);
      expect(hidden.body.detail).toMatch(/U\+200B/);
    });

    it('when the signature is wrong, the payload tampered or alg is none, then 401', async () => {
      await expect401(
        t,
        createSigner({ key: 'another-secret-of-at-least-32-characters!!', iss: 'https://idp.test', aud: 'memorychat' })({ sub: 'alice' }),
      );
      const [h, p, s] = sign({ sub: 'alice' }).split('.');
      const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: 'admin' })).toString(
        'base64url',
      );
      await expect401(t, `${h}.${forged}.${s}`);
      const none = createSigner({ algorithm: 'none', iss: 'https://idp.test', aud: 'memorychat' })({ sub: 'alice' });
      await expect401(t, none);
    });

    it('when the user claim is missing, then 401 names the claim', async () => {
      await expect401(t, sign({ name: 'alice' }), /"sub"/);
    });

    it('when the user or tenant claim holds NUL or a lone surrogate, then 401, not a database error or a merged user', async () => {
      await expect401(t, sign({ sub: 'ali\u0000ce' }), /NUL/);
      await expect401(t, sign({ sub: 'alice', tenant: 'ac\u0000me' }), /NUL/);
      // Both would be stored as U+FFFD: two users sharing one identity.
      await expect401(t, sign({ sub: '\ud800' }), /lone UTF-16 surrogate/);
      await expect401(t, sign({ sub: '\udbff' }), /lone UTF-16 surrogate/);
      await expect401(t, sign({ sub: 'alice', tenant: 'x\udc00' }), /lone UTF-16 surrogate/);
    });

    it('when the tenant claim is a number, an array, an object or blank, then 401: tenants never merge into "default"', async () => {
      for (const tenant of [101, 202, ['acme'], { id: 'acme' }, '', '   ', true, null]) {
        await expect401(t, sign({ sub: 'dave', tenant }), /"tenant" claim must name the tenant/);
      }
      // Nothing of those requests was stored for anyone: "dave" of the default tenant has no session.
      const sessions = await t.request('GET', '/sessions', { token: sign({ sub: 'dave' }) });
      expect(sessions.status).toBe(200);
      expect(sessions.body.sessions).toEqual([]);
    });

    it('when the user claim is an integer, then it names the user as its decimal text; other types and blanks are refused', async () => {
      const asNumber = await t.request('POST', '/sessions/turns', {
        token: sign({ sub: 123456 }),
        body: { question: 'Which chat is this?', answer: 'telegram' },
      });
      expect(asNumber.status).toBe(201);
      const asText = await t.request('GET', '/sessions', { token: sign({ sub: '123456' }) });
      expect(asText.body.sessions.map((x: { session_id: string }) => x.session_id)).toEqual([asNumber.body.session.session_id]);
      for (const sub of [1.5, 1e21, ['alice'], { id: 'alice' }, '', ' ', false]) {
        await expect401(t, sign({ sub }), /"sub" claim must name the user/);
      }
    });

    it('when the token is oversized, then 401, not a server error', async () => {
      await expect401(t, sign({ sub: 'alice', padding: 'p'.repeat(9000) }));
    });

    it('when health, readiness, the spec or docs are requested, then no token is needed', async () => {
      expect((await t.request('GET', '/healthz')).status).toBe(200);
      expect((await t.request('GET', '/readyz')).body).toMatchObject({ status: 'ready' });
      expect((await t.request('GET', '/openapi.json')).body.paths['/memoryChat']).toBeDefined();
      expect((await t.request('GET', '/docs/')).status).toBe(200);
    });
  });

  describe('with JWT_MAX_AGE, a databases claim and NODE_ENV=production', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ NODE_ENV: 'production', JWT_MAX_AGE: '5m', JWT_DATABASES_CLAIM: 'dbs' });
      apps.push(t);
    });
    const now = () => Math.floor(Date.now() / 1000);
    const sign = (claims: Record<string, unknown>, options: Record<string, unknown> = {}) =>
      createSigner({ key: TEST_JWT_SECRET, expiresIn: 3_600_000, ...options })(claims);

    it('when a token was issued within JWT_MAX_AGE, then it passes', async () => {
      const reply = await t.request('POST', '/memoryChat', { token: sign({ sub: 'erin' }), body: { question: 'hi' } });
      expect(reply.status).toBe(503); // authenticated; no answerer configured
    });

    it('when a token says it was issued in the future (beyond a minute of clock skew), then 401, however long it lasts', async () => {
      await expect401(t, sign({ sub: 'erin', iat: now() + 365 * 24 * 3600 }), /iat is in the future/);
      await expect401(t, sign({ sub: 'erin', iat: now() + 120 }), /iat is in the future/);
      const skewed = await t.request('GET', '/sessions', { token: sign({ sub: 'erin', iat: now() + 30 }) });
      expect(skewed.status).toBe(200);
    });

    it('when a token is older than JWT_MAX_AGE or has no iat, then 401 even though it has not expired', async () => {
      await expect401(t, sign({ sub: 'erin', iat: now() - 600 }), /expired/);
      await expect401(t, sign({ sub: 'erin' }, { noTimestamp: true }), /iat claim is required/);
    });

    it('when a token has no exp in production, then 401', async () => {
      await expect401(t, sign({ sub: 'erin' }, { expiresIn: undefined }), /exp claim is required/);
    });

    it('when the databases claim is not a list of strings, then 401: an unreadable bound must not mean no bound', async () => {
      for (const dbs of [7, { sales: true }, ['sales', 3], ['']])
        await expect401(t, sign({ sub: 'erin', dbs }), /"dbs" claim must list databases/);
      const listed = await t.request('POST', '/memoryChat', { token: sign({ sub: 'erin', dbs: 'sales, hr' }), body: { question: 'hi' } });
      expect(listed.status).toBe(503);
    });
  });

  describe('with JWT_PUBLIC_KEY (RS256)', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ JWT_SECRET: undefined, JWT_PUBLIC_KEY: RSA_PUBLIC_PEM });
      apps.push(t);
    });

    it('when a token is signed with the private key, then it is accepted', async () => {
      const token = createSigner({ key: RSA_PRIVATE_PEM, algorithm: 'RS256' })({ sub: 'alice' });
      expect((await t.request('POST', '/memoryChat', { token, body: { question: 'hi' } })).status).toBe(503);
    });

    it('when a token is HS256-signed with the public key as secret, then it is refused', async () => {
      const forged = createSigner({ key: RSA_PUBLIC_PEM, algorithm: 'HS256' })({ sub: 'alice' });
      await expect401(t, forged);
    });
  });

  describe('with JWT_JWKS_URL', () => {
    let t: TestApp;
    let keys: object[];
    beforeAll(async () => {
      keys = [{ ...rsa.publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'RS256', use: 'sig' }];
      jwks = await startFakeHttpServer((req, res) => sendJson(res, req.path === '/keys/jwks.json' ? 200 : 404, { keys }));
      t = await startTestApp({ JWT_SECRET: undefined, JWT_JWKS_URL: `${jwks.url}/keys/jwks.json` });
      apps.push(t);
    });

    it('when the token names a key in the JWKS, then it is accepted; an unknown kid is refused', async () => {
      const good = createSigner({ key: RSA_PRIVATE_PEM, algorithm: 'RS256', kid: 'k1' })({ sub: 'alice' });
      expect((await t.request('POST', '/memoryChat', { token: good, body: { question: 'hi' } })).status).toBe(503);
      const unknownKid = createSigner({ key: RSA_PRIVATE_PEM, algorithm: 'RS256', kid: 'k9' })({ sub: 'alice' });
      await expect401(t, unknownKid);
    });
  });
});
