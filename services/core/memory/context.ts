import { retrieveMemory } from '../../../db/repositories/memory-store.js';
import { buildFormattedContext, type ContextFormat } from './formats.js';
import type { Identity } from '../../model/identity.js';
import type { MemoryApiDeps } from './memory.js';
import { databaseNames } from './chat.js';
import { notFound } from '../sessions/sessions.js';

export interface ContextRequest {
  question: string;
  sessionId?: string;
  format: ContextFormat;
  maxTokens?: number;
  k?: number;
  vdpDatabaseNames?: string | string[];
}

/**
 * `POST /memory/context` (docs/design.md §6): what a chatbot running its own LLM should add to a new
 * question. Nothing is stored, and reading does not extend a sliding session.
 */
export async function resolveMemoryContext(deps: MemoryApiDeps, identity: Identity, req: ContextRequest) {
  const now = deps.clock();
  const warnings: string[] = [];
  const k = req.k ?? deps.settings.semanticSearchK;
  let embedding: number[] | null = null;
  if (k > 0) {
    try {
      [embedding = null] = await deps.embedder.embed([req.question]);
    } catch (err) {
      deps.log.warn({ err }, 'embedding the question failed; context without related memories');
      warnings.push('related memories are unavailable: the embeddings provider failed');
    }
  }
  const retrieved = await retrieveMemory(deps.db.asUser(identity), {
    withMessages: true,
    identity,
    sessionId: req.sessionId,
    now,
    windowSize: deps.settings.maxTurnsPerSession,
    k: embedding ? k : 0,
    minSimilarity: deps.settings.minSimilarity,
    embedding,
    embeddingModel: deps.embedder.modelId,
    scope: { requested: databaseNames(req.vdpDatabaseNames), allowed: identity.databases },
  });
  if (req.sessionId && !retrieved.session) throw notFound(req.sessionId);

  const built = buildFormattedContext({
    question: req.question,
    format: req.format,
    maxTokens: req.maxTokens ?? deps.settings.maxContextTokens,
    now,
    summary: retrieved.session?.summary_text ?? null,
    slots: retrieved.session?.slots ?? {},
    window: retrieved.window,
    memories: retrieved.similar,
  });
  return {
    session_id: retrieved.session?.session_id ?? null,
    expires_at: retrieved.session?.expires_at.toISOString() ?? null,
    format: req.format,
    question: req.question,
    ...built,
    warnings,
  };
}
