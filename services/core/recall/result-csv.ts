import { stringify } from 'csv-stringify/sync';
import { neutraliseCell, parseCsv } from './csv-cells.js';

/**
 * CSV from a stored Denodo `execution_result` (docs/design.md §5 forms): the old `{"Row 1": [{columnName,
 * value}, …]}`, the new `{full, full_csv, llm, llm_csv}` (the full rows win over the LLM's sample),
 * or a plain list of row objects. Undefined when the result holds no rows (an error text, null).
 * Every cell, column names and a ready-made CSV's included, is neutralised against formulas (csv-cells.ts).
 */
export function executionResultToCsv(result: unknown): string | undefined {
  const table = tableOf(result);
  if (table) {
    // The header is written as a row of its own: csv-stringify's `columns` refuses an empty column name.
    return stringify([table.columns, ...table.rows], {
      cast: { boolean: String, string: neutraliseCell, object: (v) => neutraliseCell(JSON.stringify(v)) },
    });
  }
  if (isObject(result)) {
    for (const key of ['full_csv', 'llm_csv']) {
      const csv = result[key];
      if (typeof csv === 'string' && csv.trim()) return stringify(parseCsv(csv).map((row) => row.map(neutraliseCell)));
    }
  }
  return undefined;
}

interface Table {
  columns: string[];
  rows: unknown[][];
}

function tableOf(result: unknown): Table | undefined {
  if (typeof result === 'string') {
    try {
      return tableOf(JSON.parse(result));
    } catch {
      return undefined;
    }
  }
  if (Array.isArray(result)) return recordsTable(result.filter(isObject).map((r) => new Map(Object.entries(r))));
  if (!isObject(result)) return undefined;
  if ('full' in result || 'llm' in result) return tableOf(result.full) ?? tableOf(result.llm);
  const rowKeys = Object.keys(result).filter((k) => /^Row \d+$/.test(k));
  if (!rowKeys.length) return undefined;
  rowKeys.sort((a, b) => Number(a.slice(4)) - Number(b.slice(4)));
  return recordsTable(rowKeys.map((k) => cellsAsRecord(result[k])));
}

/**
 * `[{columnName, value}, …]` → column → value, in the answerer's column order (a Map: an object would
 * put integer-like names such as `2023` first).
 */
function cellsAsRecord(cells: unknown): Map<string, unknown> {
  const record = new Map<string, unknown>();
  if (Array.isArray(cells)) {
    for (const cell of cells) {
      if (isObject(cell) && typeof cell.columnName === 'string') record.set(cell.columnName, cell.value);
    }
  }
  return record;
}

function recordsTable(records: Map<string, unknown>[]): Table | undefined {
  if (!records.length) return undefined;
  const columns = [...new Set(records.flatMap((r) => [...r.keys()]))];
  return { columns, rows: records.map((r) => columns.map((c) => r.get(c) ?? null)) };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
