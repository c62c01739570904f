import type { PairExample } from '../../db/repositories/verified-pairs.js';
import type { HistoryTurn, SimilarTurn } from '../../model/turns.js';
import { tablesReadOf } from '../search-terms/tables-read.js';
import { countRecurringTokens, countTokensByLine, cutText } from '../text.js';
import { CONTINUATION_INDENT, memoryBlock, quoteStored } from './memory-block.js';
import { historyOf, type MemoryItem, memoryItems, packMemory, pairsOf, similarOf } from './pack.js';

/** Answers are context, not content: a long answer is cut to this many characters. */
export const ANSWER_CHARS_IN_CONTEXT = 500;

export interface ContextInput {
  /** Newest first. */
  window: HistoryTurn[];
  /** Most similar first. */
  similar: SimilarTurn[];
  summary: string | null;
  /** The tenant's verified pairs, best first (docs/verified-pairs.md). */
  pairs?: PairExample[];
  maxTokens: number;
}

export interface BuiltContext {
  /** The rendered memory block; '' when there is nothing to add. */
  text: string;
  /** The window turns that made it in, oldest first. */
  history: HistoryTurn[];
  similar: SimilarTurn[];
  /** The verified pairs that made it in, best first. */
  pairs: PairExample[];
  summaryUsed: boolean;
  tokens: number;
  truncated: boolean;
}

/** Separators and a section heading an item may bring with it. */
const SECTION_ALLOWANCE = 16;

/**
 * The /memoryChat memory block within `maxTokens` (the packer's order: latest turn, summary, older
 * turns, similar past questions). Tokens are counted on the rendered text, so the bound holds exactly.
 */
export function buildMemoryContext(input: ContextInput): BuiltContext {
  // The lines counted while packing, by their text: the rendering is made of the same lines.
  const seen = new Map<string, number>();
  const { kept, rendered, truncated } = packMemory(memoryItems(input), input.maxTokens, {
    frameTokens: countRecurringTokens(renderBlock([])),
    // An item is counted as it stands in the block, before the blank line that follows it: its lines
    // are then the block's own, and the exact count of the rendering finds them already counted.
    cost: (item) => countTokensByLine(`${renderItem(item)}\n\n`, seen) + SECTION_ALLOWANCE,
    render: (items) => {
      const text = items.length ? renderBlock(items) : '';
      // Exact, as countTokens: the block's lines recur from turn to turn, so most are counted already.
      return { text, tokens: countTokensByLine(text, seen) };
    },
    tokens: (block) => block.tokens,
  });
  return {
    text: rendered.text,
    history: historyOf(kept),
    similar: similarOf(kept),
    pairs: pairsOf(kept),
    summaryUsed: kept.some((i) => i.kind === 'summary'),
    tokens: rendered.tokens,
    truncated,
  };
}

function renderItem(item: MemoryItem): string {
  if (item.kind === 'summary') return quoteStored(item.text);
  if (item.kind === 'slots') return '';
  if (item.kind === 'pair') return renderPair(item.pair);
  return renderTurn(item.turn);
}

function renderBlock(items: MemoryItem[]): string {
  const summary = items.find((i): i is Extract<MemoryItem, { kind: 'summary' }> => i.kind === 'summary');
  const history = historyOf(items);
  const similar = similarOf(items);
  const pairs = pairsOf(items);
  const parts: string[] = [];
  if (summary) parts.push(`Summary of earlier turns:\n${CONTINUATION_INDENT}${quoteStored(summary.text)}`);
  if (history.length) {
    parts.push(`Earlier in this conversation (oldest first):\n${history.map(renderTurn).join('\n\n')}`);
  }
  if (pairs.length) parts.push(`${VERIFIED_PAIRS_HEADING}\n${pairs.map(renderPair).join('\n\n')}`);
  if (similar.length) {
    parts.push(`Related questions this user asked before, with the SQL that answered them:\n${similar.map(renderTurn).join('\n\n')}`);
  }
  return memoryBlock(parts);
}

/**
 * Clarifications keep their answer but never carry SQL into later queries. A clarifying question is
 * named as one, so the user's reply in the next turn reads as its answer.
 */
function renderTurn(turn: HistoryTurn): string {
  const lines = [`Question: ${quoteStored(turn.question)}`];
  if (turn.status === 'ok' && turn.sql_query) {
    lines.push(`SQL: ${quoteStored(turn.sql_query)}`);
    const tables = tablesReadOf(turn);
    if (tables.length) lines.push(`Tables: ${quoteStored(tables.join(', '))}`);
  }
  // Its candidate views are not listed: they go as use_views (pinned-views.ts), with their schema.
  if (turn.asks_clarification) {
    lines.push(`Clarifying question asked, answered by the next question: ${quoteStored(cutText(turn.answer, ANSWER_CHARS_IN_CONTEXT))}`);
  } else if (turn.answer) lines.push(`Answer: ${quoteStored(cutText(turn.answer, ANSWER_CHARS_IN_CONTEXT))}`);
  return lines.join('\n');
}

/** The heading of the block's verified examples: the tenant's confirmed SQL, not this user's memory. */
export const VERIFIED_PAIRS_HEADING = 'Verified examples of this organisation, questions with the SQL confirmed for them:';

function renderPair(pair: PairExample): string {
  const lines = [`Question: ${quoteStored(pair.question)}`, `SQL: ${quoteStored(pair.sql_query)}`];
  const tables = tablesReadOf(pair);
  if (tables.length) lines.push(`Tables: ${quoteStored(tables.join(', '))}`);
  return lines.join('\n');
}
