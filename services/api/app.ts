import type { ServerOptions } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { type FastifyServerOptions } from 'fastify';
import type pg from 'pg';
import type { Config } from '../config/config.js';
import type { JobQueue } from '../core/job-queue.js';
import { createMetrics } from '../core/metrics.js';
import { type ScopedDatabase, scopedDatabase } from '../db/row-security.js';
import { MAX_ID_CHARS } from '../model/identity.js';
import type { Answerer } from '../providers/answerers/answerer.js';
import type { Embedder } from '../providers/embeddings/embedder.js';
import type { ChatLlm } from '../providers/llm/chat-llm.js';
import { createSummaryLlm } from '../providers/llm/summary-llm.js';
import mcpEndpoint from './mcp/mcp-endpoint.js';
import accountLinks from './plugins/account-links.js';
import apiKeys from './plugins/api-keys.js';
import auth from './plugins/auth.js';
import cors from './plugins/cors.js';
import idempotency from './plugins/idempotency.js';
import inputGuard from './plugins/input-guard.js';
import loopbackHost from './plugins/loopback-host.js';
import memoryPlugin from './plugins/memory.js';
import metricsPlugin from './plugins/metrics.js';
import openapiDocs from './plugins/openapi-docs.js';
import playground from './plugins/playground.js';
import problemErrors, { renderClientError, renderFrameworkError } from './plugins/problem-errors.js';
import queuePlugin from './plugins/queue.js';
import rateLimit from './plugins/rate-limit.js';
import securityHeaders from './plugins/security-headers.js';
import shutdownRefusal from './plugins/shutdown-refusal.js';
import tracing from './plugins/tracing.js';
import { requestIdOf } from './request-id.js';
import { requestValidatorFactory } from './request-validator.js';
import accountLinkRoutes from './routes/account-link.js';
import adminApiKeyRoutes from './routes/admin-api-keys.js';
import adminAuditRoutes from './routes/admin-audit.js';
import adminJobsRoutes from './routes/admin-jobs.js';
import adminVerifiedPairRoutes from './routes/admin-verified-pairs.js';
import gdprRoutes from './routes/gdpr.js';
import healthRoutes from './routes/health.js';
import memoryChatRoutes from './routes/memory-chat.js';
import memoryContextRoutes from './routes/memory-context.js';
import sessionRoutes from './routes/sessions.js';
import sqlRecallRoutes from './routes/sql-recall.js';
import turnControlRoutes from './routes/turn-control.js';
import turnRoutes from './routes/turns.js';
import { ProblemSchema } from './schemas/problem.js';

declare module 'fastify' {
  interface FastifyInstance {
    config: Config;
    /** The service's only way to its tables: statements scoped to a user or to maintenance. */
    db: ScopedDatabase;
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
  /** Run the BullMQ queue's jobs in this process (the embedded database with REDIS_URL: server.ts). */
  consumeOwnQueue?: boolean;
  logger?: FastifyServerOptions['logger'];
}

export const SERVICE_VERSION = '0.1.0';

/** The HTTP application over collaborators made by the caller (server entry point, tests, scripts). */
export async function buildApp(deps: AppDeps) {
  const { config } = deps;
  const app = Fastify({
    logger: deps.logger ?? false,
    bodyLimit: config.BODY_LIMIT_BYTES,
    // The proxies' addresses only, never "every hop": a client could then name any address in
    // X-Forwarded-For and escape the throttle on failed authentications.
    trustProxy: config.TRUST_PROXY ? config.TRUST_PROXY.split(',').map((proxy) => proxy.trim()) : false,
    ...connectionTimeouts(config),
    // The id is chosen by requestIdOf (validated), not taken from the header as sent.
    requestIdHeader: false,
    genReqId: requestIdOf,
    // Errors raised before routing or by Node's HTTP parser are problem documents too.
    frameworkErrors: renderFrameworkError,
    clientErrorHandler: renderClientError,
    // The longest path parameter a schema allows, percent-encoded: an admin route's user_id of
    // MAX_ID_CHARS characters of up to 3 UTF-8 bytes each.
    routerOptions: { maxParamLength: 9 * MAX_ID_CHARS },
    // Requests arriving while closing get a problem from the shutdown-refusal plugin instead.
    return503OnClosing: false,
    schemaController: { compilersFactory: { buildValidator: requestValidatorFactory } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorate('config', config);
  // The embedded database, with no autovacuum, also purges the erased tables' statistics and retires the WAL after an erase.
  app.decorate(
    'db',
    scopedDatabase(deps.db, {
      purgeStatisticsAndWal: !config.DATABASE_URL,
      rewriteErasedTables: config.ERASE_RECLAIM === 'rewrite',
      blockingIndexBuilds: !config.DATABASE_URL,
      reclaimWindowMs: config.eraseReclaimWindowMs,
    }),
  );

  app.addSchema(ProblemSchema);
  // First of all hooks, so every response (errors, 401, 404, 429 included) carries the id its logs carry.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    done();
  });
  await app.register(tracing);
  await app.register(problemErrors);
  await app.register(loopbackHost, { config });
  await app.register(inputGuard);
  await app.register(shutdownRefusal);
  // Before every route (docs included) and before auth: hooks apply to routes declared after them, and
  // a CORS preflight carries no token.
  await app.register(securityHeaders);
  await app.register(cors, { config });
  await app.register(metricsPlugin, { metrics: createMetrics(), pool: deps.db });
  await app.register(openapiDocs, { version: SERVICE_VERSION });
  await app.register(auth, { config, localSecret: deps.localSecret });
  await app.register(apiKeys);
  await app.register(rateLimit, { config });
  await app.register(playground, { config, localSecret: deps.localSecret });
  await app.register(queuePlugin, {
    queue: deps.queue,
    consume: deps.consumeOwnQueue,
    processorParts: { embedder: deps.embedder, summaryLlm: deps.summaryLlm ?? createSummaryLlm(config), clock: deps.clock },
  });
  await app.register(accountLinks, { clock: deps.clock });
  await app.register(memoryPlugin, {
    embedder: deps.embedder,
    answerer: deps.answerer,
    llm: deps.llm,
    clock: deps.clock,
  });
  await app.register(idempotency);
  await app.register(healthRoutes);
  await app.register(memoryChatRoutes);
  await app.register(sessionRoutes);
  await app.register(turnRoutes);
  await app.register(turnControlRoutes);
  await app.register(memoryContextRoutes);
  await app.register(sqlRecallRoutes);
  await app.register(gdprRoutes);
  await app.register(adminJobsRoutes);
  await app.register(adminAuditRoutes);
  await app.register(adminApiKeyRoutes);
  await app.register(adminVerifiedPairRoutes);
  await app.register(accountLinkRoutes);
  await app.register(mcpEndpoint(SERVICE_VERSION));
  // Beyond it, Node closes new connections at once: keep it under the process's descriptor limit
  // (`ulimit -n`) less the database pool and Redis connections.
  app.server.maxConnections = config.MAX_CONNECTIONS || Number.POSITIVE_INFINITY;
  return app;
}

export type App = Awaited<ReturnType<typeof buildApp>>;

/**
 * Node closes a connection whose headers or body have not all arrived within REQUEST_TIMEOUT_MS with
 * a 408 (problem-errors.ts renders it), so sockets that send part of a request and stop cannot pile up
 * until the process runs out of descriptors. Node looks for such connections every
 * `connectionsCheckingInterval` (30 s by default, which would double a short timeout), so it looks
 * four times per timeout. Once a request has arrived whole, the time to answer it is bounded by
 * ANSWER_TIMEOUT_MS, not by this. No socket inactivity timeout (`connectionTimeout`) is set: it would
 * also cut a /memoryChat that waits for its answerer in silence.
 */
function connectionTimeouts(config: Config): { requestTimeout: number; keepAliveTimeout: number; http: ServerOptions } {
  return {
    requestTimeout: config.REQUEST_TIMEOUT_MS,
    keepAliveTimeout: config.KEEP_ALIVE_TIMEOUT_MS,
    http: {
      headersTimeout: config.REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: Math.min(30_000, Math.ceil(config.REQUEST_TIMEOUT_MS / 4)),
    },
  };
}
