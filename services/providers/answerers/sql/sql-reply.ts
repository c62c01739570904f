import type { Execution } from './sql-execution.js';
import type { Generated } from './sql-generation.js';

/** Rows quoted in the answer text; `execution_result` holds up to SQL_MAX_ROWS. */
const ROWS_IN_ANSWER = 10;

/**
 * The answer for the user, written from the database's own values rather than by a second LLM call:
 * the explanation and the first rows, or what went wrong in words a user can act on.
 */
export function answerText(
  generated: Generated,
  execution: Execution | undefined,
  options: { maxRows: number; cellBytes: number; resultBytes: number; database: { statementTimeoutMs: number } },
): string {
  if (generated.kind === 'clarification') return generated.question;
  if (!execution) return generated.explanation;
  if (!execution.ok) {
    if (execution.kind === 'refused') {
      return `The database refused this query: only reading data is allowed here. (${execution.message})`;
    }
    if (execution.kind === 'timeout') {
      return (
        `The query ran longer than ${options.database.statementTimeoutMs} ms and the database cancelled it. ` +
        'Try a narrower question (a shorter period, fewer groups).'
      );
    }
    if (execution.kind === 'cancelled') return 'The query was cancelled: the request that asked it was abandoned.';
    return `The query failed and could not be corrected: ${execution.message}`;
  }
  if (!execution.rows.length) return `${generated.explanation}\n\nThe query returned no rows.`;
  const shown = execution.rows.slice(0, ROWS_IN_ANSWER);
  const more = execution.truncated
    ? `\n\nShowing ${shown.length} rows; the result has more than ${options.maxRows}.`
    : execution.bytesLimited
      ? `\n\nShowing ${shown.length} of the first ${execution.rows.length} rows; the rest of the result was left out at ${options.resultBytes} bytes.`
      : execution.rows.length > shown.length
        ? `\n\nShowing ${shown.length} of ${execution.rows.length} rows.`
        : '';
  const cut = execution.cellsCut
    ? `\n\n${execution.cellsCut} ${execution.cellsCut === 1 ? 'value was' : 'values were'} longer than ${options.cellBytes} bytes and cut ("… [cut: …]").`
    : '';
  return `${generated.explanation}\n\n${markdownTable(execution.columns, shown)}${more}${cut}`;
}

/** Denodo's `{"Row 1": [{columnName, value}, …]}` form, which CSV export and SQL recall already read. */
export function executionResult(execution: Extract<Execution, { ok: true }>): Record<string, unknown> {
  return Object.fromEntries(
    execution.rows.map((row, i) => [`Row ${i + 1}`, execution.columns.map((columnName, c) => ({ columnName, value: row[c] ?? null }))]),
  );
}

function markdownTable(columns: string[], rows: (string | null)[][]): string {
  const cell = (value: string | null) => (value ?? 'NULL').replace(/\|/g, '\\|').replace(/\s+/g, ' ');
  return [
    `| ${columns.map(cell).join(' | ')} |`,
    `| ${columns.map(() => '---').join(' | ')} |`,
    ...rows.map((row) => `| ${row.map(cell).join(' | ')} |`),
  ].join('\n');
}
