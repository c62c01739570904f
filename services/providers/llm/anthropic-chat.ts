import Anthropic from '@anthropic-ai/sdk';
import type { ChatLlm } from './chat-llm.js';

export function createAnthropicChat(options: { apiKey: string; baseURL?: string; model: string; timeoutMs: number }): ChatLlm {
  const client = new Anthropic({ apiKey: options.apiKey, baseURL: options.baseURL, timeout: options.timeoutMs, maxRetries: 1 });
  return {
    name: `anthropic:${options.model}`,
    async complete({ system, user, maxTokens }) {
      const response = await client.messages.create({
        model: options.model,
        max_tokens: maxTokens,
        system,
        messages: [{ role: 'user', content: user }],
      });
      return response.content
        .flatMap((block) => (block.type === 'text' ? [block.text] : []))
        .join('')
        .trim();
    },
  };
}
