import Fastify, { type FastifyServerOptions } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type pg from 'pg';
import { scopedDatabase, type ScopedDatabase } from '../../db/row-security.js';
import type { Config } from '../config/config.js';
import type { MemoryChatDeps } from '../core/memory/chat.js';
import type { MemoryApiDeps } from '../core/memory/memory.js';
import type { Answerer } from '../providers/answerers/answerer.js';
import type { Embedder } from '../providers/embeddings/embedder.js';
import type { ChatLlm } from '../providers/llm/chat-llm.js';
import type { JobQueue } from '../core/jobs/job-queue.js';
import { enqueueSummarizationIfDue, summarizationSettingsFrom } from '../core/jobs/summarization.js';
import { createSummaryLlm } from '../providers/llm/summary-llm.js';
import { createMetrics, instrumentAnswerer, instrumentEmbedder } from '../core/metrics.js';
import auth from './plugins/auth.js';
import cors from './plugins/cors.js';
import idempotency from './plugins/idempotency.js';
import metricsPlugin from './plugins/metrics.js';
import openapiDocs from './plugins/openapi-docs.js';
import inputGuard from './plugins/input-guard.js';
import problemErrors, { renderClientError, renderFrameworkError } from './plugins/problem-errors.js';
import queuePlugin from './plugins/queue.js';
import rateLimit from './plugins/rate-limit.js';
import securityHeaders from './plugins/security-headers.js';
import shutdownRefusal from './plugins/shutdown-refusal.js';
import adminJobsRoutes from './routes/admin-jobs.js';
import gdprRoutes from './routes/gdpr.js';
import healthRoutes from './routes/health.js';
import memoryChatRoutes from './routes/memory-chat.js';
import memoryContextRoutes from './routes/memory-context.js';
import sessionRoutes from './routes/sessions.js';
import sqlRecallRoutes from './routes/sql-recall.js';
import turnRoutes from './routes/turns.js';
import { ProblemSchema } from './schemas/problem.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    /** The service's only way to its tables: statements scoped to a user or to maintenance. */
    db: ScopedDatabase;
    memoryChatDeps: MemoryChatDeps;
    memoryApiDeps: MemoryApiDeps;
  }
}

export interface AppDeps {
  config: Config;
  db: pg.Pool;
  embedder: Embedder;
  answerer: Answerer;
  llm?: ChatLlm;
  /** The summarization LLM; by default made from SUMMARY_PROVIDER (none: extractive summaries). */
  summaryLlm?: ChatLlm;
  /** The job queue; by default BullMQ with REDIS_URL, in-process without. */
  queue?: JobQueue;
  clock?: () => Date;
  /** The HS256 secret in local mode. */
  localSecret?: string;
  logger?: FastifyServerOptions['logger'];
}

export const SERVICE_VERSION = '0.1.0';

/** The HTTP application over collaborators made by the caller (server entry point, tests, scripts). */
export async function buildApp(deps: AppDeps) {
  const { config } = deps;
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: config.BODY_LIMIT_BYTES,
    requestIdHeader: 'x-request-id',
    genReqId: () => crypto.randomUUID(),
    // Errors raised before routing or by Node's HTTP parser are problem documents too.
    frameworkErrors: renderFrameworkError,
    clientErrorHandler: renderClientError,
    // Above the longest path parameter a schema allows (an admin route's user_id: 256 characters).
    routerOptions: { maxParamLength: 512 },
    // Requests arriving while closing get a problem from the shutdown-refusal plugin instead.
    return503OnClosing: false,
  }).withTypeProvider<TypeBoxTypeProvider>();

  const metrics = createMetrics();
  const embedder = instrumentEmbedder(deps.embedder, metrics);

  app.decorate('config', config);
  const db = scopedDatabase(deps.db);
  app.decorate('db', db);
  app.decorate('memoryChatDeps', {
    db,
    embedder,
    answerer: instrumentAnswerer(deps.answerer, metrics),
    llm: deps.llm,
    clock: deps.clock ?? (() => new Date()),
    log: app.log,
    afterTurnStored: (event) =>
      enqueueSummarizationIfDue(app.queue, summarizationSettingsFrom(config), app.log, event),
    settings: {
      maxHistoryTurns: config.MEMORY_MAX_HISTORY_MESSAGES,
      semanticSearchK: config.MEMORY_SEMANTIC_SEARCH_K,
      minSimilarity: config.MEMORY_MIN_SIMILARITY,
      maxContextTokens: config.MEMORY_MAX_CONTEXT_TOKENS,
      maxQuestionChars: config.MEMORY_MAX_QUESTION_CHARS,
      augmentation: config.MEMORY_AUGMENTATION,
      ttlMs: config.memoryTtlMs,
      ttlMode: config.MEMORY_TTL_MODE,
      maxTurnsPerSession: config.MEMORY_MAX_TURNS_PER_SESSION,
    },
  } satisfies MemoryChatDeps);

  app.decorate('memoryApiDeps', {
    db,
    embedder,
    clock: app.memoryChatDeps.clock,
    log: app.log,
    afterTurnStored: app.memoryChatDeps.afterTurnStored,
    settings: {
      ttlMs: config.memoryTtlMs,
      ttlMode: config.MEMORY_TTL_MODE,
      maxTurnsPerSession: config.MEMORY_MAX_TURNS_PER_SESSION,
      dedupSimilarity: config.MEMORY_DEDUP_SIMILARITY,
      semanticSearchK: config.MEMORY_SEMANTIC_SEARCH_K,
      minSimilarity: config.MEMORY_MIN_SIMILARITY,
      maxContextTokens: config.MEMORY_MAX_CONTEXT_TOKENS,
    },
  } satisfies MemoryApiDeps);

  app.addSchema(ProblemSchema);
  await app.register(problemErrors);
  await app.register(inputGuard);
  await app.register(shutdownRefusal);
  // Before every route (docs included) and before auth: hooks apply to routes declared after them, and
  // a CORS preflight carries no token.
  await app.register(securityHeaders);
  await app.register(cors, { config });
  await app.register(metricsPlugin, { metrics, pool: deps.db });
  await app.register(openapiDocs, { version: SERVICE_VERSION });
  await app.register(auth, { config, localSecret: deps.localSecret });
  await app.register(rateLimit, { config });
  await app.register(queuePlugin, {
    config,
    queue: deps.queue,
    processorDeps: {
      db,
      embedder,
      metrics,
      summaryLlm: deps.summaryLlm ?? createSummaryLlm(config),
      clock: app.memoryChatDeps.clock,
    },
  });
  await app.register(idempotency, { db, clock: app.memoryChatDeps.clock });
  await app.register(healthRoutes);
  await app.register(memoryChatRoutes);
  await app.register(sessionRoutes);
  await app.register(turnRoutes);
  await app.register(memoryContextRoutes);
  await app.register(sqlRecallRoutes);
  await app.register(gdprRoutes);
  await app.register(adminJobsRoutes);
  return app;
}

export type App = Awaited<ReturnType<typeof buildApp>>;
