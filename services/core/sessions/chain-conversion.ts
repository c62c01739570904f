import { type AnthropicMessage, type Block, blocksOf, normaliseAnthropic, type OpenAiMessage, type StoredChain } from './chains.js';

/**
 * Replays stored chains in the format a caller asks for: a recipe bot storing Anthropic chains may
 * read its context as OpenAI messages and the other way round. System prompts are not history, so
 * they are dropped; tool calls stay paired with their results.
 */
export function chainAsAnthropic(chain: StoredChain): AnthropicMessage[] {
  if (chain.format === 'anthropic') return chain.messages as AnthropicMessage[];
  const out: AnthropicMessage[] = [];
  for (const m of chain.messages as OpenAiMessage[]) {
    if (m.role === 'system' || m.role === 'developer') continue;
    if (m.role === 'tool') {
      out.push({ role: 'user', content: [{ type: 'tool_result', tool_use_id: m.tool_call_id ?? '', content: textOfParts(m.content) }] });
    } else if (m.role === 'assistant') {
      const blocks: Block[] = [];
      const text = textOfParts(m.content);
      if (text) blocks.push({ type: 'text', text });
      for (const call of m.tool_calls ?? []) {
        blocks.push({ type: 'tool_use', id: call.id, name: call.function.name, input: parseArguments(call.function.arguments) });
      }
      out.push({ role: 'assistant', content: blocks.length ? blocks : [{ type: 'text', text: '(no content)' }] });
    } else {
      out.push({ role: 'user', content: typeof m.content === 'string' ? m.content : (m.content ?? []).map(openAiPartAsBlock) });
    }
  }
  return normaliseAnthropic(out);
}

export function chainAsOpenAi(chain: StoredChain): OpenAiMessage[] {
  if (chain.format === 'openai') {
    return (chain.messages as OpenAiMessage[]).filter((m) => m.role !== 'system' && m.role !== 'developer');
  }
  const out: OpenAiMessage[] = [];
  for (const m of chain.messages as AnthropicMessage[]) {
    const blocks = blocksOf(m.content);
    if (m.role === 'assistant') {
      const text = blocks
        .filter((b) => b.type === 'text')
        .map((b) => String(b.text))
        .join('\n');
      const calls = blocks
        .filter((b) => b.type === 'tool_use')
        .map((b) => ({
          id: String(b.id),
          type: 'function' as const,
          function: { name: String(b.name), arguments: JSON.stringify(b.input ?? {}) },
        }));
      out.push({
        role: 'assistant',
        content: text || (calls.length ? null : '(no content)'),
        ...(calls.length ? { tool_calls: calls } : {}),
      });
      continue;
    }
    // Tool results answer the calls first, as the Chat Completions API requires; any other content follows.
    for (const b of blocks.filter((b) => b.type === 'tool_result')) {
      out.push({
        role: 'tool',
        tool_call_id: String(b.tool_use_id),
        content: textOfParts(b.content as string | Block[] | undefined) || '(empty result)',
      });
    }
    const rest = blocks.filter((b) => b.type !== 'tool_result').map(blockAsOpenAiPart);
    if (rest.length) {
      out.push({ role: 'user', content: rest.every((p) => p.type === 'text') ? rest.map((p) => String(p.text)).join('\n') : rest });
    }
  }
  return out;
}

function openAiPartAsBlock(part: Block): Block {
  if (part.type === 'text') return { type: 'text', text: String(part.text) };
  if (part.type === 'image_url') {
    return { type: 'image', source: { type: 'url', url: String((part.image_url as { url?: string })?.url ?? '') } };
  }
  return { type: 'text', text: `[${part.type}]` };
}

function blockAsOpenAiPart(block: Block): Block {
  if (block.type === 'text') return { type: 'text', text: String(block.text) };
  const source = block.source as { type?: string; url?: string } | undefined;
  if (block.type === 'image' && source?.type === 'url') return { type: 'image_url', image_url: { url: source.url } };
  return { type: 'text', text: `[${block.type}]` };
}

/** The text of string content or of text parts; binary parts were already placeholders. */
export function textOfParts(content: string | Block[] | null | undefined): string {
  if (typeof content === 'string') return content;
  return (content ?? [])
    .map((p) => (p.type === 'text' ? String(p.text) : p.type === 'refusal' ? String(p.refusal) : `[${p.type}]`))
    .join('\n');
}

function parseArguments(args: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(args);
    return value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : { value };
  } catch {
    // Models sometimes emit malformed JSON; keep it rather than lose the call.
    return { arguments: args };
  }
}
