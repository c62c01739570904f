import type { ResultLimits } from '../deps.js';
import { jsonBytesWithin } from '../stored-bounds.js';

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
 * the cap (stored-bounds.ts), so a result of hundreds of megabytes costs no more than one of the cap.
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
