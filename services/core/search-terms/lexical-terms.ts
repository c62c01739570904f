import { forEachSegment } from '../../model/text-segments.js';

/*
 * The lexical side of retrieval (docs/design.md §4): the same terms for a stored turn and for a new
 * question, in any language, with no dictionary. A word is cut to its first TERM_CHARS characters
 * (truncation stems "singers" and "singer", "countries" and "country" alike, in most alphabetic
 * languages); identifiers are split at underscores and case changes first ("car_makers", "CarMakers"
 * → car, maker); runs of a script written without spaces (Chinese, Japanese, Korean) become
 * overlapping character pairs, the usual unit for matching them without a segmenter.
 *
 * Stored as a tsvector written here and cast, so no text-search configuration (and no language)
 * takes part: the weights say where a term came from, tables (A) over columns (B) over the question's
 * words (C), so a question naming a table ranks the turns whose SQL read it first. Weight D holds what
 * no question term can match: each table's whole name (`table:countrylanguage`, which the truncated
 * terms cannot tell from `country`), the key by which retrieval gives the answerer one turn per set
 * of tables, and TERMS_VERSION.
 */
export const TERM_CHARS = 5;

/**
 * In every tsvector turnSearchTerms writes. Turns whose terms lack it were written by an older
 * version, and the re-embedding job writes them again; change it whenever the terms change.
 */
export const TERMS_VERSION = 'terms:2';
/** TERMS_VERSION as a tsquery literal. */
export const TERMS_VERSION_QUERY = quoteLexeme(TERMS_VERSION);

/** Lexemes a tsvector position may carry (PostgreSQL caps positions at 16383). */
const MAX_POSITION = 16_383;
/**
 * A whole table name is cut to this many characters (PostgreSQL refuses a lexeme over 2047 bytes), and
 * only a turn's first MAX_TABLES tables take part (a tsvector holds at most 1 MB): both bound what an
 * answerer's SQL or a stored turn's tables_used can put into one turn's terms.
 */
const MAX_TABLE_NAME_CHARS = 128;
const MAX_TABLES = 100;
/** A whole table name's term is this prefix and the name (weight D). */
const WHOLE_NAME = 'table:';

/** Case changes inside an identifier: "CarMakers" → "Car Makers", "HTTPServer" → "HTTP Server". */
const CASE_CHANGE = /(?<=\p{Ll})(?=\p{Lu})|(?<=\p{Lu})(?=\p{Lu}\p{Ll})/gu;

/** The terms of a text: truncated words and identifier parts, and character pairs of unspaced scripts. */
export function lexicalTerms(text: string): string[] {
  const terms: string[] = [];
  forEachSegment(text.normalize('NFKC'), (segment, unspaced) => {
    if (!unspaced) return wordTerms(segment, terms);
    const chars = [...segment];
    if (chars.length === 1) terms.push(chars[0]!);
    for (let i = 0; i + 1 < chars.length; i++) terms.push(chars[i]! + chars[i + 1]!);
  });
  return terms;
}

function wordTerms(word: string, out: string[]) {
  for (const part of word.replace(CASE_CHANGE, '_').split('_')) {
    const term = [...part.toLowerCase()].slice(0, TERM_CHARS).join('');
    // A single letter or digit matches too much to mean anything.
    if ([...term].length > 1) out.push(term);
  }
}

/**
 * A stored turn's terms as a tsvector literal: the tables its SQL reads (weight A), the other
 * identifiers it names (B), its question (C), and the tables' whole names and TERMS_VERSION (D).
 * A NULL column means "not computed yet" (the re-embedding job fills it).
 */
export function turnSearchTerms(turn: { question: string; sqlQuery: string | null; tablesUsed: string[] }): string {
  const ids = sqlIdentifiers(turn.sqlQuery);
  const tables = [...ids.tables, ...turn.tablesUsed].slice(0, MAX_TABLES);
  const wholeNames = tables.map((table) => `${WHOLE_NAME}${wholeTableName(table)}`);
  const weighted: [string[], 'A' | 'B' | 'C' | 'D'][] = [
    [tables.flatMap(lexicalTerms), 'A'],
    [ids.columns.flatMap(lexicalTerms), 'B'],
    [lexicalTerms(turn.question), 'C'],
    [[...wholeNames, TERMS_VERSION], 'D'],
  ];
  const positions = new Map<string, string[]>();
  let position = 0;
  for (const [terms, weight] of weighted) {
    for (const term of terms) {
      position = Math.min(position + 1, MAX_POSITION);
      positions.set(term, [...(positions.get(term) ?? []), `${position}${weight}`]);
    }
  }
  return [...positions].map(([term, at]) => `${quoteLexeme(term)}:${at.join(',')}`).join(' ');
}

/** A table's name as its whole-name term holds it: NFKC, lower case, at most MAX_TABLE_NAME_CHARS characters. */
export function wholeTableName(table: string): string {
  const name = table.normalize('NFKC').toLowerCase();
  // No more UTF-16 units than the bound is no more characters: only a longer name is cut, by character.
  return name.length <= MAX_TABLE_NAME_CHARS ? name : [...name].slice(0, MAX_TABLE_NAME_CHARS).join('');
}

/**
 * The tables whose whole names a stored turn's weight-D terms hold (turnSearchTerms), sorted: the set
 * the retrieval statement groups turns by. Undefined for terms another TERMS_VERSION wrote.
 */
export function tablesOfTerms(wholeNameTerms: readonly string[]): string[] | undefined {
  const tables: string[] = [];
  let current = false;
  for (const term of wholeNameTerms) {
    if (term === TERMS_VERSION) current = true;
    else if (term.startsWith(WHOLE_NAME)) tables.push(term.slice(WHOLE_NAME.length));
  }
  return current ? tables.sort() : undefined;
}

/** A question's terms, and as a tsquery literal matching any of them; null when it has none. */
export function questionSearch(question: string): { query: string; terms: string[] } | null {
  const terms = [...new Set(lexicalTerms(question))];
  return terms.length ? { query: terms.map(quoteLexeme).join(' | '), terms } : null;
}

/** Terms hold only letters, marks, digits and underscores; quoting keeps the literal safe regardless. */
function quoteLexeme(term: string): string {
  return `'${term.replace(/\\/g, '\\\\').replace(/'/g, "''")}'`;
}

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
