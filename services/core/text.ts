import { createHash } from 'node:crypto';
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
  const key = createHash('sha1').update(text).digest('base64');
  let tokens = recurring.get(key);
  if (tokens === undefined) {
    tokens = countTokens(text);
    if (recurring.size >= RECURRING_MAX) recurring.delete(recurring.keys().next().value!);
    recurring.set(key, tokens);
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
