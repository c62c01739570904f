import { type Param, type SqlFragment, sql } from '../sql.js';

/**
 * Similar turns are ranked twice, by cosine distance and by lexical match, and the two rankings fused
 * by reciprocal rank (each list's top FUSED_LIST_DEPTH; score = sum of 1 / (60 + rank)), as hybrid
 * search does (Cormack et al. 2009; Zep, Elasticsearch): ranks, unlike scores, compare across signals
 * and languages, where one absolute cosine floor does not. Used by /memoryChat's retrieval and by
 * /memory/search.
 */
export const FUSED_LIST_DEPTH = 20;
const RRF_RANK_CONSTANT = 60;

/**
 * A turn's lexical match with the question's terms (services/core/memory/lexical-terms.ts), over
 * turns aliased `t`: ts_rank of its weighted terms, scaled by the share of the turn's table terms
 * (weight A) that the question names, so a turn over exactly the tables a question names beats one
 * that also read others. 0 when nothing matches or its terms are not computed yet.
 */
export function lexicalMatch(query: Param, queryTerms: Param): SqlFragment {
  const tables = sql`ts_filter(t.search_terms, '{a}')`;
  const named = sql`((length(${tables}) - length(ts_delete(${tables}, ${queryTerms}::text[])))::float8 / greatest(length(${tables}), 1))`;
  // Ranked only where a term matches: most of a user's turns share no term with a question, and
  // ranking them (ts_rank, ts_filter, ts_delete) cost more than their inner product.
  return sql`CASE WHEN t.search_terms @@ ${query}::tsquery THEN ts_rank(t.search_terms, ${query}::tsquery) * (1 + ${named}) / 2 ELSE 0 END`;
}

/**
 * The CTEs `ranked` and `fused`, over a CTE `scored` of turns with `session_id`, `turn_number`,
 * `search_terms`, `distance` (1 - cosine) and `lexical` (lexicalMatch): the `depth` nearest and the
 * `depth` best lexical matches, one row per turn with its fused `score`, and `usable` when its cosine
 * reaches `minSimilarity` or it matches lexically (a lexical match passes the floor).
 *
 * A turn whose question has exactly the question's terms (the same question asked again, in another
 * session, whatever its punctuation, case or word order) scores 1 more, above any fused sum (at most
 * 2 / 61): its stored vector also holds its SQL and answer, and turns reading more of the tables
 * the question names outrank it lexically, so both lists may rank it below others; but no turn
 * tells the answerer more about this question than that one.
 */
export function fusedRanking(depth: Param, minSimilarity: number, queryTerms: Param): SqlFragment {
  return sql`ranked AS (
       SELECT *, row_number() OVER (ORDER BY distance) AS r, 1 - distance >= ${minSimilarity} OR lexical > 0 AS eligible
       FROM (SELECT * FROM scored ORDER BY distance LIMIT ${depth}) nearest
       UNION ALL
       SELECT *, row_number() OVER (ORDER BY lexical DESC, distance) AS r, true AS eligible
       FROM (SELECT * FROM scored WHERE lexical > 0 ORDER BY lexical DESC, distance LIMIT ${depth}) matching
     ), fused AS (
       -- Carried through rather than joined back to turns: without statistics the planner would not
       -- use the primary key for that join.
       SELECT DISTINCT ON (session_id, turn_number) *,
              sum(1.0 / (${RRF_RANK_CONSTANT} + r)) OVER turn
                + CASE WHEN lexical > 0 AND strip(ts_filter(search_terms, '{c}')) = array_to_tsvector(${queryTerms}::text[]) THEN 1 ELSE 0 END AS score,
              bool_or(eligible) OVER turn AS usable
       FROM ranked
       WINDOW turn AS (PARTITION BY session_id, turn_number)
       ORDER BY session_id, turn_number
     )`;
}
