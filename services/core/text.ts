import { countTokens } from 'gpt-tokenizer';

export { countTokens };

/** Cuts text to at most `max` characters, marking the cut. */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  return `${text.slice(0, Math.max(0, max - 1)).trimEnd()}…`;
}
