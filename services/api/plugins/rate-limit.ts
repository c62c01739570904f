import { createHash } from 'node:crypto';
import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config/config.js';
import { redisConnection } from '../../infra/redis-connection.js';
import { AppError } from '../../model/errors.js';
import { problemResponses } from '../schemas/problem.js';
import { isPublicRoute } from './auth.js';

const WINDOW_MS = 60_000;

/**
 * At most RATE_LIMIT_PER_MINUTE requests a minute per (tenant, user), counted in Redis when REDIS_URL
 * is set (shared by every API replica) and in memory otherwise. Over the limit: a 429 `rate-limited`
 * problem with `Retry-After`. Health, readiness, metrics, docs and the spec are never limited.
 *
 * Register it after `auth`: the check runs as a route-level onRequest hook, after auth's own, so the
 * verified identity is known. A request without one (no such route today: public routes are exempt,
 * and a bad token is refused by auth first) would count by client address.
 */
export default fp(
  async function rateLimit(app: FastifyInstance, { config }: { config: Config }) {
    // Every limited route can answer 429: its OpenAPI responses say so, even with the limit off here,
    // so that the document is the same for every deployment.
    app.addHook('onRoute', (route) => {
      const responses = route.schema?.response as Record<string, unknown> | undefined;
      if (route.config?.public || !responses || responses[429]) return;
      Object.assign(responses, problemResponses(429));
    });
    if (config.RATE_LIMIT_PER_MINUTE === 0) return;
    const redis = config.REDIS_URL ? redisConnection({ ...config, REDIS_URL: config.REDIS_URL }, 'producer') : undefined;
    if (redis) {
      // ioredis reports a lost connection as an error event; the limiter then lets requests through.
      redis.on('error', (err) => app.log.warn({ err: err.message }, 'rate limit store unavailable'));
      app.addHook('onClose', async () => {
        redis.disconnect();
      });
    }
    await app.register(fastifyRateLimit, {
      global: true,
      hook: 'onRequest',
      max: config.RATE_LIMIT_PER_MINUTE,
      timeWindow: WINDOW_MS,
      ...(redis ? { redis, nameSpace: `${config.QUEUE_PREFIX}:rate-limit:` } : {}),
      // A Redis outage must not take the API down with it: requests pass uncounted.
      skipOnError: true,
      keyGenerator: rateLimitKey,
      allowList: (request) => isPublicRoute(request),
      addHeaders: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true, 'retry-after': true },
      errorResponseBuilder: (_request, context) =>
        new AppError('rate-limited', `more than ${context.max} requests a minute; retry in ${context.after}`),
    });
  },
  { name: 'rate-limit', dependencies: ['auth', 'problem-errors'] },
);

/** The user as a pseudonym (the raw user id is not written to Redis), or the client address. */
function rateLimitKey(request: FastifyRequest): string {
  const identity = request.identity;
  if (!identity) return `ip:${request.ip}`;
  return `user:${createHash('sha256').update(`${identity.tenantId}\0${identity.userId}`).digest('hex').slice(0, 32)}`;
}
