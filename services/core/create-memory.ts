import type { Config } from '../config/config.js';
import type { ScopedDatabase } from '../db/row-security.js';
import type { GdprAction } from '../model/gdpr.js';
import type { Identity } from '../model/identity.js';
import type { Answerer } from '../providers/answerers/answerer.js';
import { createViewPermissions } from '../providers/answerers/view-permissions.js';
import type { Embedder } from '../providers/embeddings/embedder.js';
import type { ChatLlm } from '../providers/llm/chat-llm.js';
import { createTenantApiKey, listTenantApiKeys, type NewApiKey, revokeTenantApiKey } from './api-keys/api-keys.js';
import { type AccessOrigin, type AuditQuery, listTenantAudit } from './audit/access-audit.js';
import { runMemoryChat } from './chat/chat.js';
import type { ChatStream, MemoryChatRequest } from './chat/chat-request.js';
import { type ContextRequest, resolveMemoryContext } from './context/context.js';
import { type SearchRequest, searchMemory } from './context/search.js';
import { type MemoryDeps, memorySettingsFrom } from './deps.js';
import { downloadExport, requestGdpr, viewRequest } from './gdpr/requests.js';
import type { IdempotencyClaim } from './idempotency/idempotency.js';
import type { JobLogger, JobQueue } from './job-queue.js';
import { enqueueSummarizationIfDue, summarizationSettingsFrom } from './jobs/summarization.js';
import type { AccountLinks } from './linking/account-links.js';
import { withLinkedAccounts } from './linking/linked-answerer.js';
import { viewPermissionsWithLinkedAccounts } from './linking/linked-view-permissions.js';
import { instrumentAnswerer, instrumentEmbedder, type Metrics, recordMemoryUse, recordTurnStored } from './metrics.js';
import {
  changeTenantSettings,
  editPair,
  listTenantPairs,
  markTenantPair,
  type PairPatch,
  promoteTurn,
  tenantSettings,
} from './pairs/pair-admin.js';
import { createPiiMasker } from './privacy/pii.js';
import { recallResultCsv, recallSqlByKeywords, recallSqlByRef } from './recall/sql-recall.js';
import { createVqlExecutor } from './recall/vql-execution.js';
import {
  clearUserSession,
  deleteUserSession,
  getUserSession,
  listUserSessions,
  type SessionChanges,
  updateUserSession,
} from './sessions/sessions.js';
import { correctUserTurn, deleteUserTurn, rateUserTurn, type TurnPatch } from './sessions/turn-control.js';
import { storeClientTurn, type TurnInput } from './sessions/turns.js';
import { tracedLlm } from './tracing.js';

/** What the memory is made of: the configuration, the database, the providers and the job queue. */
export interface MemoryParts {
  config: Config;
  db: ScopedDatabase;
  embedder: Embedder;
  answerer: Answerer;
  /** The question-rewriting LLM (LLM_PROVIDER). */
  llm?: ChatLlm;
  queue: JobQueue;
  clock?: () => Date;
  log: JobLogger;
  /** Provider latencies, memory use and jobs are recorded here when given. */
  metrics?: Metrics;
  /**
   * Account linking, when on: with ANSWER_AUTH=forward a caller without X-Upstream-Authorization is
   * answered, and their memory's views checked, with their linked token.
   */
  accountLinks?: Pick<AccountLinks, 'authorizationFor' | 'refusedUpstream'>;
}

/**
 * The memory: every operation of the service on conversation memory, over collaborators assembled
 * here once. The API decorates itself with it (services/api/plugins/memory.ts); the job processors
 * are made beside it (jobs/processors.ts), by the queue plugin and by the worker, which needs no façade.
 */
export function createMemory(parts: MemoryParts) {
  const { config, db, queue, metrics } = parts;
  const embedder = metrics ? instrumentEmbedder(parts.embedder, metrics) : parts.embedder;
  const clock = parts.clock ?? (() => new Date());
  const summarization = summarizationSettingsFrom(config);
  const links = config.forwardsCallerCredentials ? parts.accountLinks : undefined;
  const answerer = links ? withLinkedAccounts(parts.answerer, links) : parts.answerer;
  // On the memory's clock, so a permission's age is measured as a session's is.
  const viewPermissions = config.answerBackend === 'upstream' ? createViewPermissions(config, () => clock().getTime()) : undefined;
  const deps: MemoryDeps = {
    db,
    embedder,
    answerer: metrics ? instrumentAnswerer(answerer, metrics) : answerer,
    llm: parts.llm && tracedLlm(parts.llm, 'rewrite'),
    ...(viewPermissions ? { viewPermissions: links ? viewPermissionsWithLinkedAccounts(viewPermissions, links) : viewPermissions } : {}),
    clock,
    settings: memorySettingsFrom(config),
    pii: createPiiMasker({ mode: config.piiMode, secret: config.MEMORY_PII_SECRET, custom: config.piiPatterns }),
    log: parts.log,
    afterTurnStored: (event) => enqueueSummarizationIfDue(queue, summarization, parts.log, event),
    ...(metrics ? { turnWritten: (turn) => recordTurnStored(metrics, turn) } : {}),
  };
  const execute = createVqlExecutor(config);
  const gdpr = { db, queue, clock, eraseRequestsPerHour: config.GDPR_ERASE_REQUESTS_PER_HOUR };

  return {
    clock,
    settings: deps.settings,

    /** `POST /memoryChat`: resolve memory, ask the answerer with it, store the turn. */
    async chat(req: MemoryChatRequest, stream?: ChatStream) {
      const response = await runMemoryChat(deps, req, stream);
      const used = response.memory_context_used;
      metrics?.memoryApplied.inc({ applied: String(used.applied), reason: used.reason });
      // The read failed and the question was answered without memory (question-memory.ts).
      if (used.reason === 'memory_unavailable') metrics?.storeFailures.inc({ effect: 'degraded' });
      if (metrics && used.applied) {
        recordMemoryUse(metrics, {
          retrievalSeconds: response.memory_retrieval_time,
          contextTokens: used.context_tokens,
          historyCount: used.history_messages_count,
          similarCount: used.similar_queries_count,
        });
      }
      return response;
    },
    context: (identity: Identity, req: ContextRequest) => resolveMemoryContext(deps, identity, req),
    search: (identity: Identity, req: SearchRequest) => searchMemory(deps, identity, req),

    sessions: {
      list: (identity: Identity, limit: number, cursor?: string, key?: string) => listUserSessions(deps, identity, limit, cursor, key),
      get: (identity: Identity, sessionId: string) => getUserSession(deps, identity, sessionId),
      update: (identity: Identity, sessionId: string, changes: SessionChanges) => updateUserSession(deps, identity, sessionId, changes),
      remove: (identity: Identity, sessionId: string) => deleteUserSession(deps, identity, sessionId),
      clear: (identity: Identity, sessionId: string) => clearUserSession(deps, identity, sessionId),
    },

    turns: {
      store: (
        identity: Identity,
        target: { sessionId: string } | { newSessionName?: string; sessionKey?: string },
        input: TurnInput,
        claim?: IdempotencyClaim,
      ) => storeClientTurn(deps, identity, target, input, claim),
      correct: (identity: Identity, sessionId: string, turnNumber: number, patch: TurnPatch) =>
        correctUserTurn(deps, identity, sessionId, turnNumber, patch),
      remove: (identity: Identity, sessionId: string, turnNumber: number) => deleteUserTurn(deps, identity, sessionId, turnNumber),
      rate: (identity: Identity, sessionId: string, turnNumber: number, feedback: { rating: 'up' | 'down'; comment?: string }) =>
        rateUserTurn(deps, identity, sessionId, turnNumber, feedback),
    },

    sql: {
      byRef: (identity: Identity, sessionId: string, ref: string) => recallSqlByRef(deps, identity, sessionId, ref),
      byKeywords: (identity: Identity, sessionId: string, q: string) => recallSqlByKeywords(deps, identity, sessionId, q),
      /** The stored result as CSV, or with `fresh` the stored SQL re-run upstream (ANSWER_EXECUTE_URL). */
      resultCsv: (identity: Identity, sessionId: string, ref: string, fresh?: { limit?: number; upstreamAuthorization?: string }) =>
        recallResultCsv(deps, identity, sessionId, ref, fresh ? (sql) => execute(sql, fresh) : undefined),
    },

    gdpr: {
      request: (actor: Identity, subjectUserId: string, action: GdprAction, origin?: AccessOrigin) =>
        requestGdpr(gdpr, actor, subjectUserId, action, origin),
      find: (caller: Identity, requestId: string, origin?: AccessOrigin) => viewRequest(gdpr, caller, requestId, origin),
      download: (caller: Identity, requestId: string, origin?: AccessOrigin) => downloadExport(gdpr, caller, requestId, origin),
    },

    /** GET /admin/audit: the access audit of the admin's tenant. */
    audit: (admin: Identity, query: AuditQuery) => listTenantAudit(db, admin, query),

    /** /admin/api-keys: the service credentials of the admin's tenant (docs/api-keys.md). */
    apiKeys: {
      create: (admin: Identity, input: NewApiKey) => createTenantApiKey(db, admin, input, clock()),
      list: (admin: Identity) => listTenantApiKeys(db, admin),
      revoke: (admin: Identity, keyId: string) => revokeTenantApiKey(db, admin, keyId, clock()),
    },

    /** /admin/verified-pairs: the tenant's verified question/SQL pairs (docs/verified-pairs.md). */
    pairs: {
      promote: (admin: Identity, source: { userId: string; sessionId: string; turnNumber: number }, origin?: AccessOrigin) =>
        promoteTurn(deps, admin, source, origin),
      list: (admin: Identity, q: { retired: boolean; limit: number }) => listTenantPairs(deps, admin, q),
      edit: (admin: Identity, pairId: string, patch: PairPatch, origin?: AccessOrigin) => editPair(deps, admin, pairId, patch, origin),
      mark: (admin: Identity, pairId: string, mark: 'retired' | 'adopted', origin?: AccessOrigin) =>
        markTenantPair(deps, admin, pairId, mark, origin),
    },

    /** /admin/settings: the tenant's own settings. */
    tenantSettings: {
      get: (admin: Identity) => tenantSettings(deps, admin),
      set: (admin: Identity, settings: { pairs_from_positive_feedback: boolean }, origin?: AccessOrigin) =>
        changeTenantSettings(deps, admin, settings, origin),
    },
  };
}

export type Memory = ReturnType<typeof createMemory>;
