import { describe, expect, it } from 'vitest';
import { limitStoredResult } from '../../../services/core/stored-bounds.js';

const oldForm = (n: number) =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`Row ${i + 1}`, [{ columnName: 'n', value: i + 1 }]]));
const NO_CAP = 1_000_000;

describe('limitStoredResult', () => {
  it('when a result is within both limits, then it is kept as it came', () => {
    const result = oldForm(3);
    expect(limitStoredResult(result, { maxRows: 3, maxBytes: NO_CAP })).toEqual({ result });
    expect(limitStoredResult(null, { maxRows: 0, maxBytes: 1024 })).toEqual({ result: null });
  });

  it('when the old form has more rows than allowed, then the first rows are kept, in row order', () => {
    const { result, truncated } = limitStoredResult(oldForm(12), { maxRows: 10, maxBytes: NO_CAP });
    expect(Object.keys(result as object)).toEqual(Object.keys(oldForm(10)));
    expect(truncated).toEqual({ rows_stored: 10, rows_total: 12 });
  });

  it('when the new form is cut, then its tables and its CSV texts keep the same rows', () => {
    const result = {
      full: oldForm(4),
      full_csv: 'n,note\n1,a\n2,"two\nlines"\n3,c\n4,d\n',
      llm: oldForm(2),
      llm_csv: 'n\n1\n2\n',
    };
    expect(limitStoredResult(result, { maxRows: 2, maxBytes: NO_CAP })).toEqual({
      result: { full: oldForm(2), full_csv: 'n,note\n1,a\n2,"two\nlines"\n', llm: oldForm(2), llm_csv: 'n\n1\n2\n' },
      truncated: { rows_stored: 2, rows_total: 4 },
    });
  });

  it('when a list of rows is over the byte cap, then the most rows that fit are kept', () => {
    const rows = Array.from({ length: 100 }, (_, i) => ({ id: i, text: 'x'.repeat(100) }));
    const { result, truncated } = limitStoredResult(rows, { maxRows: 1000, maxBytes: 2048 });
    const kept = result as unknown[];
    expect(Buffer.byteLength(JSON.stringify(kept))).toBeLessThanOrEqual(2048);
    expect(Buffer.byteLength(JSON.stringify(rows.slice(0, kept.length + 1)))).toBeGreaterThan(2048);
    expect(truncated).toEqual({ rows_stored: kept.length, rows_total: 100 });
  });

  it('when rows are limited to 0, then no result is stored and the cut is recorded', () => {
    expect(limitStoredResult(oldForm(3), { maxRows: 0, maxBytes: NO_CAP })).toEqual({
      result: null,
      truncated: { rows_stored: 0, rows_total: 3 },
    });
  });

  it('when a result that is not a table is over the byte cap, then nothing of it is stored', () => {
    expect(limitStoredResult('e'.repeat(5000), { maxRows: 10, maxBytes: 1024 })).toEqual({
      result: null,
      truncated: { rows_stored: 0, rows_total: null },
    });
  });

  it('when cells are hundreds of megabytes in all, then the result is cut without serialising it whole (no RangeError)', () => {
    // One 100 MB string shared by six cells: 600 MB as JSON, past V8's longest string.
    const cell = 'x'.repeat(100_000_000);
    const rows = Array.from({ length: 6 }, (_, i) => ({ id: i, text: cell }));
    const limits = { maxRows: 1000, maxBytes: 1_048_576 };
    const started = performance.now();
    expect(limitStoredResult(rows, limits)).toEqual({ result: null, truncated: { rows_stored: 0, rows_total: 6 } });
    expect(limitStoredResult({ 'Row 1': [{ columnName: 'x', value: cell }], 'Row 2': [{ columnName: 'x', value: cell }] }, limits)).toEqual(
      {
        result: null,
        truncated: { rows_stored: 0, rows_total: 2 },
      },
    );
    const small = { id: 9, text: 'small' };
    expect(limitStoredResult([small, ...rows], limits)).toEqual({ result: [small], truncated: { rows_stored: 1, rows_total: 7 } });
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
