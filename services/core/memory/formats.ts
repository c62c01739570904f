import type { HistoryTurn, SimilarTurn } from '../../model/turns.js';
import { chainAsAnthropic, chainAsOpenAi } from '../sessions/chain-conversion.js';
import { CONTINUATION_INDENT, memoryBlock, quoteStored } from './memory-block.js';
import { ANSWER_CHARS_IN_CONTEXT } from './chat-block.js';
import { normaliseAnthropic, type AnthropicMessage, type OpenAiMessage, type StoredChain } from '../sessions/chains.js';
import { relativeTime } from './relative-time.js';
import { countTokens, cutText } from '../text.js';

export type ContextFormat = 'text' | 'openai' | 'anthropic';

export interface ContextParts {
  question: string;
  format: ContextFormat;
  maxTokens: number;
  now: Date;
  summary: string | null;
  slots: Record<string, unknown>;
  /** Newest first. */
  window: HistoryTurn[];
  /** Most similar first. */
  memories: SimilarTurn[];
}

type Item =
  | { kind: 'history'; turn: HistoryTurn; messages: (AnthropicMessage | OpenAiMessage)[] }
  | { kind: 'summary' }
  | { kind: 'slots' }
  | { kind: 'memory'; memory: SimilarTurn };

/**
 * The context of `POST /memory/context` in the caller's format, within `maxTokens`. In `text` format
 * everything is one prompt block with relative times (the knowledge bot's injection format); in
 * `openai`/`anthropic` the window becomes messages to prepend and the rest a block for the question.
 * Kept first: the latest turn, the slots, the summary, older turns newest first, then memories.
 * Turns are dropped whole, oldest first, so no tool chain is ever cut in half.
 */
export function buildFormattedContext(p: ContextParts) {
  const [latest, ...older] = p.window;
  const candidates: Item[] = [
    ...(latest ? [historyItem(p, latest)] : []),
    ...(Object.keys(p.slots).length ? [{ kind: 'slots' } as const] : []),
    ...(p.summary ? [{ kind: 'summary' } as const] : []),
    ...older.map((turn) => historyItem(p, turn)),
    ...p.memories.map((memory) => ({ kind: 'memory', memory }) as const),
  ];

  // Each item is tokenised once: the selection and the per-part counts of every assembly share it.
  const tokensOf = new Map(candidates.map((item) => [item, itemTokens(p, item)]));
  const kept: Item[] = [];
  let used = countTokens(renderBlock(p, []));
  let truncated = false;
  let historyStopped = false;
  for (const item of candidates) {
    if (item.kind === 'history' && historyStopped) continue;
    const cost = tokensOf.get(item)! + 8;
    if (used + cost <= p.maxTokens) {
      kept.push(item);
      used += cost;
    } else {
      truncated = true;
      // An older turn must not survive a newer one: the window would have a hole.
      if (item.kind === 'history') historyStopped = true;
    }
  }
  let assembled = assemble(p, kept, tokensOf);
  while (kept.length && assembled.tokens.total > p.maxTokens) {
    kept.pop();
    truncated = true;
    assembled = assemble(p, kept, tokensOf);
  }
  return { ...assembled, truncated };
}

function historyItem(p: ContextParts, turn: HistoryTurn): Item {
  return { kind: 'history', turn, messages: p.format === 'text' ? [] : turnMessages(turn, p.format) };
}

function itemTokens(p: ContextParts, item: Item): number {
  if (item.kind === 'history' && p.format !== 'text') return countTokens(JSON.stringify(item.messages));
  return countTokens(renderItem(p, item));
}

function assemble(p: ContextParts, kept: Item[], tokensOf: Map<Item, number>) {
  const history = kept.flatMap((i) => (i.kind === 'history' ? [i] : [])).sort((a, b) => a.turn.turn_number - b.turn.turn_number);
  const memories = kept.flatMap((i) => (i.kind === 'memory' ? [i.memory] : []));
  const summaryKept = kept.some((i) => i.kind === 'summary');
  const slotsKept = kept.some((i) => i.kind === 'slots');
  const inBlock = p.format === 'text' ? kept : kept.filter((i) => i.kind !== 'history');
  const contextText = inBlock.length ? renderBlock(p, inBlock) : '';
  const messages = p.format === 'anthropic'
    ? normaliseAnthropic(history.flatMap((h) => h.messages as AnthropicMessage[]))
    : history.flatMap((h) => h.messages);
  const messageTokens = messages.length ? countTokens(JSON.stringify(messages)) : 0;
  const partTokens = (items: Item[]) => items.reduce((sum, i) => sum + tokensOf.get(i)!, 0);
  return {
    context_text: contextText,
    augmented_question: contextText ? `${contextText}\n\nCurrent question: ${p.question}` : p.question,
    messages,
    history_turns: history.map((h) => h.turn.turn_number),
    summary: summaryKept ? p.summary : null,
    slots: slotsKept ? p.slots : {},
    memories: memories.map((m) => ({
      session_id: m.session_id,
      turn_number: m.turn_number,
      question: m.question,
      answer: m.answer,
      sql_query: m.sql_query,
      tables_used: m.tables_used,
      created_at: m.created_at.toISOString(),
      similarity: Math.round(m.similarity * 10_000) / 10_000,
    })),
    tokens: {
      summary: partTokens(kept.filter((i) => i.kind === 'summary')),
      slots: partTokens(kept.filter((i) => i.kind === 'slots')),
      history: partTokens(history),
      memories: partTokens(kept.filter((i) => i.kind === 'memory')),
      question: countTokens(p.question),
      total: (contextText ? countTokens(contextText) : 0) + messageTokens,
    },
  };
}

/** A stored chain in the asked format, or the question and answer as a two-message exchange. */
function turnMessages(turn: HistoryTurn, format: 'openai' | 'anthropic'): (AnthropicMessage | OpenAiMessage)[] {
  const chain = turn.messages as StoredChain | null;
  if (chain?.format && Array.isArray(chain.messages)) return format === 'anthropic' ? chainAsAnthropic(chain) : chainAsOpenAi(chain);
  const sql = turn.status === 'ok' && turn.sql_query ? `\n\nSQL used:\n${turn.sql_query}` : '';
  return [
    { role: 'user', content: turn.question },
    { role: 'assistant', content: `${turn.answer || '(no answer recorded)'}${sql}` },
  ];
}

function renderBlock(p: ContextParts, items: Item[]): string {
  const parts: string[] = [];
  if (items.some((i) => i.kind === 'summary')) parts.push(renderItem(p, { kind: 'summary' }));
  if (items.some((i) => i.kind === 'slots')) parts.push(renderItem(p, { kind: 'slots' }));
  const history = items.flatMap((i) => (i.kind === 'history' ? [i] : [])).sort((a, b) => a.turn.turn_number - b.turn.turn_number);
  if (history.length) parts.push(`Recent conversation (oldest first):\n${history.map((h) => renderItem(p, h)).join('\n')}`);
  const memories = items.filter((i) => i.kind === 'memory');
  if (memories.length) parts.push(`Related earlier questions (most similar first):\n${memories.map((m) => renderItem(p, m)).join('\n')}`);
  return memoryBlock(parts);
}

function renderItem(p: ContextParts, item: Item): string {
  switch (item.kind) {
    case 'summary':
      return `Summary of earlier conversation:\n${CONTINUATION_INDENT}${quoteStored(p.summary ?? '')}`;
    case 'slots':
      return `Known details (latest value wins):\n${Object.entries(p.slots)
        .map(([k, v]) => `- ${quoteStored(k)}: ${quoteStored(typeof v === 'string' ? v : JSON.stringify(v))}`)
        .join('\n')}`;
    case 'history': {
      const when = `[${relativeTime(item.turn.created_at, p.now)}]`;
      const answer = item.turn.answer ? quoteStored(cutText(item.turn.answer, ANSWER_CHARS_IN_CONTEXT)) : '(no answer recorded)';
      const lines = [`${when} User: ${quoteStored(item.turn.question)}`, `${when} Assistant: ${answer}`];
      if (item.turn.status === 'ok' && item.turn.sql_query) lines.push(`  SQL: ${quoteStored(item.turn.sql_query)}`);
      return lines.join('\n');
    }
    case 'memory': {
      const m = item.memory;
      const lines = [`[${relativeTime(m.created_at, p.now)}] Question: ${quoteStored(m.question)}`];
      if (m.sql_query) lines.push(`  SQL: ${quoteStored(m.sql_query)}`);
      if (m.answer) lines.push(`  Answer: ${quoteStored(cutText(m.answer, ANSWER_CHARS_IN_CONTEXT))}`);
      return lines.join('\n');
    }
  }
}
