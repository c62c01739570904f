// The similar turns' order after the retrieval statement: a turn that reads a table none of the
// question's words point to goes after one whose tables all are pointed to. The words point through
// what the candidates' own SQL shows of each table (its name, the columns read with it, the literal
// values compared with them), so "names of poker players" points to `people` once a statement read
// people.Name, and "flights into Aberdeen" to `airports` once one compared a city with 'Aberdeen'.
// Measured against the fused score alone on SParC dev split by database and on the Chinese dialogues
// (scripts/eval/rerank/schema-fit.ts, docs/design.md §11): it won on both halves and left the Chinese
// set as it was, since its words point to no table and the order is then the statement's.

import { forEachSegment } from '../../model/text-segments.js';
import { tablesOfTerms, turnTables, wholeTableName } from '../search-terms/lexical-terms.js';

/** How many of the statement's best turns the rerank chooses from: the fused lists' own depth. */
export const RERANK_CANDIDATES = 20;

/** What the rerank reads of a similar turn. */
export interface LinkCandidate {
  sql_query: string | null;
  tables_used: string[];
  /** The statement's fused score; 1 or more for the same question asked before (hybrid-rank.ts). */
  score: number;
  /** The turn's stored whole-name terms, as the statement read them (null or absent: parse its SQL). */
  table_terms?: string[] | null;
}

/** Shorter stems ("id", "no") name too many identifiers by accident. */
const MIN_STEM_CHARS = 3;
const STEM_CHARS = 5;
const MIN_VALUE_CHARS = 3;

/**
 * A word's stem for matching identifiers: lower case, a plural's "s" dropped, its first STEM_CHARS
 * characters ("countries" → "count", "players" → "playe"). Unspaced scripts give none: their words
 * never spell an identifier.
 */
export function questionStems(question: string): string[] {
  const stems = new Set<string>();
  forEachSegment(question.normalize('NFKC').toLowerCase(), (segment, unspaced) => {
    if (unspaced) return;
    const word = segment.length > MIN_STEM_CHARS && segment.endsWith('s') ? segment.slice(0, -1) : segment;
    if (word.length >= MIN_STEM_CHARS && !/^\d+$/.test(word)) stems.add(word.slice(0, STEM_CHARS));
  });
  return [...stems];
}

/** Whether a question with these stems names the identifier: one stem within it, underscores aside. */
export function names(stems: readonly string[], identifier: string): boolean {
  const flat = identifier.toLowerCase().replace(/_/g, '');
  return stems.some((stem) => flat.includes(stem));
}

/** Per table: the identifiers (its name, columns read with it) and literal words its statements showed. */
export type LearnedSchema = Map<string, { identifiers: Set<string>; values: Set<string> }>;

const CLAUSE_WORDS = [
  'where',
  'join',
  'on',
  'group',
  'order',
  'limit',
  'union',
  'intersect',
  'except',
  'inner',
  'left',
  'right',
  'outer',
  'cross',
  'natural',
  'having',
  'and',
  'or',
];
/** A FROM or JOIN item and its alias, a clause's first word not taken for one (nor consumed: `a JOIN b` reads b too). */
const FROM_ITEM = new RegExp(
  `\\b(?:from|join)\\s+([a-z_][\\w.]*)(?:\\s+(?:as\\s+)?(?!(?:${CLAUSE_WORDS.join('|')})\\b)([a-z_]\\w*))?`,
  'gi',
);
const LITERAL = /(['"])(.*?)\1/g;
const QUALIFIED = /\b([a-z_]\w*)\.([a-z_]\w*)\b/gi;
const BARE_NAME = /\b([a-z_]\w*)\b(?!\s*\()/gi;
const COMPARED_LITERAL = /\b(?:([a-z_]\w*)\.)?([a-z_]\w*)\s*(?:=|!=|<>|like|>=|<=|>|<)\s*(['"])(.*?)\3/gi;
/** Words of SQL itself, never a column: the clause words and the rest. */
const SQL_WORDS = new Set([
  ...CLAUSE_WORDS,
  'select',
  'from',
  'not',
  'in',
  'like',
  'between',
  'is',
  'null',
  'as',
  'by',
  'asc',
  'desc',
  'distinct',
  'exists',
  'case',
  'when',
  'then',
  'else',
  'end',
]);

/**
 * What a set of statements shows of each table. A column qualified by a table's alias is that table's;
 * an unqualified one is the table's when the statement reads only that table, else no one table's.
 */
export function learnSchema(statements: readonly (string | null)[]): LearnedSchema {
  const schema: LearnedSchema = new Map();
  const entry = (table: string) => {
    const known = schema.get(table);
    if (known) return known;
    const e = { identifiers: new Set([table]), values: new Set<string>() };
    schema.set(table, e);
    return e;
  };
  for (const sql of statements) {
    if (!sql) continue;
    const alias = new Map<string, string>();
    eachMatch(FROM_ITEM, sql, (m) => {
      // Named as sqlIdentifiers and the stored terms name it: without a schema or database prefix.
      const name = m[1]!.slice(m[1]!.lastIndexOf('.') + 1);
      const table = wholeTableName(name);
      alias.set(name.toLowerCase(), table);
      if (m[2]) alias.set(m[2].toLowerCase(), table);
      entry(table);
    });
    const read = new Set(alias.values());
    const only = read.size === 1 ? read.values().next().value : undefined;
    // Without a quoted value there is no literal to compare: the costliest passes are skipped.
    const quoted = sql.includes("'") || sql.includes('"');
    const code = quoted ? sql.replace(LITERAL, ' ') : sql;
    eachMatch(QUALIFIED, code, (m) => {
      const table = alias.get(m[1]!.toLowerCase());
      if (table) entry(table).identifiers.add(m[2]!.toLowerCase());
    });
    if (only) {
      const identifiers = entry(only).identifiers;
      eachMatch(BARE_NAME, code, (m) => {
        const w = m[1]!.toLowerCase();
        if (!SQL_WORDS.has(w) && !alias.has(w)) identifiers.add(w);
      });
    }
    if (!quoted) continue;
    eachMatch(COMPARED_LITERAL, sql, (m) => {
      const table = m[1] ? alias.get(m[1].toLowerCase()) : only;
      if (table) for (const w of literalWords(m[4]!)) entry(table).values.add(w);
    });
  }
  return schema;
}

/** Each match of a global pattern, by exec: destructuring each of matchAll's results was most of learnSchema's time. */
function eachMatch(pattern: RegExp, text: string, onMatch: (m: RegExpExecArray) => void): void {
  pattern.lastIndex = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) onMatch(m);
}

function literalWords(text: string): string[] {
  const words: string[] = [];
  forEachSegment(text.normalize('NFKC').toLowerCase(), (segment, unspaced) => {
    if (!unspaced && segment.length >= MIN_VALUE_CHARS) words.push(segment);
  });
  return words;
}

/**
 * The tables of the schema (or of the schema a function learns, only when the question has words that
 * could point) that a word of the question points to: by naming an identifier of it, or being one of its literal words.
 */
export function linkedTables(question: string, schema: LearnedSchema | (() => LearnedSchema)): Set<string> {
  const stems = questionStems(question);
  const words = literalWords(question);
  const linked = new Set<string>();
  // A question in an unspaced script has neither: no schema need be learned for it.
  if (!stems.length && !words.length) return linked;
  if (typeof schema === 'function') schema = schema();
  for (const [table, { identifiers, values }] of schema) {
    if ([...identifiers].some((id) => names(stems, id)) || words.some((w) => values.has(w))) linked.add(table);
  }
  return linked;
}

/**
 * A turn's tables, as the statement groups turns: those its SQL reads and those of its tables_used it
 * read (lexical-terms.ts turnTables),
 * read from its stored terms where the statement sent them (parsing 20 candidates' SQL was half the
 * rerank's time: docs/performance.md).
 */
export function tablesOf(turn: Pick<LinkCandidate, 'sql_query' | 'tables_used' | 'table_terms'>): string[] {
  const stored = turn.table_terms ? tablesOfTerms(turn.table_terms) : undefined;
  return stored ?? [...new Set(turnTables({ sqlQuery: turn.sql_query, tablesUsed: turn.tables_used }).map(wholeTableName))].sort();
}

/**
 * The `k` turns to send, from the statement's candidates (best fused score first): the same question
 * asked before first, then by the share of a turn's tables that no word of the question points to,
 * then the fused score; the best turn of each set of tables before a second one of any set, as the
 * statement picks them. When no word points to any table the order is the fused score's.
 */
export function rerankByTableLinks<T extends LinkCandidate>(question: string, candidates: readonly T[], k: number): T[] {
  const tables = candidates.map(tablesOf);
  const linked = linkedTables(question, () => learnSchema(candidates.map((c) => c.sql_query)));
  const unlinked = tables.map((ts) => (linked.size && ts.length ? ts.filter((t) => !linked.has(t)).length / ts.length : 0));
  const ranked = candidates
    .map((turn, at) => ({ turn, at, repeat: turn.score >= 1, unlinked: unlinked[at]!, set: tables[at]!.join(',') }))
    .sort((a, b) => Number(b.repeat) - Number(a.repeat) || a.unlinked - b.unlinked || b.turn.score - a.turn.score || a.at - b.at);
  const seen = new Map<string, number>();
  const nth = ranked.map((r) => {
    const n = (seen.get(r.set) ?? 0) + 1;
    seen.set(r.set, n);
    return n;
  });
  return ranked
    .map((r, i) => ({ r, i, nth: nth[i]! }))
    .sort((a, b) => a.nth - b.nth || a.i - b.i)
    .slice(0, k)
    .sort((a, b) => a.i - b.i)
    .map(({ r }) => r.turn);
}
