/**
 * Spreadsheet formula injection (OWASP "CSV Injection"): a cell starting with `=`, `+`, `-`, `@`, tab
 * or carriage return is read as a formula by Excel, LibreOffice and Sheets (`=HYPERLINK(…)`,
 * `=cmd|' /C calc'!A0`), so such a cell is written with a leading `'`, which spreadsheets show as text.
 * Negative numbers stay numbers: a cell that is a JSON number, or whose text is a plain decimal
 * (`-12`, `-0.5`, `-1e3`, nothing else), cannot hold a formula and is written as it is.
 */
const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_DECIMAL = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;

export function neutraliseCell(text: string): string {
  return FORMULA_START.test(text) && !PLAIN_DECIMAL.test(text) ? `'${text}` : text;
}

/**
 * The cells of an RFC 4180 CSV text (comma-separated, `"` quoted, CRLF or LF rows), for a CSV the
 * answerer sent ready-made (`full_csv`), whose cells must be neutralised like ours before we serve it.
 */
export function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c !== '"') cell += c;
      else if (text[i + 1] === '"') {
        cell += '"';
        i++;
      } else quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\n' || (c === '\r' && text[i + 1] === '\n')) {
      if (c === '\r') i++;
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
    } else cell += c;
  }
  if (cell !== '' || row.length) rows.push([...row, cell]);
  return rows;
}
