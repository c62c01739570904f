import type Anthropic from '@anthropic-ai/sdk';
import type { ClientOptions as AnthropicOptions } from '@anthropic-ai/sdk';
import type OpenAI from 'openai';
import type { ClientOptions as OpenAIOptions } from 'openai';

/**
 * The vendor SDKs are loaded on first use, not at start: together they hold ~12 MB of a process that
 * is configured without an LLM or embedding API (docs/performance.md, memory).
 */
export function openAIClient(options: OpenAIOptions): () => Promise<OpenAI> {
  let client: Promise<OpenAI> | undefined;
  return () => {
    client ??= import('openai').then(({ default: SDK }) => new SDK(options));
    return client;
  };
}

export function anthropicClient(options: AnthropicOptions): () => Promise<Anthropic> {
  let client: Promise<Anthropic> | undefined;
  return () => {
    client ??= import('@anthropic-ai/sdk').then(({ default: SDK }) => new SDK(options));
    return client;
  };
}
