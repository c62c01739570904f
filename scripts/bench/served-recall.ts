import type { Database } from '../../services/db/pool.js';
import { type SearchRequest, searchTurns } from '../../services/db/repositories/turns.js';
import { embedText } from '../../services/providers/embeddings/local-embedder.js';
import { interactionsFor, loadSparc, pick, TENANT, varyQuestion } from './data.js';
import { DIMENSIONS, EMBEDDING_MODEL } from './seed.js';

const RECALL_K = 20;
/** A threshold no bench user reaches: exact search. */
const EXACT = 1_000_000;

/** The rule for the path (hybrid-rank.ts): the service's defaults when absent. */
export type PathRule = Pick<SearchRequest, 'exactSearchMaxTurns' | 'annRowCost'>;

/** /memory/search's request for `user`'s 20 nearest turns to `question` by vector alone, no floor, under `rule`. */
export function vectorSearch(user: string, question: string, rule: PathRule): SearchRequest {
  return {
    identity: { tenantId: TENANT, userId: user, roles: [] },
    now: new Date(),
    embedding: embedText(question, DIMENSIONS)!,
    embeddingModel: EMBEDDING_MODEL,
    k: RECALL_K,
    minSimilarity: -1,
    search: null,
    scope: {},
    ...rule,
  };
}

/**
 * `queries` questions varied from SParC: two in three about the user's own databases (`topics`), the
 * third about any.
 */
export function recallQuestions(topics: readonly string[], queries: number, random: () => number): string[] {
  const own = interactionsFor([...topics]).flatMap((i) => i.turns);
  const any = loadSparc().flatMap((i) => i.turns);
  return Array.from({ length: queries }, (_, q) => varyQuestion(random, pick(random, q % 3 === 2 ? any : own).question));
}

/**
 * Recall@20 of /memory/search's statement (vector only, no floor) for `user`, as `path` searches
 * (`exactSearchMaxTurns`, `annRowCost`: the service's defaults when absent), against exact search,
 * over `queries` recallQuestions. Tie-aware: an approximate hit counts when it is at least as near as exact
 * search's 20th (rounded as the statement returns similarities), so equally near turns are not misses.
 */
export async function recallAgainstExact(
  db: Database,
  user: string,
  topics: readonly string[],
  queries: number,
  random: () => number,
  path: PathRule = {},
): Promise<{ recall: number; exactMs: number[]; pathMs: number[] }> {
  const nearest = async (question: string, rule: PathRule) => {
    const request = vectorSearch(user, question, rule);
    const started = performance.now();
    const hits = await searchTurns(db.scoped.asUser(request.identity), request);
    return { similarities: hits.map((h) => h.similarity), ms: performance.now() - started };
  };
  let found = 0;
  let wanted = 0;
  const exactMs: number[] = [];
  const pathMs: number[] = [];
  for (const question of recallQuestions(topics, queries, random)) {
    const exact = await nearest(question, { exactSearchMaxTurns: EXACT });
    const served = await nearest(question, path);
    const cutoff = exact.similarities.at(-1) ?? 1;
    wanted += exact.similarities.length;
    found += Math.min(exact.similarities.length, served.similarities.filter((s) => s >= cutoff - 1e-9).length);
    exactMs.push(exact.ms);
    pathMs.push(served.ms);
  }
  return { recall: wanted ? found / wanted : 1, exactMs, pathMs };
}
