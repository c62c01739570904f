import { findLiveSession } from '../../db/repositories/memory-retrieval.js';
import { searchTurns } from '../../db/repositories/turns.js';
import { AppError } from '../../model/errors.js';
import type { Identity } from '../../model/identity.js';
import { databaseNames } from '../database-names.js';
import type { MemoryDeps } from '../deps.js';
import { questionSearch } from '../search-terms/lexical-terms.js';
import { notFound } from '../sessions/sessions.js';
import { traced } from '../tracing.js';
import { keepReadable, viewCallerOf, viewGateFor, viewPermissionsOutcome } from '../views/readable-memory.js';

export interface SearchRequest {
  query: string;
  k: number;
  sessionId?: string;
  vdpDatabaseNames?: string | string[];
  /** Only turns recorded within these tags, as `/memoryChat` and `/memory/context` bound memory. */
  vdpTagNames?: string | string[];
  minSimilarity?: number;
  /** The caller's X-Upstream-Authorization: turns over views it may not read now are left out. */
  upstreamAuthorization?: string;
}

/** `POST /memory/search`: the caller's turns that best match `query` (vector and lexical ranks fused), with their cosine similarity. */
export async function searchMemory(deps: MemoryDeps, identity: Identity, req: SearchRequest) {
  const now = deps.clock();
  if (req.sessionId && !(await findLiveSession(deps.db.asUser(identity), identity, req.sessionId, now))) throw notFound(req.sessionId);
  let embedding: number[] | null;
  try {
    [embedding = null] = await traced('embedding', { 'memorychat.embedding_model': deps.embedder.modelId }, () =>
      deps.embedder.embed([req.query]),
    );
  } catch (err) {
    throw new AppError('embeddings-unavailable', 'the query could not be embedded; please retry', { cause: err });
  }
  if (!embedding) return { results: [] };
  const tags = databaseNames(req.vdpTagNames);
  const hits = await traced('memory.search', {}, () =>
    searchTurns(deps.db.asUser(identity), {
      identity,
      now,
      embedding,
      embeddingModel: deps.embedder.modelId,
      k: req.k,
      // No floor by default: a search asks for the k best, however weak.
      minSimilarity: req.minSimilarity ?? -1,
      exactSearchMaxTurns: deps.settings.exactSearchMaxTurns,
      search: questionSearch(req.query),
      sessionId: req.sessionId,
      scope: {
        requested: databaseNames(req.vdpDatabaseNames),
        allowed: identity.databases,
        ...(tags ? { tags } : {}),
      },
    }),
  );
  const gate = await viewGateFor(deps.viewPermissions, viewCallerOf(identity, req.upstreamAuthorization), hits);
  const readable = keepReadable(hits, gate);
  return {
    ...viewPermissionsOutcome(gate, readable.leftOut),
    results: readable.kept.map((h) => ({
      ...h,
      created_at: new Date(h.created_at).toISOString(),
      similarity: Math.round(h.similarity * 10_000) / 10_000,
    })),
  };
}
