import { isBounded } from '../../db/repositories/sql-scope.js';
import type { PairExample, PairRecall } from '../../db/repositories/verified-pairs.js';
import type { DatabaseScope } from '../../model/identity.js';
import { round } from '../rounding.js';
import { tablesReadOf } from '../search-terms/tables-read.js';

export type { PairExample };

/**
 * At most this many of the tenant's verified pairs go into a question's memory, each over another set
 * of tables: as many as the similar turns a user's own memory brings by default.
 */
export const VERIFIED_PAIRS_K = 3;

/** The key of a stored turn's metadata that lists the pairs its memory held (their negative feedback). */
export const PAIRS_METADATA_KEY = 'verified_pair_ids';

/**
 * How a question's memory takes the tenant's verified pairs (searched in its retrieval statement,
 * with its embedding and within its database scope: a pair over a database the request or the token
 * does not name is never recalled, docs/verified-pairs.md).
 *
 * Within bounds the k best are taken however weak their cosine: they are confirmed SQL over the very
 * databases the question is asked of, the few-shot examples a text-to-SQL prompt learns the schema
 * from (DAIL-SQL takes its k nearest with no floor). A request without bounds may reach every
 * database of the tenant, so there a pair needs MEMORY_MIN_SIMILARITY or a lexical match, as a
 * user's similar turns do.
 */
export function pairRecall(scope: DatabaseScope, minSimilarity: number): PairRecall {
  return { k: VERIFIED_PAIRS_K, minSimilarity: isBounded(scope) ? null : minSimilarity };
}

/** What `memory_context_used` says of the pairs in the memory block. */
export function pairsUsed(pairs: PairExample[]) {
  return {
    verified_pairs_count: pairs.length,
    verified_pairs: pairs.map((p) => ({
      pair_id: p.pair_id,
      question: p.question,
      views: tablesReadOf(p),
      similarity: round(p.similarity, 4),
      verified: true as const,
    })),
  };
}

/** What a stored turn keeps of the pairs its memory held: their ids, so a down rating counts against them. */
export function pairsMetadata(pairs: PairExample[]): Record<string, string[]> {
  return pairs.length ? { [PAIRS_METADATA_KEY]: pairs.map((p) => p.pair_id) } : {};
}
