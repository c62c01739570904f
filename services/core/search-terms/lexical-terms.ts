import { forEachSegment } from '../../model/text-segments.js';
import { type SqlIdentifiers, sqlIdentifiers, tableOwnName } from './sql-identifiers.js';
import { tablesRead } from './tables-read.js';

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
export const TERMS_VERSION = 'terms:3';
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
export function turnSearchTerms(turn: { question: string; sqlQuery: string | null; tablesUsed: readonly string[] }): string {
  const ids = sqlIdentifiers(turn.sqlQuery);
  const tables = tablesOfTurn(ids, turn).slice(0, MAX_TABLES);
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

/**
 * A turn's tables by their own names, as its SQL's are (`"sales_db"."sales"` → sales): those its SQL
 * reads, and those of its tables_used it read (tables-read.ts), so that the views an answerer's search
 * only considered are not taken for the turn's.
 */
export function turnTables(turn: { sqlQuery: string | null; tablesUsed: readonly string[] }): string[] {
  return tablesOfTurn(sqlIdentifiers(turn.sqlQuery), turn);
}

function tablesOfTurn(ids: SqlIdentifiers, turn: { sqlQuery: string | null; tablesUsed: readonly string[] }): string[] {
  return [...new Set([...ids.tables, ...tablesRead(turn.sqlQuery, turn.tablesUsed).map(tableOwnName)])];
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
