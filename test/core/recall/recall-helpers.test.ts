import { describe, expect, it } from 'vitest';
import { relativeTime } from '../../../services/core/context/relative-time.js';
import { executionResultToCsv } from '../../../services/core/recall/result-csv.js';
import { questionKeywords } from '../../../services/core/recall/turn-refs.js';

describe('relativeTime', () => {
  const now = new Date('2025-01-10T12:00:00Z');
  const ago = (ms: number) => relativeTime(new Date(now.getTime() - ms), now);
  it('when times are seconds to years back, then they read like a person says them', () => {
    expect([
      ago(10_000),
      ago(60_000),
      ago(150_000),
      ago(3_600_000),
      ago(5 * 3_600_000),
      ago(86_400_000),
      ago(3 * 86_400_000),
      ago(400 * 86_400_000),
    ]).toEqual(['just now', '1 min ago', '2 mins ago', '1 hour ago', '5 hours ago', '1 day ago', '3 days ago', '1 year ago']);
  });
});

describe('executionResultToCsv', () => {
  it('when rows are out of order and a value is null, then rows are numbered-ordered and null is empty', () => {
    const csv = executionResultToCsv({
      'Row 10': [{ columnName: 'n', value: 10 }],
      'Row 2': [
        { columnName: 'n', value: null },
        { columnName: 'ok', value: true },
      ],
    });
    expect(csv).toBe('n,ok\n,true\n10,\n');
  });
  it('when only full_csv is stored, then it is returned as is; an error text gives nothing', () => {
    expect(executionResultToCsv({ full_csv: 'a,b\n1,2' })).toBe('a,b\n1,2\n');
    expect(executionResultToCsv('Error: view not found')).toBeUndefined();
    expect(executionResultToCsv(null)).toBeUndefined();
  });
});

describe('questionKeywords', () => {
  it('when the request is a phrase, then filler words are dropped', () => {
    expect(questionKeywords('Show SQL for the Android question')).toEqual(['android']);
    expect(questionKeywords('the')).toEqual(['the']);
  });
});
