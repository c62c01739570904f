const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Why Postgres cannot keep `text` as sent, if it cannot: text and jsonb hold no U+0000, and a lone
 * UTF-16 surrogate is not Unicode (the driver would store U+FFFD, so two different values would
 * become one; jsonb refuses it).
 */
export function storableTextProblem(text: string): string | undefined {
  if (text.includes('\u0000')) return 'contains a NUL character (U+0000), which cannot be stored';
  if (LONE_SURROGATE.test(text)) return 'contains a lone UTF-16 surrogate, which is not Unicode text';
  return undefined;
}
