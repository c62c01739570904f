/**
 * The tables and columns a stored SQL statement names: what a later question over the same data is
 * most likely to share with it. A tokenizer, not a parser: it must never fail on the SQL dialects
 * answerers write (SQLite, Denodo VQL, Postgres), and a missed identifier only weakens one signal.
 */
export interface SqlIdentifiers {
  /** After FROM or JOIN (and in a FROM list), lower case, without schema or database prefix. */
  tables: string[];
  /** Every other identifier that is not a keyword, an alias or a value, lower case. */
  columns: string[];
}

const KEYWORDS = new Set(
  `select from where and or not in is null like ilike between exists join inner left right full outer cross natural on using
  group by order having limit offset fetch first next rows row only union all intersect except distinct as asc desc case when
  then else end cast count sum avg min max with recursive values insert update delete set into true false over partition
  filter within interval date time timestamp extract substring coalesce nullif lower upper round abs length trim top escape
  collate any some lateral window current_date current_time current_timestamp year month day hour minute second`.split(/\s+/),
);

/** Clauses that end a FROM list. */
const FROM_LIST_ENDS = new Set([
  'where',
  'group',
  'order',
  'having',
  'limit',
  'union',
  'intersect',
  'except',
  'on',
  'using',
  'join',
  'offset',
  'fetch',
  'window',
]);

type Token = { kind: 'word' | 'quoted' | 'string' | 'symbol'; text: string };

// Double quotes delimit identifiers in standard SQL and VQL but strings in SQLite ("JetBlue Airways"):
// a double-quoted token counts as an identifier only where a table name or a dotted name stands.
const TOKEN = /\s+|--[^\n]*|\/\*[\s\S]*?\*\/|'(?:[^']|'')*'|"(?:[^"]|"")*"|`[^`]*`|\[[^\]]*\]|[\p{L}_][\p{L}\p{N}_$]*|\d[\w.]*|[^\s]/gu;

function tokenize(sql: string): Token[] {
  const tokens: Token[] = [];
  for (const [text] of sql.matchAll(TOKEN)) {
    if (/^\s/.test(text) || text.startsWith('--') || text.startsWith('/*')) continue;
    if (text.startsWith("'")) tokens.push({ kind: 'string', text });
    else if (text.startsWith('"')) tokens.push({ kind: 'quoted', text: text.slice(1, -1).replace(/""/g, '"') });
    else if (text.startsWith('`') || text.startsWith('[')) tokens.push({ kind: 'quoted', text: text.slice(1, -1) });
    else if (/^[\p{L}_]/u.test(text)) tokens.push({ kind: 'word', text });
    else tokens.push({ kind: 'symbol', text });
  }
  return tokens;
}

const isWord = (t: Token | undefined, word: string) => t?.kind === 'word' && t.text.toLowerCase() === word;
const isName = (t: Token | undefined) =>
  t !== undefined && (t.kind === 'quoted' || (t.kind === 'word' && !KEYWORDS.has(t.text.toLowerCase())));

/** A possibly dotted name starting at `i` (`db.schema.table`): its last part and the index after it. */
function dottedName(tokens: Token[], i: number): { name: string; next: number } {
  let name = tokens[i]!.text;
  let next = i + 1;
  while (tokens[next]?.text === '.' && isName(tokens[next + 1])) {
    name = tokens[next + 1]!.text;
    next += 2;
  }
  return { name, next };
}

export function sqlIdentifiers(sql: string | null | undefined): SqlIdentifiers {
  if (!sql) return { tables: [], columns: [] };
  const tokens = tokenize(sql);
  const tables = new Set<string>();
  const aliases = new Set<string>();
  const columns = new Set<string>();
  const tableAt = new Set<number>();
  for (let i = 0; i < tokens.length; i++) {
    if (!(isWord(tokens[i], 'from') || isWord(tokens[i], 'join'))) continue;
    let j = i + 1;
    // A FROM list: table [AS] [alias] {, table [AS] [alias]} until a clause starts.
    while (isName(tokens[j])) {
      const { name, next } = dottedName(tokens, j);
      for (let k = j; k < next; k += 2) tableAt.add(k);
      tables.add(name.toLowerCase());
      j = next;
      if (isWord(tokens[j], 'as')) j++;
      if (
        tokens[j]?.kind === 'word' &&
        !KEYWORDS.has(tokens[j]!.text.toLowerCase()) &&
        !FROM_LIST_ENDS.has(tokens[j]!.text.toLowerCase())
      ) {
        aliases.add(tokens[j]!.text.toLowerCase());
        tableAt.add(j);
        j++;
      }
      if (tokens[j]?.text !== ',' || isWord(tokens[i], 'join')) break;
      j++;
    }
  }
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (tableAt.has(i)) continue;
    const dotted = tokens[i - 1]?.text === '.' || tokens[i + 1]?.text === '.';
    if (t.kind === 'quoted' && !dotted) continue;
    if (!isName(t)) continue;
    // A column alias (`count(*) AS total`) is the query's own name, not the data's.
    if (isWord(tokens[i - 1], 'as')) continue;
    // A function call (`strftime(`) names no column.
    if (tokens[i + 1]?.text === '(') continue;
    const name = t.text.toLowerCase();
    if (tokens[i + 1]?.text === '.' || aliases.has(name) || tables.has(name)) continue;
    columns.add(name);
  }
  return { tables: [...tables], columns: [...columns] };
}

/** The last part of a possibly qualified and quoted name, in lower case, as sqlIdentifiers gives a table: `"sales_db"."sales"` → sales. */
export function tableOwnName(table: string): string {
  const names = tokenize(table).filter((t) => t.kind === 'word' || t.kind === 'quoted');
  return (names.at(-1)?.text ?? table).toLowerCase();
}
