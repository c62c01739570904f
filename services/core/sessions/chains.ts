import { AppError, type FieldError } from '../../model/errors.js';

/**
 * A turn's message chain (docs/design.md §6): user → assistant with tool calls → tool results → … → final
 * answer, in Anthropic Messages or OpenAI Chat Completions form. Binary content is replaced by text
 * placeholders before storage, and the chain is checked so that replaying it is valid for its API.
 */
export type ChainFormat = 'anthropic' | 'openai';

export type Block = Record<string, unknown> & { type: string };

export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | Block[];
}

export interface OpenAiToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export interface OpenAiMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | Block[] | null;
  tool_calls?: OpenAiToolCall[];
  tool_call_id?: string;
  name?: string;
}

/** What the `messages` column holds. */
export interface StoredChain {
  format: ChainFormat;
  messages: AnthropicMessage[] | OpenAiMessage[];
}

export const IMAGE_PLACEHOLDER = '[image: photo]';

const OPENAI_ONLY_ROLES = new Set(['system', 'developer', 'tool']);
const OPENAI_ONLY_PARTS = new Set(['image_url', 'input_audio', 'file', 'refusal']);
const ANTHROPIC_ONLY_BLOCKS = new Set(['tool_use', 'tool_result', 'image', 'document', 'thinking', 'redacted_thinking']);

/** Validates and sanitises a chain; throws `invalid-message-chain` naming each problem. */
export function prepareMessageChain(messages: unknown[], declared?: ChainFormat): StoredChain {
  const format = declared ?? detectFormat(messages);
  if (format === 'anthropic') {
    const sanitised = normaliseAnthropic((messages as AnthropicMessage[]).map(sanitiseAnthropicMessage));
    failOn(anthropicChainErrors(sanitised));
    return { format, messages: sanitised };
  }
  const sanitised = (messages as OpenAiMessage[]).map(sanitiseOpenAiMessage);
  failOn(openAiChainErrors(sanitised));
  return { format, messages: sanitised };
}

function failOn(errors: FieldError[]) {
  if (errors.length) {
    throw new AppError('invalid-message-chain', errors.map((e) => `${e.field}: ${e.message}`).join('; '), { errors });
  }
}

/** Plain-text chains look the same in both formats; they are stored as Anthropic. */
export function detectFormat(messages: unknown[]): ChainFormat {
  let openai = false;
  let anthropic = false;
  for (const m of messages as OpenAiMessage[]) {
    if (OPENAI_ONLY_ROLES.has(m.role) || m.tool_calls !== undefined || m.content === null) openai = true;
    if (Array.isArray(m.content)) {
      for (const block of m.content) {
        if (OPENAI_ONLY_PARTS.has(block.type)) openai = true;
        if (ANTHROPIC_ONLY_BLOCKS.has(block.type)) anthropic = true;
      }
    }
  }
  if (openai && anthropic) {
    failOn([
      { field: 'body.messages', message: 'mixes Anthropic content blocks with OpenAI roles or parts; send one format (messages_format)' },
    ]);
  }
  return openai ? 'openai' : 'anthropic';
}

// ---- sanitising: binary content out, text placeholders in ----

function sanitiseAnthropicBlock(block: Block): Block {
  const source = block.source as { type?: string; media_type?: string } | undefined;
  if (block.type === 'image' && source?.type === 'base64') return { type: 'text', text: IMAGE_PLACEHOLDER };
  if (block.type === 'document' && source?.type === 'base64') {
    return { type: 'text', text: `[document: ${source.media_type ?? 'file'}]` };
  }
  if (block.type === 'tool_result' && Array.isArray(block.content)) {
    return { ...block, content: (block.content as Block[]).map(sanitiseAnthropicBlock) };
  }
  return block;
}

function sanitiseAnthropicMessage(m: AnthropicMessage): AnthropicMessage {
  return typeof m.content === 'string'
    ? { role: m.role, content: m.content }
    : { role: m.role, content: m.content.map(sanitiseAnthropicBlock) };
}

function sanitiseOpenAiPart(part: Block): Block {
  if (part.type === 'image_url') {
    const url = (part.image_url as { url?: string } | undefined)?.url ?? '';
    return url.startsWith('data:') ? { type: 'text', text: IMAGE_PLACEHOLDER } : part;
  }
  if (part.type === 'input_audio') {
    const format = (part.input_audio as { format?: string } | undefined)?.format;
    return { type: 'text', text: `[audio${format ? `: ${format}` : ''}]` };
  }
  if (part.type === 'file') {
    const file = part.file as { file_data?: string; filename?: string } | undefined;
    if (file?.file_data) return { type: 'text', text: `[file: ${file.filename ?? 'attachment'}]` };
  }
  return part;
}

function sanitiseOpenAiMessage(m: OpenAiMessage): OpenAiMessage {
  return Array.isArray(m.content) ? { ...m, content: m.content.map(sanitiseOpenAiPart) } : { ...m };
}

// ---- Anthropic rules ----

export function blocksOf(content: string | Block[]): Block[] {
  return typeof content === 'string' ? (content ? [{ type: 'text', text: content }] : []) : content;
}

/**
 * Merges consecutive messages of one role (the API requires alternation) and puts tool_result
 * blocks first in a user message, where the API expects them.
 */
export function normaliseAnthropic(messages: AnthropicMessage[]): AnthropicMessage[] {
  const out: AnthropicMessage[] = [];
  for (const m of messages) {
    const last = out.at(-1);
    if (last && last.role === m.role) last.content = [...blocksOf(last.content), ...blocksOf(m.content)];
    else out.push({ role: m.role, content: typeof m.content === 'string' ? m.content : [...m.content] });
  }
  for (const m of out) {
    if (m.role === 'user' && Array.isArray(m.content)) {
      m.content = [...m.content.filter((b) => b.type === 'tool_result'), ...m.content.filter((b) => b.type !== 'tool_result')];
    }
  }
  return out;
}

export function anthropicChainErrors(messages: AnthropicMessage[]): FieldError[] {
  const errors: FieldError[] = [];
  const at = (i: number) => `body.messages[${i}]`;
  if (messages[0]?.role !== 'user') errors.push({ field: at(0), message: 'a turn starts with a user message' });
  const seen = new Set<string>();
  messages.forEach((m, i) => {
    const blocks = blocksOf(m.content);
    const toolUses = blocks.filter((b) => b.type === 'tool_use').map((b) => String(b.id));
    const results = blocks.filter((b) => b.type === 'tool_result').map((b) => String(b.tool_use_id));
    if (m.role === 'assistant' && results.length) errors.push({ field: at(i), message: 'tool_result blocks belong in a user message' });
    if (m.role === 'user' && toolUses.length) errors.push({ field: at(i), message: 'tool_use blocks belong in an assistant message' });
    for (const id of toolUses) {
      if (seen.has(id)) errors.push({ field: at(i), message: `tool_use id "${id}" is used twice` });
      seen.add(id);
    }
    if (m.role === 'assistant' && toolUses.length) {
      const next = messages[i + 1];
      const answered = new Set(
        next
          ? blocksOf(next.content)
              .filter((b) => b.type === 'tool_result')
              .map((b) => String(b.tool_use_id))
          : [],
      );
      for (const id of toolUses) {
        if (!answered.has(id)) errors.push({ field: at(i), message: `tool_use "${id}" has no tool_result in the next message` });
      }
    }
    if (m.role === 'user' && results.length) {
      const prev = messages[i - 1];
      const asked = new Set(
        prev
          ? blocksOf(prev.content)
              .filter((b) => b.type === 'tool_use')
              .map((b) => String(b.id))
          : [],
      );
      for (const id of results) {
        if (!asked.has(id)) errors.push({ field: at(i), message: `tool_result for "${id}" has no tool_use in the previous message` });
      }
    }
    if (!blocks.length) errors.push({ field: at(i), message: 'content is empty' });
  });
  const last = messages.at(-1);
  if (last && last.role !== 'assistant') {
    errors.push({ field: at(messages.length - 1), message: "a turn ends with the assistant's final answer" });
  }
  return errors;
}

// ---- OpenAI rules ----

export function openAiChainErrors(messages: OpenAiMessage[]): FieldError[] {
  const errors: FieldError[] = [];
  const at = (i: number) => `body.messages[${i}]`;
  const conversation = messages.map((m, i) => ({ m, i })).filter(({ m }) => m.role !== 'system' && m.role !== 'developer');
  if (conversation[0]?.m.role !== 'user') errors.push({ field: at(conversation[0]?.i ?? 0), message: 'a turn starts with a user message' });
  const seen = new Set<string>();
  let pending = new Set<string>();
  let pendingAt = -1;
  for (const { m, i } of conversation) {
    if (m.role === 'tool') {
      if (!m.tool_call_id || !pending.delete(m.tool_call_id)) {
        errors.push({
          field: at(i),
          message: `tool message for "${m.tool_call_id ?? ''}" answers no tool_call of the preceding assistant message`,
        });
      }
      continue;
    }
    for (const id of pending) errors.push({ field: at(pendingAt), message: `tool_call "${id}" has no tool message after it` });
    pending = new Set();
    if (m.role === 'assistant' && m.tool_calls?.length) {
      for (const call of m.tool_calls) {
        if (seen.has(call.id)) errors.push({ field: at(i), message: `tool_call id "${call.id}" is used twice` });
        seen.add(call.id);
        pending.add(call.id);
      }
      pendingAt = i;
    }
  }
  for (const id of pending) errors.push({ field: at(pendingAt), message: `tool_call "${id}" has no tool message after it` });
  const last = conversation.at(-1)?.m;
  if (last && (last.role !== 'assistant' || last.tool_calls?.length)) {
    errors.push({ field: at(messages.length - 1), message: "a turn ends with the assistant's final answer" });
  }
  return errors;
}
