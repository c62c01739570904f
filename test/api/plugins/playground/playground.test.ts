// Where the memory playground is served, under which CSP, and who may get a local token.
import { createVerifier } from 'fast-jwt';
import { describe, expect, it } from 'vitest';
import type { App } from '../../../../services/api/app.js';
import { PLAYGROUND_CSP } from '../../../../services/api/plugins/playground.js';
import { withAppWithoutDatabase } from '../../../support/service/app-without-database.js';

const LOCAL_SECRET = 'local-secret-of-at-least-32-characters';
const LOCAL_MODE = { JWT_SECRET: '' };
const SECRET_MODE = { JWT_SECRET: 'x'.repeat(32) };
const withApp = <T>(env: Record<string, string>, use: (app: App) => Promise<T>) => withAppWithoutDatabase(env, use, LOCAL_SECRET);

describe('the memory playground', () => {
  it('when in local mode, then the page is served with its strict CSP and offers a local token', async () => {
    await withApp(LOCAL_MODE, async (app) => {
      const page = await app.inject('/playground/');
      expect(page.statusCode).toBe(200);
      expect(page.headers['content-security-policy']).toBe(PLAYGROUND_CSP);
      expect(PLAYGROUND_CSP).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
      expect(page.body).toContain('data-local-token="true"');
      // Nothing inline: every script and style comes from a file of the page's own origin.
      expect(page.body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>|<style|\sstyle=|\son[a-z]+=/i);
      for (const asset of ['playground.js', 'playground.css', 'favicon.svg']) {
        expect((await app.inject(`/playground/${asset}`)).statusCode).toBe(200);
      }
      expect((await app.inject('/playground')).headers.location).toBe('/playground/');
    });
  });

  it('when a local token is asked for from this machine, then it is a token the service accepts, for the user named', async () => {
    await withApp(LOCAL_MODE, async (app) => {
      const reply = await app.inject({ method: 'POST', url: '/playground/local-token', payload: { user: 'ann' } });
      expect(reply.statusCode).toBe(200);
      const claims = createVerifier({ key: LOCAL_SECRET, algorithms: ['HS256'] })(reply.json().token);
      expect(claims.sub).toBe('ann');
    });
  });

  it('when a local token is asked for from another machine or by a page of another origin, then it is refused', async () => {
    await withApp(LOCAL_MODE, async (app) => {
      const remote = await app.inject({ method: 'POST', url: '/playground/local-token', payload: {}, remoteAddress: '10.1.2.3' });
      expect(remote.statusCode).toBe(403);
      expect(remote.headers['content-type']).toContain('application/problem+json');
      const crossOrigin = await app.inject({
        method: 'POST',
        url: '/playground/local-token',
        payload: {},
        headers: { origin: 'https://evil.example', host: '127.0.0.1:8080' },
      });
      expect(crossOrigin.statusCode).toBe(403);
      const sameOrigin = await app.inject({
        method: 'POST',
        url: '/playground/local-token',
        payload: {},
        headers: { origin: 'http://127.0.0.1:8080', host: '127.0.0.1:8080' },
      });
      expect(sameOrigin.statusCode).toBe(200);
    });
  });

  it('when local mode gets a request whose Host is not a loopback name (DNS rebinding), then every route refuses it with 421', async () => {
    await withApp(LOCAL_MODE, async (app) => {
      for (const host of ['evil.example:8080', 'evil.example', '127.0.0.1.evil.example', 'localhost.', '10.0.0.5:8080', '[::2]:8080']) {
        for (const [method, url] of [
          ['POST', '/playground/local-token'],
          ['GET', '/playground/'],
          ['GET', '/healthz'],
          ['GET', '/sessions'],
          ['GET', '/no-such-route'],
        ] as const) {
          const reply = await app.inject({ method, url, payload: method === 'POST' ? {} : undefined, headers: { host } });
          expect(reply.statusCode, `${host} ${url}`).toBe(421);
          expect(reply.headers['content-type']).toContain('application/problem+json');
          expect(reply.json().code).toBe('misdirected-request');
        }
      }
      for (const host of ['127.0.0.1:8080', '127.0.0.1', 'localhost:8080', 'LOCALHOST', '[::1]:8080', '[::1]']) {
        expect((await app.inject({ url: '/playground/', headers: { host } })).statusCode, host).toBe(200);
      }
    });
    await withApp(SECRET_MODE, async (app) => {
      expect((await app.inject({ url: '/openapi.json', headers: { host: 'memorychat.example.com' } })).statusCode).toBe(200);
    });
  });

  it('when a local token is asked for with an Origin, then only a loopback origin gets one', async () => {
    await withApp(LOCAL_MODE, async (app) => {
      const ask = (origin: string) =>
        app.inject({ method: 'POST', url: '/playground/local-token', payload: {}, headers: { origin, host: '127.0.0.1:8080' } });
      for (const origin of ['http://localhost:8080', 'http://[::1]:8080', 'http://127.0.0.1:8080']) {
        expect((await ask(origin)).statusCode, origin).toBe(200);
      }
      for (const origin of [
        'null',
        'http://evil.example:8080',
        'http://127.0.0.1.evil.example:8080',
        'file://',
        'http://localhost@evil.example',
      ]) {
        expect((await ask(origin)).statusCode, origin).toBe(403);
      }
    });
  });

  it('when tokens come from a configured key, then there is no playground by default, and with PLAYGROUND=on no local token', async () => {
    await withApp(SECRET_MODE, async (app) => {
      expect((await app.inject('/playground/')).statusCode).toBe(404);
    });
    await withApp({ ...SECRET_MODE, PLAYGROUND: 'on' }, async (app) => {
      const page = await app.inject('/playground/');
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('data-local-token="false"');
      expect((await app.inject({ method: 'POST', url: '/playground/local-token', payload: {} })).statusCode).toBe(404);
    });
  });

  it('when PLAYGROUND=off in local mode, then neither the page nor the local token exists', async () => {
    await withApp({ ...LOCAL_MODE, PLAYGROUND: 'off' }, async (app) => {
      expect((await app.inject('/playground/')).statusCode).toBe(404);
      expect((await app.inject({ method: 'POST', url: '/playground/local-token', payload: {} })).statusCode).toBe(404);
    });
  });
});
