import fastifyCors from '@fastify/cors';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config/config.js';

/** Response headers a browser client may read: retry hints, idempotent replays, the request id, a cut CSV. */
const EXPOSED_HEADERS = [
  'retry-after',
  'idempotent-replayed',
  'x-request-id',
  'x-ratelimit-limit',
  'x-ratelimit-remaining',
  'x-ratelimit-reset',
  'www-authenticate',
  'x-result-truncated',
  'x-result-rows-stored',
  'x-result-rows-total',
];

/**
 * CORS for the origins in CORS_ORIGINS (comma-separated, or `*`); unset: no CORS headers at all, so
 * browsers on other origins cannot call the API. Tokens travel in `Authorization`, not cookies, so
 * credentials are not allowed.
 *
 * Register it before `auth`: a preflight (OPTIONS without a token) is answered in cors' own onRequest
 * hook, before auth's hook could refuse it.
 */
export default fp(
  async function cors(app: FastifyInstance, { config }: { config: Config }) {
    const origins = (config.CORS_ORIGINS ?? '')
      .split(',')
      .map((o) => o.trim())
      .filter(Boolean);
    if (origins.length === 0) return;
    await app.register(fastifyCors, {
      origin: origins.includes('*') ? '*' : origins,
      methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
      exposedHeaders: EXPOSED_HEADERS,
      maxAge: 600,
    });
  },
  { name: 'cors' },
);
