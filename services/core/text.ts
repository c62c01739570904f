import { hash } from 'node:crypto';
import { countTokens as countEncodedTokens } from 'gpt-tokenizer';

const AS_ORDINARY_TEXT = { disallowedSpecial: new Set<string>() };

/**
 * Tokens of `text` sent as text. Stored text may hold special-token strings such as "<|endoftext|>";
 * they are counted as the ordinary text they are, where gpt-tokenizer's default would throw (and a
 * single such turn would break every later context of its user).
 */
export function countTokens(text: string): number {
  return countEncodedTokens(text, AS_ORDINARY_TEXT);
}

const RECURRING_MAX = 4096;
const recurring = new Map<string, number>();

/**
 * countTokens for text that recurs from request to request: a stored turn as rendered into every
 * later context of its session. Remembered by a digest, never by the text, so no erased user's words
 * stay in the process; an oldest-first bound keeps it small. For estimates only: a context's reported
 * size is always counted on its whole rendering.
 */
export function countRecurringTokens(text: string): number {
  const key = hash('sha1', text, 'base64');
  let tokens = recurring.get(key);
  if (tokens === undefined) {
    tokens = countTokens(text);
    if (recurring.size >= RECURRING_MAX) recurring.delete(recurring.keys().next().value!);
    recurring.set(key, tokens);
  }
  return tokens;
}

/**
 * Where o200k's split pattern always ends a piece: after the last line break before a character that
 * is neither white space nor "/". No piece runs on past a line break except white space, more breaks
 * and "/" (its punctuation-then-breaks alternative), and none starts with a break and goes on with
 * something else, so byte-pair merges never cross this point and the pieces' counts add up exactly.
 */
const PIECE_BOUNDARY = /\n(?=[^\s/])/g;

/**
 * countTokens for a text made of lines that recur from request to request (a rendered memory block):
 * the same exact count, as the sum of its lines' remembered counts (countRecurringTokens), so only the
 * lines new to this process are tokenised; with `seen`, lines counted earlier in the same request are
 * not even digested again.
 */
export function countTokensByLine(text: string, seen?: Map<string, number>): number {
  const count = seen ? (piece: string) => countSeenTokens(piece, seen) : countRecurringTokens;
  let total = 0;
  let start = 0;
  for (const boundary of text.matchAll(PIECE_BOUNDARY)) {
    const end = boundary.index + 1;
    total += count(text.slice(start, end));
    start = end;
  }
  return start === 0 ? count(text) : total + count(text.slice(start));
}

/**
 * countRecurringTokens through `seen`, a map that lives as long as one request's work: a context
 * counts each of its items' lines to pack it, then the same lines again in its rendering, and a
 * lookup by the text costs less than its digest. The text is a key only while the request runs.
 */
function countSeenTokens(piece: string, seen: Map<string, number>): number {
  let tokens = seen.get(piece);
  if (tokens === undefined) {
    tokens = countRecurringTokens(piece);
    seen.set(piece, tokens);
  }
  return tokens;
}

/** Cuts text to at most `max` characters, marking the cut. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max - 1);
  // Half a surrogate pair is not text: stored it becomes U+FFFD, sent upstream it may not encode.
  if (end > 0 && /[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end -= 1;
  return `${text.slice(0, end).trimEnd()}…`;
}
