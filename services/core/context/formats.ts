import type { HistoryTurn, SimilarTurn } from '../../model/turns.js';
import { chainAsAnthropic, chainAsOpenAi } from '../sessions/chain-conversion.js';
import { type AnthropicMessage, normaliseAnthropic, type OpenAiMessage, type StoredChain } from '../sessions/chains.js';
import { countRecurringTokens, countTokens, countTokensByLine, cutText } from '../text.js';
import { ANSWER_CHARS_IN_CONTEXT } from './chat-block.js';
import { CONTINUATION_INDENT, memoryBlock, quoteStored } from './memory-block.js';
import { historyOf, type MemoryItem, memoryItems, packMemory, similarOf } from './pack.js';
import { relativeTime } from './relative-time.js';

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

type Messages = (AnthropicMessage | OpenAiMessage)[];

/** Separators an item brings with it. */
const ITEM_ALLOWANCE = 8;

/**
 * The context of `POST /memory/context` in the caller's format, within `maxTokens`. In `text` format
 * everything is one prompt block with relative times (the knowledge bot's injection format); in
 * `openai`/`anthropic` the window becomes messages to prepend and the rest a block for the question.
 * The packer keeps the latest turn, the slots, the summary, older turns newest first, then memories;
 * once a turn does not fit no older one follows, so the window has no hole.
 */
export function buildFormattedContext(p: ContextParts) {
  const items = memoryItems({ window: p.window, slots: p.slots, summary: p.summary, similar: p.memories });
  // Each turn is converted and each item tokenised once: the packing and every rendering share them.
  const messagesOf = new Map<HistoryTurn, Messages>(
    p.format === 'text' ? [] : p.window.map((turn) => [turn, turnMessages(turn, p.format as 'openai' | 'anthropic')]),
  );
  const tokensOf = new Map(items.map((item) => [item, itemTokens(p, item, messagesOf)]));
  const { rendered, truncated } = packMemory(items, p.maxTokens, {
    frameTokens: countRecurringTokens(renderBlock(p, [])),
    cost: (item) => tokensOf.get(item)! + ITEM_ALLOWANCE,
    render: (kept) => assemble(p, kept, tokensOf, messagesOf),
    tokens: (assembled) => assembled.tokens.total,
    historyWithoutHoles: true,
  });
  return { ...rendered, truncated };
}

function itemTokens(p: ContextParts, item: MemoryItem, messagesOf: Map<HistoryTurn, Messages>): number {
  if (item.kind === 'history' && p.format !== 'text') return countRecurringTokens(JSON.stringify(messagesOf.get(item.turn)));
  return countRecurringTokens(renderItem(p, item));
}

function assemble(p: ContextParts, kept: MemoryItem[], tokensOf: Map<MemoryItem, number>, messagesOf: Map<HistoryTurn, Messages>) {
  const history = historyOf(kept);
  const memories = similarOf(kept);
  const summaryKept = kept.some((i) => i.kind === 'summary');
  const slotsKept = kept.some((i) => i.kind === 'slots');
  const inBlock = p.format === 'text' ? kept : kept.filter((i) => i.kind !== 'history');
  const contextText = inBlock.length ? renderBlock(p, inBlock) : '';
  const messages =
    p.format === 'anthropic'
      ? normaliseAnthropic(history.flatMap((turn) => messagesOf.get(turn) as AnthropicMessage[]))
      : history.flatMap((turn) => messagesOf.get(turn) ?? []);
  const messageTokens = messages.length ? countTokens(JSON.stringify(messages)) : 0;
  const partTokens = (kind: MemoryItem['kind']) => kept.reduce((sum, i) => sum + (i.kind === kind ? tokensOf.get(i)! : 0), 0);
  return {
    context_text: contextText,
    augmented_question: contextText ? `${contextText}\n\nCurrent question: ${p.question}` : p.question,
    messages,
    history_turns: history.map((turn) => turn.turn_number),
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
      summary: partTokens('summary'),
      slots: partTokens('slots'),
      history: partTokens('history'),
      memories: partTokens('similar'),
      question: countTokens(p.question),
      total: countTokensByLine(contextText) + messageTokens,
    },
  };
}

/** A stored chain in the asked format, or the question and answer as a two-message exchange. */
function turnMessages(turn: HistoryTurn, format: 'openai' | 'anthropic'): Messages {
  const chain = turn.messages as StoredChain | null;
  if (chain?.format && Array.isArray(chain.messages)) return format === 'anthropic' ? chainAsAnthropic(chain) : chainAsOpenAi(chain);
  const sql = turn.status === 'ok' && turn.sql_query ? `\n\nSQL used:\n${turn.sql_query}` : '';
  return [
    { role: 'user', content: turn.question },
    { role: 'assistant', content: `${turn.answer || '(no answer recorded)'}${sql}` },
  ];
}

function renderBlock(p: ContextParts, items: MemoryItem[]): string {
  const parts: string[] = [];
  const summary = items.find((i) => i.kind === 'summary');
  if (summary) parts.push(renderItem(p, summary));
  const slots = items.find((i) => i.kind === 'slots');
  if (slots) parts.push(renderItem(p, slots));
  const history = historyOf(items);
  if (history.length) parts.push(`Recent conversation (oldest first):\n${history.map((turn) => renderTurn(p, turn)).join('\n')}`);
  const memories = similarOf(items);
  if (memories.length) parts.push(`Related earlier questions (most similar first):\n${memories.map((m) => renderMemory(p, m)).join('\n')}`);
  return memoryBlock(parts);
}

function renderItem(p: ContextParts, item: MemoryItem): string {
  switch (item.kind) {
    case 'summary':
      return `Summary of earlier conversation:\n${CONTINUATION_INDENT}${quoteStored(item.text)}`;
    case 'slots':
      return `Known details (latest value wins):\n${Object.entries(item.slots)
        .map(([k, v]) => `- ${quoteStored(k)}: ${quoteStored(typeof v === 'string' ? v : JSON.stringify(v))}`)
        .join('\n')}`;
    case 'history':
      return renderTurn(p, item.turn);
    case 'similar':
      return renderMemory(p, item.turn);
    // The memory API's context recalls no verified pairs (they are /memoryChat's, for its answerer).
    case 'pair':
      return '';
  }
}

function renderTurn(p: ContextParts, turn: HistoryTurn): string {
  const when = `[${relativeTime(turn.created_at, p.now)}]`;
  const answer = turn.answer ? quoteStored(cutText(turn.answer, ANSWER_CHARS_IN_CONTEXT)) : '(no answer recorded)';
  const lines = [`${when} User: ${quoteStored(turn.question)}`, `${when} Assistant: ${answer}`];
  if (turn.status === 'ok' && turn.sql_query) lines.push(`  SQL: ${quoteStored(turn.sql_query)}`);
  return lines.join('\n');
}

function renderMemory(p: ContextParts, m: SimilarTurn): string {
  const lines = [`[${relativeTime(m.created_at, p.now)}] Question: ${quoteStored(m.question)}`];
  if (m.sql_query) lines.push(`  SQL: ${quoteStored(m.sql_query)}`);
  if (m.answer) lines.push(`  Answer: ${quoteStored(cutText(m.answer, ANSWER_CHARS_IN_CONTEXT))}`);
  return lines.join('\n');
}
