import type { HistoryTurn, SimilarTurn } from '../../model/turns.js';
import { CONTINUATION_INDENT, memoryBlock, quoteStored } from './memory-block.js';
import { countTokens, cutText } from '../text.js';

/** Answers are context, not content: a long answer is cut to this many characters. */
export const ANSWER_CHARS_IN_CONTEXT = 500;

export interface ContextInput {
  /** Newest first. */
  window: HistoryTurn[];
  /** Most similar first. */
  similar: SimilarTurn[];
  summary: string | null;
  maxTokens: number;
}

export interface BuiltContext {
  /** The rendered memory block; '' when there is nothing to add. */
  text: string;
  /** The window turns that made it in, oldest first. */
  history: HistoryTurn[];
  similar: SimilarTurn[];
  summaryUsed: boolean;
  tokens: number;
  truncated: boolean;
}

type Item =
  | { kind: 'history'; turn: HistoryTurn }
  | { kind: 'summary'; text: string }
  | { kind: 'similar'; turn: SimilarTurn };

/**
 * Renders memory into a block within `maxTokens`. What is kept first: the latest turn, the summary,
 * older turns newest first, then similar past questions by similarity; `truncated` says something
 * did not fit. Tokens are counted on the rendered text, so the bound holds exactly.
 */
export function buildMemoryContext(input: ContextInput): BuiltContext {
  const [latest, ...older] = input.window;
  const candidates: Item[] = [
    ...(latest ? [{ kind: 'history', turn: latest } as const] : []),
    ...(input.summary ? [{ kind: 'summary', text: input.summary } as const] : []),
    ...older.map((turn) => ({ kind: 'history', turn }) as const),
    ...input.similar.map((turn) => ({ kind: 'similar', turn }) as const),
  ];

  // Each item is tokenised once; the sum of parts is checked against the exact count at the end.
  const frame = countTokens(render([]));
  const kept: Item[] = [];
  let used = frame;
  let truncated = false;
  for (const item of candidates) {
    const cost = countTokens(renderItem(item)) + SECTION_ALLOWANCE;
    if (used + cost <= input.maxTokens) {
      kept.push(item);
      used += cost;
    } else truncated = true;
  }
  // The final text is rendered and counted once; only a text over the budget is rendered again.
  let text = kept.length ? render(kept) : '';
  let tokens = text ? countTokens(text) : 0;
  while (kept.length && tokens > input.maxTokens) {
    kept.pop();
    truncated = true;
    text = kept.length ? render(kept) : '';
    tokens = text ? countTokens(text) : 0;
  }

  const history = kept.flatMap((i) => (i.kind === 'history' ? [i.turn] : [])).sort((a, b) => a.turn_number - b.turn_number);
  return {
    text,
    history,
    similar: kept.flatMap((i) => (i.kind === 'similar' ? [i.turn] : [])),
    summaryUsed: kept.some((i) => i.kind === 'summary'),
    tokens,
    truncated,
  };
}

/** Separators and a section heading an item may bring with it. */
const SECTION_ALLOWANCE = 16;

function renderItem(item: Item): string {
  return item.kind === 'summary' ? quoteStored(item.text) : renderTurn(item.turn);
}

function render(items: Item[]): string {
  const summary = items.find((i) => i.kind === 'summary');
  const history = items
    .flatMap((i) => (i.kind === 'history' ? [i.turn] : []))
    .sort((a, b) => a.turn_number - b.turn_number);
  const similar = items.flatMap((i) => (i.kind === 'similar' ? [i.turn] : []));

  const parts: string[] = [];
  if (summary?.kind === 'summary') parts.push(`Summary of earlier turns:\n${CONTINUATION_INDENT}${quoteStored(summary.text)}`);
  if (history.length) {
    parts.push(`Earlier in this conversation (oldest first):\n${history.map(renderTurn).join('\n\n')}`);
  }
  if (similar.length) {
    parts.push(
      `Related questions this user asked before, with the SQL that answered them:\n${similar.map(renderTurn).join('\n\n')}`,
    );
  }
  return memoryBlock(parts);
}

/** Clarifications keep their answer but never carry SQL into later queries. */
function renderTurn(turn: HistoryTurn): string {
  const lines = [`Question: ${quoteStored(turn.question)}`];
  if (turn.status === 'ok' && turn.sql_query) {
    lines.push(`SQL: ${quoteStored(turn.sql_query)}`);
    if (turn.tables_used.length) lines.push(`Tables: ${quoteStored(turn.tables_used.join(', '))}`);
  }
  if (turn.answer) lines.push(`Answer: ${quoteStored(cutText(turn.answer, ANSWER_CHARS_IN_CONTEXT))}`);
  return lines.join('\n');
}
