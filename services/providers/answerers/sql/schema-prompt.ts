import { countTokens } from 'gpt-tokenizer';
import type { SchemaTable } from './schema-introspection.js';

/**
 * The schema as the LLM reads it, one line per table, within `maxTokens` (gpt-tokenizer, as the
 * memory block): `demo.sales(sale_id integer PK, region_id integer → demo.regions(region_id), …) -- comment`.
 * When not every table fits, the tables the conversation already used come first, then those the
 * question names, then the rest; the names of the tables left out are listed while they fit.
 */
export function renderSchema(tables: SchemaTable[], options: { maxTokens: number; usedTables: string[]; question: string }): string {
  const ordered = [...tables].sort((a, b) => rank(b, options) - rank(a, options) || qualified(a).localeCompare(qualified(b)));
  const lines = ordered.map(tableLine);
  // Lines counted one by one, then the whole text counted exactly: tokens can merge across a line break.
  let shown = 0;
  for (let tokens = 0; shown < lines.length; shown++) {
    tokens += tokenCount(lines[shown]!) + 1;
    if (tokens > options.maxTokens) break;
  }
  for (; shown >= 0; shown--) {
    const text = withNote(lines.slice(0, shown), ordered.slice(shown).map(qualified), options.maxTokens);
    if (text !== undefined) return text;
  }
  return '';
}

/** The shown lines and a note of what was left out (every name when it fits, else their number): undefined when over the budget. */
function withNote(lines: string[], left: string[], maxTokens: number): string | undefined {
  const notes = [`-- not shown for length: ${left.join(', ')}`, `-- ${left.length} more tables not shown for length`];
  for (const candidate of left.length ? notes.map((note) => [...lines, note]) : [lines]) {
    const text = candidate.join('\n');
    if (tokenCount(text) <= maxTokens) return text;
  }
  return undefined;
}

function rank(table: SchemaTable, options: { usedTables: string[]; question: string }): number {
  const used = options.usedTables.some((t) => t === qualified(table) || t === table.name);
  const named = new RegExp(`\\b${escapeRegExp(table.name.replace(/s$/, ''))}`, 'i').test(options.question);
  return (used ? 2 : 0) + (named ? 1 : 0);
}

function tableLine(table: SchemaTable): string {
  const references = new Map(table.foreignKeys.filter((fk) => fk.columns.length === 1).map((fk) => [fk.columns[0]!, fk.references]));
  const columns = table.columns.map((column) => {
    const parts = [column.name, column.type];
    if (table.primaryKey.length === 1 && table.primaryKey[0] === column.name) parts.push('PK');
    const reference = references.get(column.name);
    if (reference) parts.push(`→ ${reference}`);
    if (column.comment) parts.push(`"${oneLine(column.comment)}"`);
    return parts.join(' ');
  });
  const keys = [
    ...(table.primaryKey.length > 1 ? [`PRIMARY KEY (${table.primaryKey.join(', ')})`] : []),
    ...table.foreignKeys.filter((fk) => fk.columns.length > 1).map((fk) => `FOREIGN KEY (${fk.columns.join(', ')}) → ${fk.references}`),
  ];
  const comment = table.comment ? ` -- ${oneLine(table.comment)}` : '';
  return `${qualified(table)}(${[...columns, ...keys].join(', ')})${comment}`;
}

function qualified(table: SchemaTable): string {
  return `${table.schema}.${table.name}`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function tokenCount(text: string): number {
  return countTokens(text, { disallowedSpecial: new Set() });
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
