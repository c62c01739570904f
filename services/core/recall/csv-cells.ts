/**
 * Spreadsheet formula injection (OWASP "CSV Injection"): a cell starting with `=`, `+`, `-`, `@`, tab
 * or carriage return is read as a formula by Excel, LibreOffice and Sheets (`=HYPERLINK(…)`,
 * `=cmd|' /C calc'!A0`), so such a cell is written with a leading `'`, which spreadsheets show as text;
 * invisible characters before the formula (INVISIBLE_LEADING) do not hide it.
 * Negative numbers stay numbers: a cell that is a JSON number, or whose text is a plain decimal
 * (`-12`, `-0.5`, `-1e3`, nothing else), cannot hold a formula and is written as it is.
 */
const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_DECIMAL = /^-?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?$/;
/**
 * Characters a reader drops or does not show before a cell's text: a byte-order mark (a BOM-aware
 * reader takes one at the start of the file as the encoding's and reads the rest of the first cell),
 * zero-width spaces and joiners, the word joiner, and bidirectional marks, embeddings and isolates.
 * The formula test looks past them, as the reader would.
 */
const INVISIBLE_LEADING = /^[\uFEFF\u200B-\u200D\u2060\u200E\u200F\u061C\u202A-\u202E\u2066-\u2069]+/u;

export function neutraliseCell(text: string): string {
  const visible = text.replace(INVISIBLE_LEADING, '');
  return FORMULA_START.test(visible) && !PLAIN_DECIMAL.test(visible) ? `'${text}` : text;
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
