import { readFileSync } from 'node:fs';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { createSigner } from 'fast-jwt';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import Type from 'typebox';
import type { Config } from '../../config/config.js';
import { AppError } from '../../model/errors.js';
import { isLoopbackHost } from './loopback-host.js';

/**
 * Stricter than the service-wide policy (helmet's default): nothing inline, not even styles, and the
 * page talks to its own origin only.
 */
export const PLAYGROUND_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "form-action 'none'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const FILES = {
  'playground.css': 'text/css; charset=utf-8',
  'playground.js': 'text/javascript; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
} as const;

const LOCAL_TOKEN_TTL_MS = 12 * 3_600_000;
const LocalTokenBody = Type.Object(
  { user: Type.Optional(Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9_.@-]+$' })) },
  { additionalProperties: false },
);

/**
 * The memory playground (PLAYGROUND): a plain HTML/CSS/JS page at /playground/ that calls the API
 * with the user's token, like any browser client. In local mode it can also get a token from
 * POST /playground/local-token, which exists only in local mode and answers only loopback callers
 * from a page of a loopback origin (local mode already listens on 127.0.0.1 unless HOST says
 * otherwise, and refuses any Host but a loopback name: loopback-host.ts).
 */
export default fp(
  async function playground(app: FastifyInstance, { config, localSecret }: { config: Config; localSecret?: string }) {
    if (!config.playground) return;
    const dir = new URL('../playground/', import.meta.url);
    const offersLocalToken = config.localAuth && localSecret !== undefined;
    const html = readFileSync(new URL('index.html', dir), 'utf8').replace(
      'data-local-token="false"',
      `data-local-token="${offersLocalToken}"`,
    );
    const assets = Object.entries(FILES).map(([name, type]) => ({ name, type, body: readFileSync(new URL(name, dir)) }));
    const page = { config: { public: true }, schema: { hide: true } };

    app.get('/playground', page, async (_request, reply) => reply.redirect('/playground/'));
    app.get('/playground/', page, async (_request, reply) =>
      reply
        .header('content-security-policy', PLAYGROUND_CSP)
        .header('cache-control', 'no-cache')
        .type('text/html; charset=utf-8')
        .send(html),
    );
    for (const asset of assets) {
      app.get(`/playground/${asset.name}`, page, async (_request, reply) =>
        reply.header('cache-control', 'no-cache').type(asset.type).send(asset.body),
      );
    }

    if (!offersLocalToken) return;
    const sign = createSigner({
      key: localSecret,
      algorithm: 'HS256',
      expiresIn: LOCAL_TOKEN_TTL_MS,
      ...(config.JWT_ISSUER ? { iss: config.JWT_ISSUER } : {}),
      ...(config.JWT_AUDIENCE ? { aud: config.JWT_AUDIENCE } : {}),
    });
    app
      .withTypeProvider<TypeBoxTypeProvider>()
      .post('/playground/local-token', { config: { public: true }, schema: { hide: true, body: LocalTokenBody } }, async (request) => {
        if (!fromThisMachine(request)) {
          throw new AppError('forbidden', 'local tokens are given to this machine only (local mode)');
        }
        return { token: sign({ [config.JWT_USER_CLAIM]: request.body.user ?? 'playground' }), expires_in: LOCAL_TOKEN_TTL_MS / 1000 };
      });
  },
  { name: 'playground' },
);

/**
 * A loopback caller, and no page of another origin (a browser sends Origin on a cross-origin POST):
 * the Origin, when sent, must be a loopback one, as Host must be (loopback-host.ts), never merely
 * equal to Host, which a DNS-rebound page makes equal.
 */
function fromThisMachine(request: FastifyRequest): boolean {
  const address = request.socket.remoteAddress ?? '';
  const loopback = address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1';
  const origin = request.headers.origin;
  return loopback && (origin === undefined || isLoopbackOrigin(origin));
}

function isLoopbackOrigin(origin: string): boolean {
  const match = /^https?:\/\/([^/]*)$/i.exec(origin);
  return match !== null && isLoopbackHost(match[1]);
}
