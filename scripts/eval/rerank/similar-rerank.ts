// A rerank of the similar turns retrieval finds, by how the question names their tables and what
// SQL it asks for: measured on the eval's first questions (fit.ts), and not taken into the service,
// since no weights fitted on one half of SParC's databases won on the other half and on the Chinese
// set alike (docs/design.md, "Retrieval").

import { names, questionStems } from '../../../services/core/context/table-links.js';
import { sqlIdentifiers } from '../../../services/core/search-terms/sql-identifiers.js';

/** A similar turn as the retrieval statement found it, with what the rerank reads of it. */
export interface RerankCandidate {
  question: string;
  sql_query: string | null;
  tables_used: string[];
  created_at: Date;
  /** The statement's fused score: reciprocal-rank sum, plus 1 for the same question asked before (hybrid-rank.ts). */
  score: number;
  /** The turn's set of tables (dialogues.ts, tableSetKey): the answerer gets the best turn of each set first. */
  tables: string;
  /** The candidate's session and its place there: 1 for the session's first (standalone) question. */
  session_id?: string;
  turn_number?: number;
}

/** What the rerank weighs of one candidate, each in [0, 1]. */
export interface RerankFeatures {
  /** The fused score's reciprocal-rank part, scaled so a turn first in both lists is 1. */
  fused: number;
  /**
   * Of the candidates' tables that the question names (tableNamed), the share this candidate reads:
   * a turn over a neighbouring set of tables misses one the question names.
   */
  namedRead: number;
  /** Of the candidate's tables, the share the question does not name (0 when it names none of any candidate). */
  unnamedRead: number;
  /** Of the question's words, the share that name one of the candidate's columns. */
  columnsNamed: number;
  /** Of the SQL shapes the question asks for or not (SHAPES), the share the candidate's SQL agrees with. */
  shapeAgreement: number;
  /** 1 for the newest candidate down to 0 for the oldest. */
  recency: number;
}

export type RerankWeights = Record<keyof RerankFeatures, number>;

/** A reciprocal-rank sum at most 2 / 61 (first in both lists); hybrid-rank.ts's RRF constant is 60. */
const MAX_FUSED = 2 / 61;
/** Above any linear score of features in [0, 1] under the weights fit.ts tries. */
const SAME_QUESTION = 1000;

/**
 * The shapes of SQL a question's words ask for, in English and Chinese (the languages of the eval
 * sets): whether the question asks for one and whether a statement has it are compared, not how.
 */
const SHAPES: { asks: RegExp; has: RegExp }[] = [
  { asks: /\b(how many|number of|count)\b|多少|几/i, has: /\bcount\s*\(/i },
  { asks: /\b(average|mean)\b|平均/i, has: /\bavg\s*\(/i },
  { asks: /\b(total|sum)\b|总/i, has: /\bsum\s*\(/i },
  { asks: /\b(most|least|\w+est|top|maximum|minimum)\b|最/i, has: /\b(max|min)\s*\(|\border\s+by\b[\s\S]*\blimit\b/i },
  { asks: /\b(each|per|every)\b|每|各/i, has: /\bgroup\s+by\b/i },
  { asks: /\b(not|never|without|no)\b|不|没/i, has: /\bnot\b|\bexcept\b|!=|<>/i },
];

/** The features of each candidate against the question (same order). */
export function rerankFeatures(question: string, candidates: readonly RerankCandidate[]): RerankFeatures[] {
  const stems = questionStems(question);
  const read = candidates.map((c) => {
    const ids = sqlIdentifiers(c.sql_query);
    return { tables: [...new Set([...ids.tables, ...c.tables_used.map((t) => t.toLowerCase())])], columns: ids.columns };
  });
  const named = new Set(read.flatMap((r) => r.tables.filter((t) => names(stems, t))));
  const asked = SHAPES.map((s) => s.asks.test(question));
  const times = candidates.map((c) => c.created_at.getTime());
  const oldest = Math.min(...times);
  const span = Math.max(...times) - oldest;
  return candidates.map((c, i) => {
    const { tables, columns } = read[i]!;
    return {
      fused: Math.min(c.score % 1, MAX_FUSED) / MAX_FUSED,
      namedRead: named.size ? tables.filter((t) => named.has(t)).length / named.size : 0,
      unnamedRead: named.size && tables.length ? tables.filter((t) => !named.has(t)).length / tables.length : 0,
      columnsNamed: stems.length ? stems.filter((s) => columns.some((col) => names([s], col))).length / stems.length : 0,
      shapeAgreement: SHAPES.filter((s, j) => s.has.test(c.sql_query ?? '') === asked[j]).length / SHAPES.length,
      recency: span > 0 ? (times[i]! - oldest) / span : 1,
    };
  });
}

/**
 * The similar turns the answerer gets, best first: each candidate scored by `weights` over its
 * features (the same question asked before stays first), the best of each set of tables first as
 * the statement keeps them, cut to `k`.
 */
export function rerankSimilar<T extends RerankCandidate>(
  question: string,
  candidates: readonly T[],
  k: number,
  weights: RerankWeights,
): T[] {
  const features = rerankFeatures(question, candidates);
  return rerankByScore(
    candidates,
    features.map((f) => linearScore(f, weights)),
    k,
  );
}

/** The candidates by `scores` (same order; the same question asked before stays first), the best of each set of tables first, cut to `k`. */
export function rerankByScore<T extends RerankCandidate>(candidates: readonly T[], scores: readonly number[], k: number): T[] {
  const scored = candidates.map((turn, i) => ({
    turn,
    score: (turn.score >= 1 ? SAME_QUESTION : 0) + scores[i]!,
    at: i,
  }));
  // Ties keep the statement's order.
  const byScore = (a: (typeof scored)[number], b: (typeof scored)[number]) => b.score - a.score || a.at - b.at;
  scored.sort(byScore);
  const perSet = new Map<string, number>();
  const nth = new Map(
    scored.map((s) => {
      const n = (perSet.get(s.turn.tables) ?? 0) + 1;
      perSet.set(s.turn.tables, n);
      return [s, n];
    }),
  );
  return scored
    .sort((a, b) => nth.get(a)! - nth.get(b)! || byScore(a, b))
    .slice(0, k)
    .sort(byScore)
    .map((s) => s.turn);
}

function linearScore(f: RerankFeatures, w: RerankWeights): number {
  let sum = 0;
  for (const name of Object.keys(w) as (keyof RerankFeatures)[]) sum += w[name] * f[name];
  return sum;
}

/** The service's order: the fused score alone. */
export const TODAY: RerankWeights = { fused: 1, namedRead: 0, unnamedRead: 0, columnsNamed: 0, shapeAgreement: 0, recency: 0 };
