import type { TurnRef } from '../../model/turns.js';

export const TURN_REF_PATTERN = '^([1-9][0-9]{0,8}|first|last|previous)$';

export function parseTurnRef(ref: string): TurnRef {
  return /^\d+$/.test(ref) ? { number: Number(ref) } : { position: ref as 'first' | 'last' | 'previous' };
}

// Words that describe the request rather than the question being looked for.
const STOPWORDS = new Set(
  'a an and about for from in is of on or the that this to with me my show sql query question questions asked ask we i you one'.split(' '),
);

/**
 * The keywords of "show SQL for the Android question" (`q=android`, or the whole phrase): words
 * of two or more characters that are not request filler. Every keyword must occur in the question.
 */
export function questionKeywords(q: string): string[] {
  const words =
    q
      .normalize('NFKC')
      .toLowerCase()
      .match(/[\p{L}\p{M}\p{N}_]+/gu) ?? [];
  const kept = words.filter((w) => w.length >= 2 && !STOPWORDS.has(w));
  return [...new Set(kept.length ? kept : words)];
}

/** An ILIKE pattern matching `word` literally anywhere. */
export function containsPattern(word: string): string {
  return `%${word.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
