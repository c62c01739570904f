import { type Param, type SqlFragment, sql } from '../sql.js';

/**
 * Similar turns are ranked twice, by cosine distance and by lexical match, and the two rankings fused
 * by reciprocal rank (each list's top FUSED_LIST_DEPTH; score = sum of 1 / (60 + rank)), as hybrid
 * search does (Cormack et al. 2009; Zep, Elasticsearch): ranks, unlike scores, compare across signals
 * and languages, where one absolute cosine floor does not. Used by /memoryChat's retrieval and by
 * /memory/search.
 */
export const FUSED_LIST_DEPTH = 20;
export const RRF_RANK_CONSTANT = 60;

/**
 * A turn's lexical match with the question's terms (services/core/memory/lexical-terms.ts), over
 * turns aliased `t`: ts_rank of its weighted terms, scaled by the share of the turn's table terms
 * (weight A) that the question names, so a turn over exactly the tables a question names beats one
 * that also read others. 0 when nothing matches or its terms are not computed yet.
 */
export function lexicalMatch(query: Param, queryTerms: Param): SqlFragment {
  const tables = sql`ts_filter(t.search_terms, '{a}')`;
  const named = sql`((length(${tables}) - length(ts_delete(${tables}, ${queryTerms}::text[])))::float8 / greatest(length(${tables}), 1))`;
  return sql`COALESCE(ts_rank(t.search_terms, ${query}::tsquery) * (1 + ${named}) / 2, 0)`;
}
