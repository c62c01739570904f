import type { ResultLimits } from './deps.js';

/*
 * The bounds of what a turn and a /memoryChat reply may hold, in one place because the reply is cut
 * as the turn is stored (chat/reply-bounds.ts, turns/storable-turn.ts): a value's size as JSON and its
 * nesting, measured without serialising it; text cut to a number of UTF-8 bytes with a marker; text
 * and JSON that Postgres can keep (no NUL, no lone surrogate); result rows, table names and token counts
 * of a sane size.
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

/** Stored in the turn's metadata as `result_truncated` when rows were cut. */
export interface ResultTruncation {
  rows_stored: number;
  /** Unknown when the result was not a table (only the byte cap applied). */
  rows_total: number | null;
}

/** A result form (docs/design.md §5) as rows that can be counted and cut. */
interface Rows {
  total: number;
  cut(n: number): unknown;
}

/**
 * The result as it may be stored: its first rows, as many as both limits allow, in the form it came in
 * (the old `{"Row 1": …}`, the new `{full, full_csv, llm, llm_csv}`, a list of rows, or JSON text of one).
 * A result that is not a table and is over the byte cap is not stored at all, nor is a table whose
 * first row alone is over it (a huge single cell). Sizes are measured without serialising more than
 * the cap (jsonBytesWithin), so a result of hundreds of megabytes costs no more than one of the cap.
 */
export function limitStoredResult(result: unknown, limits: ResultLimits): { result: unknown; truncated?: ResultTruncation } {
  if (result === null || result === undefined) return { result };
  const rows = rowsOf(result);
  const byteSize = (value: unknown) => jsonBytesWithin(value, limits.maxBytes);
  if (!rows) {
    return byteSize(result) <= limits.maxBytes ? { result } : { result: null, truncated: { rows_stored: 0, rows_total: null } };
  }
  let keep = Math.min(rows.total, limits.maxRows);
  let kept = keep === rows.total ? result : rows.cut(keep);
  if (byteSize(kept) > limits.maxBytes) {
    // The largest number of rows under the cap: sizes grow with rows, so halve the interval.
    let low = 0;
    let high = keep - 1;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if (byteSize(rows.cut(mid)) <= limits.maxBytes) low = mid;
      else high = mid - 1;
    }
    keep = low;
    kept = rows.cut(keep);
    if (byteSize(kept) > limits.maxBytes) return { result: null, truncated: { rows_stored: 0, rows_total: rows.total } };
  }
  if (keep === rows.total) return { result };
  return { result: keep === 0 ? null : kept, truncated: { rows_stored: keep, rows_total: rows.total } };
}

function rowsOf(result: unknown): Rows | undefined {
  if (typeof result === 'string') {
    try {
      return rowsOf(JSON.parse(result));
    } catch {
      return undefined;
    }
  }
  if (Array.isArray(result)) return { total: result.length, cut: (n) => result.slice(0, n) };
  if (!isObject(result)) return undefined;
  if (['full', 'llm', 'full_csv', 'llm_csv'].some((k) => k in result)) return partsOf(result);
  const rowKeys = Object.keys(result)
    .filter((k) => /^Row \d+$/.test(k))
    .sort((a, b) => Number(a.slice(4)) - Number(b.slice(4)));
  if (!rowKeys.length) return undefined;
  return {
    total: rowKeys.length,
    cut: (n) => {
      const dropped = new Set(rowKeys.slice(n));
      return Object.fromEntries(Object.entries(result).filter(([k]) => !dropped.has(k)));
    },
  };
}

/** The new form: each of its tables (rows or CSV text) cut to the same number of rows. */
function partsOf(result: Record<string, unknown>): Rows {
  const parts = new Map<string, Rows>();
  for (const [key, value] of Object.entries(result)) {
    const rows =
      key.endsWith('_csv') && typeof value === 'string' ? csvRows(value) : key === 'full' || key === 'llm' ? rowsOf(value) : undefined;
    if (rows) parts.set(key, rows);
  }
  return {
    total: Math.max(0, ...[...parts.values()].map((p) => p.total)),
    cut: (n) => Object.fromEntries(Object.entries(result).map(([k, v]) => [k, parts.get(k)?.cut(n) ?? v])),
  };
}

/** CSV text as a header and records; a newline inside quotes does not end a record. */
function csvRows(csv: string): Rows {
  const ends: number[] = [];
  let quoted = false;
  for (let i = 0; i < csv.length; i++) {
    const ch = csv[i];
    if (ch === '"') quoted = !quoted;
    else if (ch === '\n' && !quoted) ends.push(i + 1);
  }
  if (ends.at(-1) !== csv.length && csv.length) ends.push(csv.length);
  const records = Math.max(0, ends.length - 1);
  return { total: records, cut: (n) => csv.slice(0, ends[Math.min(n, records)] ?? csv.length) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
