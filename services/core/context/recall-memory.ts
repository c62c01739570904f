import { type Retrieved, retrieveMemory } from '../../db/repositories/memory-retrieval.js';
import type { Identity } from '../../model/identity.js';
import type { MemoryScope } from '../../model/sessions.js';
import type { MemoryDeps } from '../deps.js';
import { pairRecall } from '../pairs/pair-recall.js';
import { questionSearch } from '../search-terms/lexical-terms.js';
import { RERANK_CANDIDATES, rerankByTableLinks } from './table-links.js';

export type { MemoryScope };

/** What was read, and the question's embedding it was searched with (null when none was made). */
export interface Recalled extends Retrieved {
  questionEmbedding: number[] | null;
}

export interface RecallRequest {
  identity: Identity;
  question: string;
  /** Resume this session; absent for a new one. */
  sessionId?: string;
  now: Date;
  windowSize: number;
  /** Similar past turns to find; 0 skips the embedding call. */
  k: number;
  /** The request's `vdp_database_names`, when it names any. */
  databases?: string[];
  /** The request's `vdp_tag_names`, when it names any. */
  tags?: string[];
  /** Also read the window turns' message chains (the memory API replays them). */
  withMessages?: boolean;
  /** Also read up to this many of the session's latest questions (dedup of the turn to be stored). */
  recentQuestions?: number;
  /** The request's scope; without one, the session's stored scope, else `user`. */
  memoryScope?: MemoryScope;
  /** Recall across sessions only turns this answerer wrote, or that no answerer of the service did (/memoryChat). */
  answerer?: string;
  /** Also read the tenant's verified pairs (docs/verified-pairs.md), with the same embedding and scope. */
  verifiedPairs?: boolean;
  /** Read at most this many characters of each turn's answer (retrieveMemory); whole when absent. */
  answerChars?: number;
}

/**
 * The one recall pipeline of /memoryChat and /memory/context: embed the question and take its
 * lexical terms, then read the session, its window and the user's similar turns (both signals
 * fused) in one round trip; the best RERANK_CANDIDATES of those are cut to `k` by how the question's
 * words point to their tables (table-links.ts). A failed embedding is not a
 * failed recall: the window is still read, without similar turns, and `onEmbeddingFailed` lets the
 * caller say so in its own words.
 */
export async function recallMemory(
  deps: Pick<MemoryDeps, 'db' | 'embedder' | 'settings'>,
  req: RecallRequest,
  onEmbeddingFailed: (err: unknown) => void,
): Promise<Recalled> {
  let embedding: number[] | null = null;
  if (req.k > 0) {
    try {
      [embedding = null] = await deps.embedder.embed([req.question]);
    } catch (err) {
      onEmbeddingFailed(err);
    }
  }
  const scope = { requested: req.databases, allowed: req.identity.databases, ...(req.tags ? { tags: req.tags } : {}) };
  const retrieved = await retrieveMemory(deps.db.asUser(req.identity), {
    identity: req.identity,
    sessionId: req.sessionId,
    now: req.now,
    windowSize: req.windowSize,
    k: embedding ? Math.max(req.k, RERANK_CANDIDATES) : 0,
    minSimilarity: deps.settings.minSimilarity,
    exactSearchMaxTurns: deps.settings.exactSearchMaxTurns,
    embedding,
    embeddingModel: deps.embedder.modelId,
    search: questionSearch(req.question),
    scope,
    ...(req.withMessages ? { withMessages: true } : {}),
    ...(req.recentQuestions ? { recentQuestions: req.recentQuestions } : {}),
    ...(req.memoryScope ? { memoryScope: req.memoryScope } : {}),
    ...(req.answerer ? { answerer: req.answerer } : {}),
    ...(req.answerChars !== undefined ? { answerChars: req.answerChars } : {}),
    ...(req.verifiedPairs ? { verifiedPairs: pairRecall(scope, deps.settings.minSimilarity) } : {}),
  });
  return { ...retrieved, similar: rerankByTableLinks(req.question, retrieved.similar, req.k), questionEmbedding: embedding };
}
