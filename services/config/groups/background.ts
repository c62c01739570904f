import Type, { type Static } from 'typebox';
import { ConfigError } from '../config-error.js';
import { DURATION_PATTERN, parseDurationMs } from '../duration.js';
import type { ModelsVariables } from './models.js';

/** Worker and background jobs (docs/design.md §7): the queue, cleanup, summaries and re-embedding. */
export const BackgroundSchema = Type.Object({
  // Background work (docs/design.md §7). Without REDIS_URL the same processors run inside the API process.
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  // REDIS_URL names one node of a Redis Cluster; the client finds the others (docs/scaling.md#redis).
  REDIS_CLUSTER: Type.Boolean({ default: false }),
  // BullMQ key prefix: lets several deployments (or test files) share one Redis. On a Redis Cluster it
  // holds a hash tag, e.g. {memorychat}: BullMQ's scripts touch several keys of a queue at once, which
  // must be in one slot.
  QUEUE_PREFIX: Type.String({ pattern: '^[A-Za-z0-9_.{}-]+$', default: 'bull' }),
  WORKER_CONCURRENCY: Type.Integer({ minimum: 1, maximum: 100, default: 4 }),
  // The worker's probes and /metrics; 0 picks a free port (tests).
  WORKER_PORT: Type.Integer({ minimum: 0, maximum: 65535, default: 9464 }),
  JOB_ATTEMPTS: Type.Integer({ minimum: 1, maximum: 50, default: 5 }),
  JOB_BACKOFF_MS: Type.Integer({ minimum: 1, default: 10_000 }),
  MEMORY_CLEANUP_INTERVAL: Type.String({ pattern: DURATION_PATTERN, default: '1h' }),
  MEMORY_CLEANUP_BATCH_SIZE: Type.Integer({ minimum: 1, maximum: 100_000, default: 1000 }),
  // 0 turns off summarization.
  MEMORY_SUMMARIZATION_THRESHOLD: Type.Integer({ minimum: 0, maximum: 10_000, default: 15 }),
  SUMMARY_PROVIDER: Type.Optional(Type.Union([Type.Literal('openai'), Type.Literal('anthropic')])),
  SUMMARY_MODEL: Type.Optional(Type.String({ minLength: 1 })),
  SUMMARY_MAX_INPUT_TOKENS: Type.Integer({ minimum: 500, maximum: 200_000, default: 6000 }),
  SUMMARY_MAX_TOKENS: Type.Integer({ minimum: 50, maximum: 8000, default: 600 }),
  REEMBED_BATCH_SIZE: Type.Integer({ minimum: 1, maximum: 2048, default: 100 }),
  // Remote embedding providers only; the local embedder is not rate-limited.
  REEMBED_MAX_PER_MINUTE: Type.Integer({ minimum: 1, default: 3000 }),
});

export type BackgroundVariables = Static<typeof BackgroundSchema>;

export function deriveBackground(raw: BackgroundVariables & Pick<ModelsVariables, 'OPENAI_API_KEY' | 'ANTHROPIC_API_KEY'>) {
  if (raw.REDIS_CLUSTER && !raw.REDIS_URL) {
    throw new ConfigError('REDIS_URL: required when REDIS_CLUSTER=true (one node of the cluster)');
  }
  if (raw.REDIS_CLUSTER && !/\{[^{}]+\}/.test(raw.QUEUE_PREFIX)) {
    throw new ConfigError('QUEUE_PREFIX: needs a hash tag on a Redis Cluster (REDIS_CLUSTER=true), e.g. {memorychat}');
  }
  if (raw.SUMMARY_PROVIDER === 'openai' && !raw.OPENAI_API_KEY) {
    throw new ConfigError('OPENAI_API_KEY: required when SUMMARY_PROVIDER=openai');
  }
  if (raw.SUMMARY_PROVIDER === 'anthropic' && !raw.ANTHROPIC_API_KEY) {
    throw new ConfigError('ANTHROPIC_API_KEY: required when SUMMARY_PROVIDER=anthropic');
  }
  if (raw.SUMMARY_PROVIDER && !raw.SUMMARY_MODEL) {
    throw new ConfigError('SUMMARY_MODEL: required when SUMMARY_PROVIDER is set');
  }
  if (raw.SUMMARY_MAX_INPUT_TOKENS < 2 * raw.SUMMARY_MAX_TOKENS + 300) {
    // The previous summary (at most SUMMARY_MAX_TOKENS) and new turns must both fit in one call.
    throw new ConfigError(`SUMMARY_MAX_INPUT_TOKENS: must be at least 2 × SUMMARY_MAX_TOKENS + 300 (got ${raw.SUMMARY_MAX_INPUT_TOKENS})`);
  }
  if (parseDurationMs(raw.MEMORY_CLEANUP_INTERVAL) < 1000) {
    throw new ConfigError(`MEMORY_CLEANUP_INTERVAL: must be at least 1s (got "${raw.MEMORY_CLEANUP_INTERVAL}")`);
  }
  return { cleanupIntervalMs: parseDurationMs(raw.MEMORY_CLEANUP_INTERVAL) };
}
