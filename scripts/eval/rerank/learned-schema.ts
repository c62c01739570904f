// The schema a user's own stored SQL teaches: per table, the columns and literal values that any of
// their statements used with it. A question's words then link to tables through columns and values
// the table names alone do not show ("names of poker players" → the table whose column Name an earlier
// statement read; "flights land in Aberdeen" → the table an earlier statement compared with 'Aberdeen').

import { names, questionStems } from './similar-rerank.js';

export interface LearnedSchema {
  /** Table → the identifiers (its own name, its columns) and literal words seen with it. */
  tables: Map<string, { identifiers: Set<string>; values: Set<string> }>;
}

const FROM_ITEM = /\b(?:from|join)\s+([a-z_][\w.]*)(?:\s+(?:as\s+)?([a-z_]\w*))?/gi;
const NOT_ALIAS = new Set([
  'where', 'join', 'on', 'group', 'order', 'limit', 'union', 'intersect', 'except', 'inner', 'left', 'right',
  'outer', 'cross', 'natural', 'having', 'as', 'and', 'or',
]);
const QUALIFIED = /\b([a-z_]\w*)\.([a-z_]\w*)\b/gi;
const BARE_NAME = /\b([a-z_]\w*)\b(?!\s*\()/gi;
const COMPARED_LITERAL = /\b(?:([a-z_]\w*)\.)?([a-z_]\w*)\s*(?:=|!=|<>|like|>|<|>=|<=)\s*(['"])(.*?)\3/gi;
const SQL_WORDS = new Set([
  'select', 'from', 'where', 'and', 'or', 'not', 'in', 'like', 'between', 'is', 'null', 'as', 'on', 'join',
  'group', 'by', 'order', 'having', 'limit', 'asc', 'desc', 'distinct', 'union', 'intersect', 'except', 'count',
  'avg', 'sum', 'min', 'max', 'inner', 'left', 'right', 'outer', 'exists', 'case', 'when', 'then', 'else', 'end',
]);

export function learnSchema(statements: readonly (string | null)[]): LearnedSchema {
  const tables: LearnedSchema['tables'] = new Map();
  const entry = (table: string) => {
    let e = tables.get(table);
    if (!e) tables.set(table, (e = { identifiers: new Set([table]), values: new Set() }));
    return e;
  };
  for (const statement of statements) {
    if (!statement) continue;
    const sql = statement;
    const alias = new Map<string, string>();
    const read = new Set<string>();
    for (const [, name, as] of sql.matchAll(FROM_ITEM)) {
      const table = name!.toLowerCase();
      read.add(table);
      alias.set(table, table);
      if (as && !NOT_ALIAS.has(as.toLowerCase())) alias.set(as.toLowerCase(), table);
      entry(table);
    }
    const withoutLiterals = sql.replace(/(['"])(.*?)\1/g, ' ');
    for (const [, a, column] of withoutLiterals.matchAll(QUALIFIED)) {
      const table = alias.get(a!.toLowerCase());
      if (table) entry(table).identifiers.add(column!.toLowerCase());
    }
    // Unqualified columns belong to the one table a statement reads; with more, to none of them for sure.
    if (read.size === 1) {
      const [table] = read;
      for (const [, word] of withoutLiterals.matchAll(BARE_NAME)) {
        const w = word!.toLowerCase();
        if (!SQL_WORDS.has(w) && !alias.has(w) && !/^\d/.test(w)) entry(table!).identifiers.add(w);
      }
    }
    for (const [, a, , , literal] of sql.matchAll(COMPARED_LITERAL)) {
      const table = a ? alias.get(a.toLowerCase()) : read.size === 1 ? [...read][0] : undefined;
      if (!table) continue;
      for (const w of literal!.toLowerCase().split(/[^\p{L}\p{N}]+/u)) if (w.length >= 3) entry(table).values.add(w);
    }
  }
  return { tables };
}

/**
 * How strongly the question's words point at each table of the learned schema: each word that links to
 * any (by naming one of its identifiers, by the stem rule of similar-rerank.ts, or by being one of its
 * literal words) gives its weight of 1 in equal shares to the tables it links to. Empty when no word links.
 */
export function tableLinks(question: string, schema: LearnedSchema): { links: Map<string, number>; words: string[][] } {
  const stems = questionStems(question);
  const values = new Set(question.normalize('NFKC').toLowerCase().split(/[^\p{L}\p{N}]+/u).filter((w) => w.length >= 3));
  const links = new Map<string, number>();
  const words: string[][] = [];
  const give = (linked: string[]) => {
    if (linked.length) words.push(linked);
    for (const t of linked) links.set(t, (links.get(t) ?? 0) + 1 / linked.length);
  };
  for (const stem of stems) {
    give([...schema.tables].filter(([, e]) => [...e.identifiers].some((id) => names([stem], id))).map(([t]) => t));
  }
  for (const word of values) {
    give([...schema.tables].filter(([, e]) => e.values.has(word)).map(([t]) => t));
  }
  return { links, words };
}
