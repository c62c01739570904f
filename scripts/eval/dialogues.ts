// Multi-turn text-to-SQL dialogues in SParC's JSON format, and what the eval measures on the
// upstream requests they produce.
import { readFileSync } from 'node:fs';
import { VERIFIED_PAIRS_HEADING } from '../../services/core/context/chat-block.js';
import {
  CONTINUATION_INDENT,
  MEMORY_BLOCK_CLOSE,
  MEMORY_BLOCK_OPEN,
  MEMORY_BLOCK_PREAMBLE,
} from '../../services/core/context/memory-block.js';
import { sqlIdentifiers } from '../../services/core/search-terms/sql-identifiers.js';
import { countTokens } from '../../services/core/text.js';

export interface Dialogue {
  database_id: string;
  interaction: { utterance: string; query: string }[];
}

export function loadDialogues(file: string): Dialogue[] {
  const data: unknown = JSON.parse(readFileSync(file, 'utf8'));
  if (!Array.isArray(data)) throw new Error(`${file}: expected a list of dialogues`);
  return data.map((d, i) => {
    if (typeof d?.database_id !== 'string' || !Array.isArray(d.interaction)) {
      throw new Error(`${file}: dialogue ${i} has no database_id or interaction list`);
    }
    return {
      database_id: d.database_id,
      interaction: d.interaction.map((t: { utterance?: unknown; query?: unknown }, j: number) => {
        if (typeof t?.utterance !== 'string' || typeof t.query !== 'string') {
          throw new Error(`${file}: dialogue ${i}, turn ${j} needs a string utterance and query`);
        }
        return { utterance: t.utterance, query: t.query };
      }),
    };
  });
}

/** A database of SParC's (Spider's) tables.json. */
export interface SpiderSchema {
  db_id: string;
  foreign_keys: [number, number][];
  table_names_original: string[];
  table_names: string[];
  column_names_original: [number, string][];
  column_names: [number, string][];
}

export function loadSchemas(file: string): SpiderSchema[] {
  return JSON.parse(readFileSync(file, 'utf8'));
}

/** A table as the Denodo AI SDK names a view: `database.table`, in lower case. */
export const viewName = (schema: SpiderSchema, table: number) => `${schema.db_id}.${schema.table_names_original[table]}`.toLowerCase();

/** The set of tables a statement reads (FROM/JOIN), as one comparable key. */
export function tableSetKey(sql: string): string {
  return [...new Set(sqlIdentifiers(sql).tables)].sort().join(',');
}

/**
 * The share of the tables a question's gold SQL reads (a tableSetKey) that a sent turn's SQL (another
 * key) also reads: 1 when the top similar turn covers them all, though it may read more; 0 when none was sent.
 */
export function tableCoverage(sent: string | undefined, wanted: string): number {
  const want = wanted.split(',').filter(Boolean);
  if (!sent || !want.length) return 0;
  const have = new Set(sent.split(','));
  return want.filter((t) => have.has(t)).length / want.length;
}

const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

/** Whether `sql` reached the upstream request (its question or custom_instructions), whitespace aside. */
export function carries(upstreamText: string, sql: string): boolean {
  return squash(upstreamText).includes(squash(sql));
}

export type BlockPart = 'instructions' | 'summary' | 'history' | 'similar' | 'verified' | 'answers';

export interface ParsedBlock {
  /** The SQL of the similar turns, in the order sent. */
  similarSql: string[];
  /** The SQL of the tenant's verified pairs, in the order sent. */
  verifiedSql: string[];
  /** Tokens of each part (each part's lines counted together: their sum is close to the block's count). */
  tokens: Record<BlockPart, number>;
}

/**
 * Reads the memory block back out of custom_instructions: the similar turns' SQL and what its tokens
 * are spent on. Stored values continue on indented lines, so a line's part is its label's part.
 */
export function parseMemoryBlock(text: string | undefined): ParsedBlock {
  const parts: Record<BlockPart, string[]> = { instructions: [], summary: [], history: [], similar: [], verified: [], answers: [] };
  const similarSql: string[] = [];
  const verifiedSql: string[] = [];
  let section: BlockPart = 'instructions';
  let current: BlockPart = 'instructions';
  let sqlLines: string[] | null = null;
  let sqlInto = similarSql;
  for (const line of (text ?? '').split('\n')) {
    if (line.startsWith(CONTINUATION_INDENT)) {
      parts[current].push(line);
      if (sqlLines) sqlLines.push(line.slice(CONTINUATION_INDENT.length));
      continue;
    }
    if (sqlLines) sqlInto.push(sqlLines.join('\n'));
    sqlLines = null;
    if (line === MEMORY_BLOCK_PREAMBLE || line === MEMORY_BLOCK_OPEN || line === MEMORY_BLOCK_CLOSE) current = section = 'instructions';
    else if (line.startsWith('Summary of earlier turns:')) current = section = 'summary';
    else if (line.startsWith('Earlier in this conversation')) current = section = 'history';
    else if (line.startsWith('Related questions this user asked before')) current = section = 'similar';
    else if (line === VERIFIED_PAIRS_HEADING) current = section = 'verified';
    else if (line.startsWith('Answer: ')) current = 'answers';
    else {
      current = section;
      if ((section === 'similar' || section === 'verified') && line.startsWith('SQL: ')) {
        sqlLines = [line.slice('SQL: '.length)];
        sqlInto = section === 'similar' ? similarSql : verifiedSql;
      }
    }
    parts[current].push(line);
  }
  if (sqlLines) sqlInto.push(sqlLines.join('\n'));
  const tokens = Object.fromEntries(
    Object.entries(parts).map(([part, lines]) => [part, lines.length ? countTokens(lines.join('\n')) : 0]),
  ) as Record<BlockPart, number>;
  return { similarSql, verifiedSql, tokens };
}

/** Chance that k turns drawn at random from n include at least one of the m good ones. */
export function chanceOfHit(n: number, m: number, k: number): number {
  if (n <= 0 || m <= 0) return 0;
  let miss = 1;
  for (let i = 0; i < Math.min(k, n); i++) miss *= Math.max(0, n - m - i) / (n - i);
  return 1 - miss;
}
