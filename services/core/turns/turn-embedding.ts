import type { RecentQuestion } from '../../model/turns.js';
import type { MemoryDeps } from '../deps.js';
import { tablesRead } from '../search-terms/tables-read.js';
import { cutText } from '../text.js';
import { traced } from '../tracing.js';

const ANSWER_CHARS_EMBEDDED = 200;

/** What a turn is found by (docs/design.md §8): question, SQL, the tables it read and a short part of the answer. */
export function embeddedTurnText(turn: { question: string; sqlQuery: string | null; tablesUsed: string[]; answer: string }): string {
  return [
    turn.question,
    turn.sqlQuery ?? '',
    tablesRead(turn.sqlQuery, turn.tablesUsed).join(' '),
    cutText(turn.answer, ANSWER_CHARS_EMBEDDED),
  ]
    .filter(Boolean)
    .join('\n');
}

/**
 * One embedding call for a turn about to be stored (or stored again, corrected): its text for search,
 * then its question (unless its embedding is given) and the recent questions of its session for dedup. A failed call is not a failed
 * write: the turn is stored without a vector and unmarked, the reply says so in a warning, and the
 * re-embedding job gives it a vector later. Used by /memoryChat, the turns API and turn corrections.
 */
export async function embedWithDedup(
  deps: Pick<MemoryDeps, 'embedder' | 'settings' | 'log'>,
  turn: { text: string; question: string; questionEmbedding?: number[] },
  recent: RecentQuestion[],
  failure: { warnings: string[]; subject: 'this turn' | 'the corrected turn' },
): Promise<{ embedding: number[] | null; duplicateOf: number | null }> {
  try {
    const known = turn.questionEmbedding;
    const texts = recent.length ? [...(known ? [] : [turn.question]), ...recent.map((r) => r.question)] : [];
    const vectors = await traced('embedding', { 'memorychat.embedding_model': deps.embedder.modelId }, () =>
      deps.embedder.embed([turn.text, ...texts]),
    );
    const questions = recent.length && known ? [known, ...vectors.slice(1)] : vectors.slice(1);
    return { embedding: vectors[0] ?? null, duplicateOf: nearDuplicate(questions, recent, deps.settings.dedupSimilarity) };
  } catch (err) {
    deps.log.warn({ err }, `embedding ${failure.subject} failed; storing it without an embedding`);
    failure.warnings.push(`${failure.subject} was stored without an embedding: search will not find it until it is re-embedded`);
    return { embedding: null, duplicateOf: null };
  }
}

/**
 * Semantic dedup (docs/design.md §6): the original (never another duplicate) of the most similar recent
 * question at or above the threshold. `vectors` are the new question's embedding followed by those of
 * the session's recent questions, in the order of `recent`.
 */
function nearDuplicate(vectors: (number[] | null)[], recent: RecentQuestion[], threshold: number): number | null {
  const [question, ...others] = vectors;
  if (!question) return null;
  let best: { similarity: number; turn: RecentQuestion } | undefined;
  others.forEach((vector, i) => {
    const turn = recent[i];
    if (!vector || !turn) return;
    const similarity = vector.reduce((sum, v, j) => sum + v * (question[j] ?? 0), 0);
    if (similarity >= threshold && (!best || similarity > best.similarity)) best = { similarity, turn };
  });
  return best ? (best.turn.duplicate_of ?? best.turn.turn_number) : null;
}
