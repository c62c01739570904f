import type pg from 'pg';

export interface FetchLimits {
  /** SQL_MAX_ROWS. */
  maxRows: number;
  /** SQL_MAX_CELL_BYTES: a value's text beyond this is cut, with a marker. */
  cellBytes: number;
  /** SQL_MAX_RESULT_BYTES: rows past this many bytes of values are not kept. */
  resultBytes: number;
}

export interface Fetched {
  columns: string[];
  rows: (string | null)[][];
  /** More than maxRows rows. */
  truncated: boolean;
  /** Rows were left out to keep the values under resultBytes. */
  bytesLimited: boolean;
  /** How many values were cut at cellBytes. */
  cellsCut: number;
}

const BOUNDED = 'memorychat_bounded';

/** Every value as Postgres prints it: no Date shifted by the time zone, no numeric rounded. */
const AS_TEXT = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

/**
 * Reads the rows of `statement`, already declared as `cursor`, without ever holding more than a
 * bounded number of bytes: the database itself cuts each value to cellBytes characters (at most four
 * bytes each), and rows are fetched in batches small enough that a batch of cut values stays within a
 * few times resultBytes. A value of 100 MB costs the database its time (statement timeout), never
 * this process its memory: before, the whole value came over and one such result grew the API by GBs.
 * Each value is read as its type's text output (format('%s')), with its full length in bytes to say
 * what was cut; NULL stays NULL (num_nulls, since a row value of NULLs IS NULL but prints as "(,)").
 */
export async function fetchBounded(client: pg.PoolClient, cursor: string, statement: string, limits: FetchLimits): Promise<Fetched> {
  const head = await client.query({ text: `FETCH FORWARD 0 FROM ${cursor}`, rowMode: 'array' });
  const columns = head.fields.map((field) => field.name);
  if (!columns.length) {
    // No values to cut: `SELECT FROM t` only counts rows.
    const result = await client.query({ text: `FETCH FORWARD ${limits.maxRows + 1} FROM ${cursor}`, rowMode: 'array' });
    const rows = result.rows as never[][];
    return { columns, rows: rows.slice(0, limits.maxRows), truncated: rows.length > limits.maxRows, bytesLimited: false, cellsCut: 0 };
  }

  // Positional aliases: the statement's own names may repeat (two `count` columns) or be unusable.
  const aliases = columns.map((_, i) => `c${i + 1}`);
  const values = aliases.map(
    (c) => `left(format('%s', q.${c}), ${limits.cellBytes}), CASE num_nulls(q.${c}) WHEN 0 THEN octet_length(format('%s', q.${c})) END`,
  );
  // On lines of their own: a trailing `-- comment` in the statement would swallow the parenthesis.
  await client.query({
    text: `DECLARE ${BOUNDED} NO SCROLL CURSOR FOR SELECT ${values.join(', ')} FROM (\n${statement}\n) AS q(${aliases.join(', ')})`,
    queryMode: 'extended',
  } as pg.QueryConfig);

  const batch = Math.max(1, Math.floor(limits.resultBytes / (columns.length * limits.cellBytes)));
  const rows: (string | null)[][] = [];
  let bytes = 0;
  let cellsCut = 0;
  for (;;) {
    const wanted = Math.min(batch, limits.maxRows + 1 - rows.length);
    const result = await client.query({ text: `FETCH FORWARD ${wanted} FROM ${BOUNDED}`, rowMode: 'array', types: AS_TEXT });
    for (const raw of result.rows as (string | null)[][]) {
      if (rows.length === limits.maxRows) return { columns, rows, truncated: true, bytesLimited: false, cellsCut };
      const row: (string | null)[] = [];
      let rowBytes = 0;
      let rowCut = 0;
      for (let c = 0; c < columns.length; c++) {
        const length = raw[2 * c + 1];
        if (length === null) {
          row.push(null);
          continue;
        }
        const value = cutValue(raw[2 * c]!, Number(length), limits.cellBytes);
        if (value.cut) rowCut++;
        rowBytes += Buffer.byteLength(value.text);
        row.push(value.text);
      }
      if (bytes + rowBytes > limits.resultBytes) return { columns, rows, truncated: false, bytesLimited: true, cellsCut };
      bytes += rowBytes;
      cellsCut += rowCut;
      rows.push(row);
    }
    if (result.rows.length < wanted) return { columns, rows, truncated: false, bytesLimited: false, cellsCut };
  }
}

/** The value whole, or its first `maxBytes` bytes (never half a character) and a marker saying what was cut. */
function cutValue(text: string, totalBytes: number, maxBytes: number): { text: string; cut: boolean } {
  if (totalBytes <= maxBytes) return { text, cut: false };
  const encoded = Buffer.from(text);
  let end = Math.min(maxBytes, encoded.length);
  // Back off continuation bytes (10xxxxxx) so the cut falls between characters.
  while (end > 0 && end < encoded.length && (encoded[end]! & 0xc0) === 0x80) end--;
  return { text: `${encoded.subarray(0, end).toString()}… [cut: ${totalBytes} bytes, the first ${end} kept]`, cut: true };
}
