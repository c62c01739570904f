/*
 * The bounds of what a turn and a /memoryChat reply may hold, in one place because the reply is cut
 * as the turn is stored (chat/reply-bounds.ts, turns/storable-turn.ts): a value's size as JSON and its
 * nesting, measured without serialising it; text cut to a number of UTF-8 bytes with a marker; text
 * and JSON that Postgres can keep (no NUL, no lone surrogate); table names and token counts of a sane size.
 */

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

/**
 * The size of `value` as JSON in UTF-8 bytes, or `Infinity` as soon as it is known to be over `max`.
 * It walks the value instead of calling JSON.stringify on the whole of it: a hostile answer (a
 * 100 MB cell, five of them) would make that string hundreds of megabytes, or throw RangeError past
 * V8's longest string, only to learn that it is too large. The work done is bounded by `max`.
 */
export function jsonBytesWithin(value: unknown, max: number): number {
  let total = 0;
  const pending: unknown[] = [value];
  while (pending.length) {
    const current = pending.pop();
    total += shallowBytes(current, max - total, pending);
    if (total > max) return Number.POSITIVE_INFINITY;
  }
  return total;
}

/** The bytes `value` adds by itself (punctuation, keys, scalars); its children are pushed to `pending`. */
function shallowBytes(value: unknown, room: number, pending: unknown[]): number {
  switch (typeof value) {
    case 'string':
      // Every character takes at least one byte: a string longer than the room is over without encoding it.
      return value.length > room ? Number.POSITIVE_INFINITY : Buffer.byteLength(JSON.stringify(value));
    case 'number':
    case 'boolean':
    case 'bigint':
      return String(value).length;
    case 'object': {
      if (value === null) return 4;
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') {
        return shallowBytes((value as { toJSON(): unknown }).toJSON(), room, pending);
      }
      if (Array.isArray(value)) {
        for (const item of value) pending.push(item === undefined || typeof item === 'function' ? null : item);
        return 2 + Math.max(0, value.length - 1);
      }
      let bytes = 2;
      let members = 0;
      for (const [key, item] of Object.entries(value)) {
        if (item === undefined || typeof item === 'function') continue;
        bytes += (members++ ? 1 : 0) + (key.length > room ? Number.POSITIVE_INFINITY : Buffer.byteLength(JSON.stringify(key))) + 1;
        if (bytes > room) return Number.POSITIVE_INFINITY;
        pending.push(item);
      }
      return bytes;
    }
    default:
      return 0;
  }
}

/**
 * Whether `value` nests arrays and objects deeper than `maxDepth` levels. Deeper values are refused
 * rather than stored: serialising them (JSON.stringify, the masker, Postgres's jsonb input) recurses
 * once per level and fails past the stack, as a 500 after the answer was already paid for.
 */
export function nestedDeeperThan(value: unknown, maxDepth: number): boolean {
  // Level by level, queueing containers only: an answer's thousands of scalar cells allocate nothing.
  let level: object[] = isContainer(value) ? [value] : [];
  for (let depth = 0; level.length; depth++) {
    if (depth >= maxDepth) return true;
    const next: object[] = [];
    for (const container of level) {
      for (const item of Array.isArray(container) ? container : Object.values(container)) if (isContainer(item)) next.push(item);
    }
    level = next;
  }
  return false;
}

function isContainer(value: unknown): value is object {
  return value !== null && typeof value === 'object';
}

/** The first table names whose UTF-8 bytes together fit in `maxBytes`. */
export function tablesWithin(tables: string[], maxBytes: number): string[] {
  let bytes = 0;
  const kept: string[] = [];
  for (const table of tables) {
    bytes += table.length > maxBytes ? Number.POSITIVE_INFINITY : Buffer.byteLength(table) + 3;
    if (bytes > maxBytes) break;
    kept.push(table);
  }
  return kept;
}

/** Token counts are a few numbers; anything larger is not stored with the turn's accounting. */
const MAX_TOKENS_BYTES = 4096;

/** An answer's token counts for the turn's accounting, when they are of a sane size; else null. */
export function storableTokenCounts(tokens: unknown): unknown {
  return tokens !== undefined && jsonBytesWithin(tokens, MAX_TOKENS_BYTES) <= MAX_TOKENS_BYTES ? tokens : null;
}
