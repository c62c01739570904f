import { createHash } from 'node:crypto';
import fastifyRateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Config } from '../../config/config.js';
import { redisConnection } from '../../infra/redis-connection.js';
import { AppError } from '../../model/errors.js';
import { problemResponses } from '../schemas/problem.js';
import { isPublicRoute } from './auth.js';

const WINDOW_MS = 60_000;

/** Counts a request against a limit; `increment: false` only reads the count. */
type Limiter = ReturnType<FastifyInstance['createRateLimit']>;

/** Failed authentications per client address (AUTH_FAILURES_PER_MINUTE), used by the auth plugin. */
export interface AuthFailureThrottle {
  /** A 429 when the request's address failed to authenticate too often in the window. */
  refuseIfThrottled(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  recordFailure(request: FastifyRequest): Promise<void>;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Null when AUTH_FAILURES_PER_MINUTE is 0. */
    authFailures: AuthFailureThrottle | null;
  }
}

/**
 * Three limits a minute, counted in Redis when REDIS_URL is set (shared by every API replica) and in
 * memory otherwise; over one, a 429 `rate-limited` problem with `Retry-After`. Health, readiness,
 * metrics, docs and the spec are never limited.
 * - RATE_LIMIT_PER_MINUTE requests per (tenant, user);
 * - RATE_LIMIT_PER_KEY_PER_MINUTE requests per API key as well, so that a key naming a new user in
 *   every X-Memory-User does not escape the per-user limit;
 * - AUTH_FAILURES_PER_MINUTE failed authentications per client address: past it, every request from
 *   that address is refused before its credential is checked, so keys and tokens cannot be guessed
 *   at speed (the auth plugin calls `authFailures`).
 *
 * Register it after `auth`: the per-user check runs as a route-level onRequest hook, after auth's
 * own, so the verified identity is known.
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
    app.decorate('authFailures', null);
    const { RATE_LIMIT_PER_MINUTE: perUser, RATE_LIMIT_PER_KEY_PER_MINUTE: perKey, AUTH_FAILURES_PER_MINUTE: authFailures } = config;
    if (perUser === 0 && perKey === 0 && authFailures === 0) return;
    const redis = config.REDIS_URL ? redisConnection({ ...config, REDIS_URL: config.REDIS_URL }, 'producer') : undefined;
    if (redis) {
      // ioredis reports a lost connection as an error event; the limiter then lets requests through.
      redis.on('error', (err) => app.log.warn({ err: err.message }, 'rate limit store unavailable'));
      app.addHook('onClose', async () => {
        redis.disconnect();
      });
    }
    const refusal = (max: number, after: string, what: string) =>
      new AppError('rate-limited', `more than ${max} ${what} a minute; retry in ${after}`);
    await app.register(fastifyRateLimit, {
      global: perUser > 0,
      hook: 'onRequest',
      max: perUser || 1,
      timeWindow: WINDOW_MS,
      ...(redis ? { redis, nameSpace: `${config.QUEUE_PREFIX}:rate-limit:` } : {}),
      // A Redis outage must not take the API down with it: requests pass uncounted.
      skipOnError: true,
      keyGenerator: rateLimitKey,
      allowList: (request) => isPublicRoute(request),
      addHeaders: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true, 'retry-after': true },
      errorResponseBuilder: (_request, context) => refusal(context.max, context.after, 'requests'),
    });

    if (perKey > 0) {
      const keyLimit = app.createRateLimit({ max: perKey, timeWindow: WINDOW_MS, keyGenerator: apiKeyLimitKey });
      // After auth (registered before this plugin), which has verified the key.
      app.addHook('onRequest', async (request, reply) => {
        if (!request.apiKey || isPublicRoute(request)) return;
        await refuseOver(keyLimit, request, reply, (after) => refusal(perKey, after, 'requests with one API key'));
      });
    }
    if (authFailures > 0) {
      const failures = app.createRateLimit({
        max: authFailures,
        timeWindow: WINDOW_MS,
        keyGenerator: (request) => `auth-failures:${request.ip}`,
      });
      app.authFailures = {
        refuseIfThrottled: (request, reply) =>
          refuseOver(failures, request, reply, (after) => refusal(authFailures, after, 'failed authentications'), false),
        recordFailure: async (request) => {
          await failures(request);
        },
      };
    }
  },
  { name: 'rate-limit', dependencies: ['auth', 'problem-errors'] },
);

/** Counts (or with `increment` false, reads) the request against `limiter`; over the limit, the refusal with Retry-After. */
async function refuseOver(
  limiter: Limiter,
  request: FastifyRequest,
  reply: FastifyReply,
  refusal: (after: string) => AppError,
  increment = true,
): Promise<void> {
  const result = await limiter(request, { increment });
  if (result.isAllowed) return;
  // A store error (Redis down) is let through, as the per-user limit does (skipOnError).
  if (!('isExceeded' in result)) return;
  const exceeded = increment ? result.isExceeded : result.remaining <= 0;
  if (!exceeded) return;
  const seconds = Math.max(1, Math.ceil(result.ttlInSeconds ?? result.ttl / 1000));
  reply.header('retry-after', String(seconds));
  throw refusal(`${seconds} seconds`);
}

/** The user as a pseudonym (the raw user id is not written to Redis), or the client address. */
function rateLimitKey(request: FastifyRequest): string {
  const identity = request.identity;
  if (!identity) return `ip:${request.ip}`;
  return `user:${createHash('sha256').update(`${identity.tenantId}\0${identity.userId}`).digest('hex').slice(0, 32)}`;
}

function apiKeyLimitKey(request: FastifyRequest): string {
  const key = request.apiKey!.row;
  return `api-key:${createHash('sha256').update(`${key.tenant_id}\0${key.key_id}`).digest('hex').slice(0, 32)}`;
}
