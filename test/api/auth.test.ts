import { generateKeyPairSync } from 'node:crypto';
import { createSigner } from 'fast-jwt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendJson, startFakeHttpServer, type FakeHttpServer } from '../support/fake-http-server.js';
import { startTestApp, TEST_JWT_SECRET, type TestApp } from '../support/test-app.js';

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
      t = await startTestApp({ JWT_ISSUER: 'https://idp.test', JWT_AUDIENCE: 'memorychat' });
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

    it('when the issuer or audience is wrong, then 401', async () => {
      await expect401(t, sign({ sub: 'alice' }, { iss: 'https://evil.test' }));
      await expect401(t, sign({ sub: 'alice' }, { aud: 'other-service' }));
    });

    it('when the signature is wrong, the payload tampered or alg is none, then 401', async () => {
      await expect401(t, createSigner({ key: 'another-secret-of-at-least-32-characters!!', iss: 'https://idp.test', aud: 'memorychat' })({ sub: 'alice' }));
      const [h, p, s] = sign({ sub: 'alice' }).split('.');
      const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(p!, 'base64url').toString()), sub: 'admin' })).toString('base64url');
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
