import { countTokens as countEncodedTokens } from 'gpt-tokenizer';

/**
 * Tokens of `text` sent as text. Stored text may hold special-token strings such as "<|endoftext|>";
 * they are counted as the ordinary text they are, where gpt-tokenizer's default would throw (and a
 * single such turn would break every later context of its user).
 */
export function countTokens(text: string): number {
  return countEncodedTokens(text, { disallowedSpecial: new Set() });
}

/** Cuts text to at most `max` characters, marking the cut. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = Math.max(0, max - 1);
  // Half a surrogate pair is not text: stored it becomes U+FFFD, sent upstream it may not encode.
  if (end > 0 && /[\uD800-\uDBFF]/.test(text.charAt(end - 1))) end -= 1;
  return `${text.slice(0, end).trimEnd()}…`;
}
