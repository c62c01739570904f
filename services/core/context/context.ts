import type { Identity } from '../../model/identity.js';
import { databaseNames } from '../database-names.js';
import type { MemoryDeps } from '../deps.js';
import { sessionIdForRead } from '../sessions/session-keys.js';
import { notFound } from '../sessions/sessions.js';
import { traced } from '../tracing.js';
import { keepReadable, viewCallerOf, viewGateFor, viewPermissionsOutcome } from '../views/readable-memory.js';
import { buildFormattedContext, type ContextFormat } from './formats.js';
import { type MemoryScope, recallMemory } from './recall-memory.js';

export interface ContextRequest {
  question: string;
  sessionId?: string;
  sessionKey?: string;
  format: ContextFormat;
  maxTokens?: number;
  k?: number;
  vdpDatabaseNames?: string | string[];
  vdpTagNames?: string | string[];
  memoryScope?: MemoryScope;
  /** The caller's X-Upstream-Authorization: turns over views it may not read now are left out. */
  upstreamAuthorization?: string;
}

/**
 * `POST /memory/context` (docs/design.md §6): what a chatbot running its own LLM should add to a new
 * question. Nothing is stored, and reading does not extend a sliding session.
 */
export async function resolveMemoryContext(deps: MemoryDeps, identity: Identity, req: ContextRequest) {
  const now = deps.clock();
  const warnings: string[] = [];
  const sessionId = await sessionIdForRead(deps, identity, req);
  const retrieved = await traced('memory.retrieval', {}, () =>
    recallMemory(
      deps,
      {
        identity,
        question: req.question,
        sessionId,
        now,
        windowSize: deps.settings.maxTurnsPerSession,
        k: req.k ?? deps.settings.semanticSearchK,
        databases: databaseNames(req.vdpDatabaseNames),
        tags: databaseNames(req.vdpTagNames),
        withMessages: true,
        memoryScope: req.memoryScope,
      },
      (err) => {
        deps.log.warn({ err }, 'embedding the question failed; context without related memories');
        warnings.push('related memories are unavailable: the embeddings provider failed');
      },
    ),
  );
  if (req.sessionId && !retrieved.session) throw notFound(req.sessionId);
  const gate = await viewGateFor(deps.viewPermissions, viewCallerOf(identity, req.upstreamAuthorization), [
    ...retrieved.window,
    ...retrieved.similar,
  ]);
  const window = keepReadable(retrieved.window, gate);
  const memories = keepReadable(retrieved.similar, gate);

  const built = buildFormattedContext({
    question: req.question,
    format: req.format,
    maxTokens: req.maxTokens ?? deps.settings.maxContextTokens,
    now,
    summary: retrieved.summary,
    slots: retrieved.slots,
    window: window.kept,
    memories: memories.kept,
  });
  return {
    session_id: retrieved.session?.session_id ?? null,
    expires_at: retrieved.session?.expires_at.toISOString() ?? null,
    format: req.format,
    question: req.question,
    ...built,
    ...viewPermissionsOutcome(gate, window.leftOut + memories.leftOut),
    warnings,
  };
}
