const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
// NUL and lone surrogates, to replace; NUL is built with fromCharCode since the linter refuses it in a regex literal.
const UNSTORABLE = new RegExp(`[${String.fromCharCode(0)}]|${LONE_SURROGATE.source}`, 'g');

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

/**
 * `text` cut to at most `maxBytes` UTF-8 bytes, the marker included, at a character boundary, with a
 * marker at its end saying how much was kept; undefined when it fits. The marker is plain text so
 * that whoever reads the stored turn (a person, the LLM given it as memory, an export) sees the cut.
 */
export function cutText(text: string, maxBytes: number): { text: string; totalBytes: number } | undefined {
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most texts need no encoding to know that they fit.
  if (text.length * 3 <= maxBytes) return undefined;
  const totalBytes = Buffer.byteLength(text);
  if (totalBytes <= maxBytes) return undefined;
  const marker = (kept: number) => `\n[cut by memorychat: the first ${kept} of ${totalBytes} bytes are stored]`;
  let budget = maxBytes - Buffer.byteLength(marker(maxBytes));
  // Each character is at least one byte, so the first `budget` characters hold the bytes to keep.
  const head = Buffer.from(text.slice(0, budget));
  while (budget > 0 && (head[budget]! & 0xc0) === 0x80) budget--;
  return { text: head.subarray(0, budget).toString('utf8') + marker(budget), totalBytes };
}

/**
 * `value` (an answerer's reply, parsed JSON) with each NUL and lone surrogate in its strings and keys
 * replaced by U+FFFD. A client's request with them is refused (input-guard.ts), but an answer is not the
 * client's to fix: stored as it came, text and jsonb columns refuse it and the turn, and every retry
 * of it, would fail with 503. Unchanged parts are returned as they are, not copied.
 */
export function storableJson<T>(value: T): T {
  if (typeof value === 'string') return (storableTextProblem(value) ? value.replace(UNSTORABLE, '\uFFFD') : value) as T;
  if (Array.isArray(value)) {
    const items = value.map(storableJson);
    return (items.some((item, i) => item !== value[i]) ? items : value) as T;
  }
  if (value === null || typeof value !== 'object') return value;
  let changed = false;
  const entries = Object.entries(value).map(([key, item]) => {
    const entry = [storableJson(key), storableJson(item)] as const;
    changed ||= entry[0] !== key || entry[1] !== item;
    return entry;
  });
  return changed ? (Object.fromEntries(entries) as T) : value;
}
